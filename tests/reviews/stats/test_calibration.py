"""docs/method.md section 5: the fitted tier -> f mapping. Pure, no database."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.method.advantage import MappingSpec, redistribute_group
from grading.method.tiers import TIERS
from reviews.stats import calibration
from reviews.stats.calibration import bootstrap_mapping, counts_from_pairs, fit_mapping
from tests.helpers.vendored import VECTORS

CALIBRATION_VECTORS = VECTORS / "calibration.jsonl"


def _cases():
    lines = CALIBRATION_VECTORS.read_text().splitlines()
    return [pytest.param(json.loads(line), id=f"case{json.loads(line)['case']}") for line in lines if line.strip()]


@pytest.mark.parametrize("case", _cases())
def test_vector(case):
    given = case["input"]
    fitted = fit_mapping(given["counts"], q=given["q"], k=given["k"])
    assert fitted.f == pytest.approx(case["expected"]["f"], abs=1e-9, rel=0)


def test_vector_file_has_63_cases():
    assert len(CALIBRATION_VECTORS.read_text().splitlines()) == 63


def test_docstring_example_runs():
    assert doctest.testmod(calibration).failed == 0


def test_no_judgments_gives_the_prior():
    assert fit_mapping(np.zeros((3, 3))).f == (1.0, 0.75, 0.5)
    assert fit_mapping(np.zeros((3, 3)), q=(1.0, 0.9, 0.2), k=0).f == (1.0, 0.9, 0.2)


def test_hand_case_with_pooling():
    # rows + k on the diagonal: [2,5,4] -> m = 7.75/11; [6,4,1] -> 9.5/11 (violates); [0,0,11] -> 0.5
    fitted = fit_mapping([[1, 5, 4], [6, 3, 1], [0, 0, 10]])
    pooled = (7.75 + 9.5) / 22
    assert fitted.m == pytest.approx((pooled, pooled, 0.5), abs=1e-12)
    assert fitted.f == pytest.approx((1.0, 1.0, 0.5 / pooled), abs=1e-12)


def test_result_is_monotone_and_records_its_inputs():
    rng = np.random.default_rng(3)
    for _ in range(200):
        counts = rng.integers(0, 30, size=(3, 3))
        fitted = fit_mapping(counts, k=0.5)
        assert fitted.f[0] >= fitted.f[1] >= fitted.f[2] > 0
        assert max(fitted.f) == 1.0
        assert fitted.counts == tuple(tuple(int(v) for v in row) for row in counts)
        assert fitted.k == 0.5 and fitted.q == (1.0, 0.75, 0.5)


def test_bands_are_accepted_by_the_advantage_engine():
    fitted = fit_mapping([[8, 2, 0], [4, 4, 2], [2, 3, 5]])
    spec = MappingSpec.from_dict(fitted.bands())
    assert spec.band("T2") == (fitted.f[1], fitted.f[1])


@pytest.mark.parametrize("bad", [np.zeros((2, 3)), [[1, -1, 0], [0, 0, 0], [0, 0, 0]], [[np.nan] * 3] * 3])
def test_bad_counts_are_refused(bad):
    with pytest.raises(ValueError):
        fit_mapping(bad)


def test_bad_tier_is_refused():
    with pytest.raises(ValueError, match="Unknown tier"):
        counts_from_pairs([("g", "T4", "T1")])


def _analytic_f(p_h, confusion, q):
    joint = confusion * np.asarray(p_h)[None, :]  # confusion[g][h] = P(g | h)
    m = joint @ np.asarray(q) / joint.sum(axis=1)
    assert m[0] >= m[1] >= m[2], "planted confusion chosen to need no pooling"
    return m / m.max()


def test_planted_confusion_is_recovered():
    rng = np.random.default_rng(11)
    q = (1.0, 0.75, 0.5)
    p_h = [0.5, 0.3, 0.2]
    confusion = np.array([[0.7, 0.3, 0.2], [0.2, 0.5, 0.3], [0.1, 0.2, 0.5]])  # columns sum to 1
    human = rng.choice(3, size=4000, p=p_h)
    grader = np.array([rng.choice(3, p=confusion[:, h]) for h in human])
    pairs = [(i // 16, g + 1, h + 1) for i, (g, h) in enumerate(zip(grader, human))]
    fitted = fit_mapping(counts_from_pairs(pairs), q=q)
    assert fitted.f == pytest.approx(tuple(_analytic_f(p_h, confusion, q)), abs=0.05)


def test_uninformative_grader_gives_equal_f():
    # identical rows: exactly equal with k = 0, within O(k/N) with the default
    rows = [[40, 30, 30]] * 3
    assert fit_mapping(rows, k=0).f == (1.0, 1.0, 1.0)
    fitted = fit_mapping(rows)
    assert 1.0 - min(fitted.f) < 3 * 1.0 / 100
    big = fit_mapping(np.array(rows) * 100)
    assert 1.0 - min(big.f) < 3 * 1.0 / 10000
    # sampled: grader tiers drawn independently of the people's
    rng = np.random.default_rng(5)
    human = rng.choice([1, 2, 3], size=30000, p=[0.4, 0.35, 0.25])
    grader = rng.choice([1, 2, 3], size=30000, p=[0.3, 0.4, 0.3])
    sampled = fit_mapping(counts_from_pairs([(i, g, h) for i, (g, h) in enumerate(zip(grader, human))]))
    assert min(sampled.f) > 0.98


def test_uninformative_grader_leaves_advantages_at_baseline():
    spec = MappingSpec.from_dict(fit_mapping([[40, 30, 30]] * 3, k=0).bands())
    result = redistribute_group([1, 1, 1, 0], tiers=["T1", "T2", "T3", None], ranks=[1, 2, 3, None], mapping=spec)
    assert result.redistributed_advantage.tolist() == result.advantage.tolist()


def test_bootstrap_resamples_groups():
    # two groups that disagree completely: a resample holds either or both, never half a group
    pairs = [("a", "T1", "T1")] * 5 + [("b", "T1", "T3")] * 5 + [("c", "T3", "T3")] * 3
    boot = bootstrap_mapping(pairs, n_boot=300, seed=2, k=0)
    assert boot.n_groups == 3 and boot.n_boot == 300
    assert boot.f == fit_mapping(counts_from_pairs(pairs), k=0).f
    assert boot.intervals[1] is None  # the grader gave no T2: nothing to resample
    for interval, f in zip(boot.intervals[::2], boot.f[::2]):
        low, high = interval
        assert low <= f <= high
    assert bootstrap_mapping(pairs, n_boot=300, seed=2, k=0).intervals == boot.intervals


def test_bootstrap_interval_covers_planted_truth():
    rng = np.random.default_rng(8)
    q = (1.0, 0.75, 0.5)
    p_h = [0.5, 0.3, 0.2]
    confusion = np.array([[0.7, 0.3, 0.2], [0.2, 0.5, 0.3], [0.1, 0.2, 0.5]])
    truth = _analytic_f(p_h, confusion, q)
    human = rng.choice(3, size=3000, p=p_h)
    grader = np.array([rng.choice(3, p=confusion[:, h]) for h in human])
    boot = bootstrap_mapping(
        [(i // 10, g + 1, h + 1) for i, (g, h) in enumerate(zip(grader, human))], n_boot=400, seed=1, q=q, k=0
    )
    for (low, high), t in zip(boot.intervals, truth):
        assert low - 1e-12 <= t <= high + 1e-12


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("abcdefg"), st.sampled_from(TIERS), st.sampled_from(TIERS)), max_size=30),
    st.floats(min_value=0, max_value=3),
)
def test_a_tier_has_an_interval_exactly_when_the_grader_gave_it(pairs, k):
    boot = bootstrap_mapping(pairs, n_boot=20, seed=0, k=k)
    given_tiers = {grader for _, grader, _ in pairs}
    assert [iv is not None for iv in boot.intervals] == [tier in given_tiers for tier in TIERS]
    assert all(low <= high for low, high in filter(None, boot.intervals))
    assert boot.to_dict()["intervals"] == [None if iv is None else list(iv) for iv in boot.intervals]
