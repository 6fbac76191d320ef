"""docs/method.md: the test vectors, worked example, invariants as properties."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.method import advantage
from grading.method.advantage import (
    DEFAULT_MAPPING,
    MappingSpec,
    band_factors,
    baseline_advantages,
    group_summary,
    redistribute,
    redistribute_group,
)
from tests.helpers.vendored import VECTORS as FIXTURE_VECTORS

TOL = 1e-9
VECTORS = FIXTURE_VECTORS / "redistribution.jsonl"
CASES = [json.loads(line) for line in VECTORS.read_text().splitlines() if line.strip()]


def frame_of(groups: list[dict]) -> pd.DataFrame:
    """Long table from per-group dicts with rewards/cheats/tiers/ranks/graded."""
    parts = []
    for gid, g in enumerate(groups):
        n = len(g["rewards"])
        parts.append(
            pd.DataFrame(
                {
                    "group": g.get("group", gid),
                    "index": range(n),
                    "reward": g["rewards"],
                    "cheat": g.get("cheats", [False] * n),
                    "tier": pd.Series(g.get("tiers", [None] * n), dtype=object),
                    "rank": pd.Series(g.get("ranks", [None] * n), dtype=object),
                    "graded": g.get("graded", True),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def assert_matches_vector(out: pd.DataFrame, expected: dict) -> None:
    pairs = {
        "reward_used": "reward",
        "advantage": "advantage",
        "factor": "factor",
        "redistributed_advantage": "redistributed_advantage",
        "discount_only_advantage": "discount_only_advantage",
    }
    for column, key in pairs.items():
        np.testing.assert_allclose(out[column].to_numpy(), expected[key], rtol=0, atol=TOL, err_msg=column)
    np.testing.assert_allclose(out["lambda"].to_numpy(), expected["lambda"], rtol=0, atol=TOL)
    assert set(out["status"]) == {expected["status"]}


# --- test vectors (tests/fixtures/vectors) -------------------------------------------------------------------


def test_vector_file_has_every_case():
    assert len(CASES) == 301


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"case{c['case']}")
def test_vector_case(case):
    inp = case["input"]
    out = redistribute(frame_of([inp]), baseline=inp["baseline"])
    assert_matches_vector(out, case["expected"])


@pytest.mark.parametrize("baseline", ["mean", "loo", "grpo"])
def test_all_vector_cases_in_one_table(baseline):
    # One frame holding every case of a baseline, rows interleaved: vectorised
    # grouping must not let one group's numbers leak into another's.
    cases = [c for c in CASES if c["input"]["baseline"] == baseline]
    assert cases
    table = frame_of([dict(c["input"], group=f"case-{c['case']}") for c in cases])
    table = table.sample(frac=1.0, random_state=7)
    out = redistribute(table, baseline=baseline)
    for c in cases:
        rows = out[out["group"] == f"case-{c['case']}"].sort_values("index")
        assert_matches_vector(rows, c["expected"])


# --- worked example and doctest -------------------------------------------------------


def test_worked_example():
    result = redistribute_group([1, 1, 1, 0, 0, 0], tiers=["T1", "T2", "T3", None, None, None], ranks=[1, 2, 3, None, None, None])
    assert result.status == "graded"
    np.testing.assert_allclose(result.advantage, [0.5, 0.5, 0.5, -0.5, -0.5, -0.5], atol=TOL, rtol=0)
    np.testing.assert_allclose(result.factor, [1.0, 0.85, 0.5, 1.0, 1.0, 1.0], atol=TOL, rtol=0)
    assert result.s_plus == pytest.approx(1.5, abs=TOL)
    assert result.sum_f_a == pytest.approx(1.175, abs=TOL)
    assert result.lambda_ == pytest.approx(1.5 / 1.175, abs=TOL)
    expected = [1.5 / 1.175 * f * 0.5 for f in (1.0, 0.85, 0.5)] + [-0.5] * 3
    np.testing.assert_allclose(result.redistributed_advantage, expected, atol=TOL, rtol=0)
    np.testing.assert_allclose(result.redistributed_advantage[:3], [0.638298, 0.542553, 0.319149], atol=1e-6)
    np.testing.assert_allclose(result.discount_only_advantage, [0.5, 0.425, 0.25, -0.5, -0.5, -0.5], atol=TOL)
    assert result.dropped_credit == pytest.approx(0.325, abs=TOL)


def test_module_docstring_example_runs():
    failed, attempted = doctest.testmod(advantage, raise_on_error=False)
    assert attempted > 0 and failed == 0


# --- invariants of docs/method.md section 4 as properties ------------------------------------


@st.composite
def groups(draw, min_size=2, max_size=64):
    n = draw(st.integers(min_size, max_size))
    pass_rate = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rewards = (rng.random(n) < pass_rate).astype(int)
    cheats = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.5]))
    # Few distinct ranks means many ties; the grader also tiers cheats before flagging.
    tier_pool = draw(st.sampled_from([("T1",), ("T2",), ("T1", "T2", "T3"), ("T2", "T3")]))
    max_rank = draw(st.integers(1, n))
    tiers = [str(rng.choice(tier_pool)) if r else None for r in rewards]
    ranks = [int(rng.integers(1, max_rank + 1)) if r else None for r in rewards]
    graded = draw(st.sampled_from([True, True, True, False]))
    return {"rewards": rewards.tolist(), "cheats": cheats.tolist(), "tiers": tiers, "ranks": ranks, "graded": graded}


tables = st.lists(groups(), min_size=1, max_size=4)
baselines = st.sampled_from(["mean", "loo", "grpo"])
PROPERTY = settings(deadline=None, max_examples=150)


def per_group(out: pd.DataFrame):
    return [rows for _, rows in out.groupby("group", sort=False)]


@PROPERTY
@given(tables, baselines)
def test_credit_preserved_failing_untouched_ratios_kept(table, baseline):
    out = redistribute(frame_of(table), baseline=baseline)
    for rows in per_group(out):
        passing, failing = rows[rows["passed"]], rows[~rows["passed"]]
        a, a_star, f = (passing[c].to_numpy() for c in ("advantage", "redistributed_advantage", "factor"))
        # 1. total positive credit unchanged
        assert abs(a_star.sum() - a.sum()) < TOL
        # 2. failing rollouts keep their baseline advantage, factor 1
        assert (failing["redistributed_advantage"] == failing["advantage"]).all()
        assert (failing["factor"] == 1.0).all()
        # 3. preference ratios kept: A*_i f_j == A*_j f_i
        assert np.abs(np.outer(a_star, f) - np.outer(f, a_star)).max(initial=0.0) < TOL
        # the group as a whole is redistributed, not created or destroyed
        assert abs(rows["redistributed_advantage"].sum() - rows["advantage"].sum()) < TOL
        assert ((f > 0) & (f <= 1)).all()


@PROPERTY
@given(tables, baselines)
def test_status_rules(table, baseline):
    out = redistribute(frame_of(table), baseline=baseline)
    for spec, (_, rows) in zip(table, out.groupby("group", sort=True)):
        used = np.where(spec["cheats"], 0, spec["rewards"])
        assert (rows["reward_used"].to_numpy() == used).all()
        mixed = 0 < used.mean() < 1
        status = rows["status"].iloc[0]
        assert (rows["status"] == status).all()
        assert status == ("filtered" if not mixed else "graded" if spec["graded"] else "fallback")
        if status != "graded":
            assert (rows["factor"] == 1.0).all() and (rows["lambda"] == 1.0).all()
            assert (rows["redistributed_advantage"] == rows["advantage"]).all()
        if status == "filtered":
            assert (rows["advantage"] == 0.0).all()
        else:
            expected = baseline_advantages(used, baseline)
            np.testing.assert_allclose(rows["advantage"], expected, rtol=0, atol=TOL)


@PROPERTY
@given(tables, baselines)
def test_one_pass_or_equal_factors_leave_advantages_exactly(table, baseline):
    out = redistribute(frame_of(table), baseline=baseline)
    for rows in per_group(out):
        f = rows.loc[rows["passed"], "factor"]
        if rows["status"].iloc[0] == "graded" and f.nunique() == 1:
            # 4. exactly, not merely to rounding
            assert (rows["redistributed_advantage"] == rows["advantage"]).all()


@PROPERTY
@given(tables)
def test_mean_baseline_closed_form(table):
    out = redistribute(frame_of(table), baseline="mean")
    for rows in per_group(out):
        if rows["status"].iloc[0] != "graded":
            continue
        passing = rows[rows["passed"]]
        r_bar = rows["reward_used"].mean()
        f = passing["factor"].to_numpy()
        # 5. A*_i = (1 - R̄) f_i / f̄
        np.testing.assert_allclose(passing["redistributed_advantage"], (1 - r_bar) * f / f.mean(), rtol=0, atol=TOL)
        assert abs(rows["advantage"].sum()) < TOL


@PROPERTY
@given(tables, baselines, st.randoms(use_true_random=False))
def test_many_groups_at_once_equal_one_at_a_time(table, baseline, random):
    together = frame_of(table)
    order = list(range(len(together)))
    random.shuffle(order)
    shuffled = redistribute(together.iloc[order], baseline=baseline).sort_index()
    for gid, spec in enumerate(table):
        alone = redistribute(frame_of([spec]), baseline=baseline)
        rows = shuffled[shuffled["group"] == gid]
        for column in ("advantage", "factor", "lambda", "redistributed_advantage", "discount_only_advantage"):
            np.testing.assert_allclose(rows[column], alone[column], rtol=0, atol=TOL, err_msg=column)
        assert (rows["status"].to_numpy() == alone["status"].to_numpy()).all()


@PROPERTY
@given(tables, baselines)
def test_discount_only_and_summary(table, baseline):
    out = redistribute(frame_of(table), baseline=baseline)
    summary = group_summary(out)
    assert list(summary["group"]) == list(range(len(table)))
    for (_, s), rows in zip(summary.iterrows(), per_group(out)):
        passing = rows[rows["passed"]]
        a, f = passing["advantage"].to_numpy(), passing["factor"].to_numpy()
        discounted = rows["discount_only_advantage"].to_numpy()
        np.testing.assert_allclose(discounted, rows["factor"] * rows["advantage"], rtol=0, atol=TOL)
        assert s["n"] == len(rows) and s["n_passed"] == len(passing)
        assert s["status"] == rows["status"].iloc[0] and s["mixed"] == (s["status"] != "filtered")
        assert abs(s["s_plus"] - a.sum()) < TOL
        assert abs(s["sum_f_a"] - (f * a).sum()) < TOL
        # the credit discount-only drops is exactly what redistribution gives back
        assert abs(s["dropped_credit"] - (a.sum() - passing["discount_only_advantage"].sum())) < TOL
        assert abs(s["positive_credit_before"] - s["positive_credit_after"]) < TOL
        assert abs(s["positive_credit_before"] - a.sum()) < TOL  # passes carry all positive credit


# --- degenerate groups ------------------------------------------------------------------


@pytest.mark.parametrize("baseline", ["mean", "loo", "grpo"])
def test_single_pass_keeps_its_advantage(baseline):
    result = redistribute_group([0, 1, 0, 0], tiers=[None, "T3", None, None], ranks=[None, 1, None, None], baseline=baseline)
    assert result.status == "graded"
    assert result.factor[1] == 0.5
    assert result.lambda_ == pytest.approx(2.0)
    assert (result.redistributed_advantage == result.advantage).all()
    assert result.dropped_credit == pytest.approx(0.5 * result.advantage[1])


def test_all_factors_equal_keeps_advantages():
    result = redistribute_group([1, 1, 1, 0], tiers=["T2", "T2", "T2", None], ranks=[3, 3, 3, None])
    assert result.factor[:3].tolist() == [0.85] * 3  # one distinct rank: hi of the band
    assert (result.redistributed_advantage == result.advantage).all()


# lambda * f * A misses A by one ulp in these groups; invariant 4 asks for A itself.
@pytest.mark.parametrize(
    "rewards, baseline, tier_value",
    [([1, 0, 0, 0], "mean", 0.7), ([1, 0, 0, 0], "mean", 0.8), ([1, 1, 1, 0], "loo", 0.85), ([1, 0], "grpo", 0.7)],
)
def test_equal_factors_keep_advantages_bit_for_bit(rewards, baseline, tier_value):
    mapping = MappingSpec(t2=(tier_value, tier_value))
    tiers = ["T2" if r else None for r in rewards]
    ranks = [1 if r else None for r in rewards]
    result = redistribute_group(rewards, tiers=tiers, ranks=ranks, mapping=mapping, baseline=baseline)
    assert result.status == "graded"
    assert result.redistributed_advantage.tolist() == result.advantage.tolist()


@pytest.mark.parametrize("baseline", ["mean", "loo", "grpo"])
@pytest.mark.parametrize(
    "rewards, cheats",
    [([1, 1, 1], [False] * 3), ([0, 0, 0], [False] * 3), ([1, 1, 0], [True, True, False]), ([1], [False])],
    ids=["all-pass", "all-fail", "all-passes-cheat", "single-rollout"],
)
def test_unmixed_groups_are_filtered(rewards, cheats, baseline):
    n = len(rewards)
    result = redistribute_group(rewards, cheats=cheats, tiers=["T1"] * n, ranks=[1] * n, baseline=baseline)
    assert result.status == "filtered"
    assert result.advantage.tolist() == [0.0] * n
    assert result.redistributed_advantage.tolist() == [0.0] * n
    assert result.factor.tolist() == [1.0] * n and result.lambda_ == 1.0


def test_cheat_counts_as_failing_and_stats_are_recomputed():
    result = redistribute_group(
        [1, 1, 1, 0], cheats=[False, True, False, False], tiers=["T1", "T1", "T3", None], ranks=[1, 1, 2, None]
    )
    assert result.reward.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert result.advantage.tolist() == [0.5, -0.5, 0.5, -0.5]
    assert result.factor.tolist() == [1.0, 1.0, 0.5, 1.0]
    assert result.redistributed_advantage[1] == -0.5


def test_band_spreads_distinct_ranks_and_ties_share_a_factor():
    factors = band_factors(["T2", "T2", "T2", "T2", "T1", None], [2, 4, 4, 9, 1, None])
    np.testing.assert_allclose(factors, [0.85, 0.775, 0.775, 0.70, 1.0, 1.0], rtol=0, atol=TOL)


def test_missing_verdict_falls_back():
    result = redistribute_group([1, 1, 0], tiers=["T1", "T3", None], ranks=[1, 2, None], graded=False)
    assert result.status == "fallback"
    assert result.factor.tolist() == [1.0] * 3 and result.lambda_ == 1.0
    assert (result.redistributed_advantage == result.advantage).all()


@pytest.mark.parametrize("tiers, ranks", [(["T1", None, None], [1, None, None]), (["T1", "T3", None], [1, None, None])])
def test_passing_rollout_skipped_by_grader_makes_group_fall_back(tiers, ranks):
    result = redistribute_group([1, 1, 0], tiers=tiers, ranks=ranks, graded=True)
    assert result.status == "fallback"
    assert result.advantage.tolist() == pytest.approx([1 / 3, 1 / 3, -2 / 3])
    assert (result.redistributed_advantage == result.advantage).all()


def test_loo_and_grpo_values():
    np.testing.assert_allclose(baseline_advantages([1, 0, 0, 0], "loo"), [1.0, -1 / 3, -1 / 3, -1 / 3])
    np.testing.assert_allclose(baseline_advantages([1, 0, 0, 0], "grpo"), np.array([0.75, -0.25, -0.25, -0.25]) / (0.5 + 1e-6))
    assert baseline_advantages([1], "loo").tolist() == [0.0]
    assert baseline_advantages([1], "grpo").tolist() == [0.0]


def test_output_keeps_rows_order_index_and_extra_columns():
    table = frame_of(
        [
            {"rewards": [1, 0], "tiers": ["T2", None], "ranks": [1, None]},
            {"rewards": [0, 1, 1], "tiers": [None, "T1", "T3"], "ranks": [None, 1, 2]},
        ]
    )
    table.index = [10, 3, 7, 1, 5]
    table["note"] = list("abcde")
    out = redistribute(table)
    assert list(out.index) == [10, 3, 7, 1, 5] and list(out["note"]) == list("abcde")
    assert "advantage" not in table.columns  # input untouched
    assert list(out.columns[-8:]) == list(advantage.OUTPUT_COLUMNS)


# --- mappings and input validation ------------------------------------------------------


def test_mapping_round_trip_and_custom_band():
    assert DEFAULT_MAPPING.to_dict() == {"T1": [1.0, 1.0], "T2": [0.85, 0.70], "T3": [0.5, 0.5]}
    spec = MappingSpec.from_dict({"T1": [1, 1], "T2": [0.9, 0.6], "T3": 0.4})
    assert MappingSpec.from_dict(spec.to_dict()) == spec and spec.t3 == (0.4, 0.4)
    np.testing.assert_allclose(band_factors(["T2", "T2", "T2"], [1, 2, 3], spec), [0.9, 0.75, 0.6])
    result = redistribute_group([1, 1, 0], tiers=["T1", "T3", None], ranks=[1, 2, None], mapping=spec)
    assert result.factor.tolist() == [1.0, 0.4, 1.0]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"T1": [1, 1], "T2": [0.7, 0.85], "T3": [0.5, 0.5]}, "0 < lo <= hi <= 1"),
        ({"T1": [1.2, 1], "T2": [0.85, 0.7], "T3": [0.5, 0.5]}, "0 < lo <= hi <= 1"),
        ({"T1": [1, 1], "T2": [0.85, 0.7], "T3": [0.5, 0]}, "0 < lo <= hi <= 1"),
        ({"T1": [1, 1], "T2": [0.85, float("nan")], "T3": [0.5, 0.5]}, "0 < lo <= hi <= 1"),
        ({"T1": [1, 1], "T2": [0.85, 0.7]}, "exactly the tiers"),
        ({"T1": [1, 1], "T2": [0.85, 0.7], "T3": [0.5, 0.5], "T4": [0.1, 0.1]}, "exactly the tiers"),
        ({"T1": [1, 1, 1], "T2": [0.85, 0.7], "T3": [0.5, 0.5]}, "two numbers"),
        ({"T1": "high", "T2": [0.85, 0.7], "T3": [0.5, 0.5]}, "two numbers"),
    ],
)
def test_mapping_rejects_bad_bands(data, message):
    with pytest.raises(ValueError, match=message):
        MappingSpec.from_dict(data)


def test_bad_input_is_refused():
    good = {"rewards": [1, 0], "tiers": ["T1", None], "ranks": [1, None]}
    with pytest.raises(ValueError, match="baseline"):
        redistribute(frame_of([good]), baseline="median")
    with pytest.raises(ValueError, match="lacks columns: tier"):
        redistribute(frame_of([good]).drop(columns="tier"))
    with pytest.raises(ValueError, match="binary"):
        redistribute(frame_of([dict(good, rewards=[0.5, 0])]))
    with pytest.raises(ValueError, match="Unknown tier"):
        redistribute(frame_of([dict(good, tiers=["T9", None])]))
    mixed_flags = frame_of([good])
    mixed_flags["graded"] = [True, False]
    with pytest.raises(ValueError, match="same on every row"):
        redistribute(mixed_flags)


@PROPERTY
@given(tables, st.sampled_from([100, 1000]), st.sampled_from([1.0, 0.5]))
def test_band_rule_depends_only_on_rank_order(table, shift, scale):
    """Ranks 1..64 and any other ranks (shifted past 64, or fractional) give the same factors:
    docs/method.md §3 uses only the order of a tier's distinct ranks."""
    frame = frame_of(table)
    moved = frame.assign(rank=frame["rank"] * scale + shift)
    plain, shifted = redistribute(frame), redistribute(moved)
    # Ranks 1..21 take the bit words, the others the sort: the same factors give the same
    # sums, lambdas and choice of which groups to rescale, so every number is equal bit for bit.
    for column in ("factor", "lambda", "redistributed_advantage", "discount_only_advantage", "status"):
        assert plain[column].tolist() == shifted[column].tolist(), column


@PROPERTY
@given(tables, baselines)
def test_column_types_do_not_change_the_numbers(table, baseline):
    """Tiers as strings or as a categorical in any category order (unused unknown categories
    allowed), rewards as int, float or bool, flags as objects: one result."""
    frame = frame_of(table)
    expected = redistribute(frame, baseline=baseline)
    tiers = frame["tier"].where(frame["tier"].notna(), None)
    variants = [
        frame.assign(tier=pd.Categorical(tiers, categories=["T1", "T2", "T3"])),
        frame.assign(tier=pd.Categorical(tiers, categories=["T3", "T1", "T2", "T9"])),
        frame.assign(reward=frame["reward"].astype(float), cheat=frame["cheat"].astype(object)),
        frame.assign(reward=frame["reward"].astype(bool), graded=frame["graded"].astype(object)),
    ]
    for variant in variants:
        out = redistribute(variant, baseline=baseline)
        for column in advantage.OUTPUT_COLUMNS:
            assert out[column].tolist() == expected[column].tolist(), column


def test_an_unknown_tier_in_use_is_refused_in_a_categorical_too():
    frame = frame_of([{"rewards": [1, 0], "tiers": ["T9", None], "ranks": [1, None]}])
    with pytest.raises(ValueError, match="Unknown tier"):
        redistribute(frame.assign(tier=pd.Categorical(frame["tier"], categories=["T1", "T9"])))
