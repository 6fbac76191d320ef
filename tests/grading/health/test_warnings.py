"""The health warnings on planted series: the method's collapse figures raise one, a healthy run
raises none, and each signature needs all of its parts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grading.health.warnings import (
    MAX_WINDOW,
    Thresholds,
    ThresholdsRefused,
    form_values,
    health_warnings,
    role_of,
    threshold_fields,
)


def ramp(first: float, last: float, steps: int = 30, start: int = 1, noise: float = 0.0, seed: int = 0):
    rng = random.Random(seed)
    return [
        (start + i, first + (last - first) * i / (steps - 1) + rng.uniform(-noise, noise) * abs(last - first or 1))
        for i in range(steps)
    ]


def flat(value: float, steps: int = 30, noise: float = 0.0, seed: int = 1):
    rng = random.Random(seed)
    return [(1 + i, value * (1 + rng.uniform(-noise, noise))) for i in range(steps)]


# The method's ablation without sum preservation, over 30 steps (docs/method.md)
COLLAPSE_TRAINER = {"actor/entropy": ramp(0.359, 0.905), "response_length/mean": ramp(47_100, 114_100)}
COLLAPSE_DESK = {"pass_rate": ramp(0.565, 0.488)}


def test_the_papers_collapse_raises_one_warning_over_its_steps_with_the_figures():
    warnings = health_warnings(COLLAPSE_TRAINER, COLLAPSE_DESK)
    assert [w.kind for w in warnings] == ["collapse"]
    (collapse,) = warnings
    assert collapse.first_step == 1 and collapse.last_step == 30
    assert "actor/entropy rose" in collapse.evidence[0] and "response_length/mean grew" in collapse.evidence[1]
    assert "pass rate fell" in collapse.evidence[2]
    assert collapse.series == ["actor/entropy", "response_length/mean", "desk:pass_rate"]


def test_a_healthy_run_raises_nothing():
    trainer = {"actor/entropy": flat(0.4, noise=0.05), "response_length/mean": flat(900, noise=0.05), "eval/swe": ramp(0.3, 0.35)}
    desk = {"pass_rate": ramp(0.50, 0.58), "credit_imbalance": flat(0.0), "cheat_share": flat(0.01)}
    assert health_warnings(trainer, desk) == []


@pytest.mark.parametrize("missing", ["entropy", "length", "pass rate"])
def test_collapse_needs_all_three_parts(missing):
    trainer = dict(COLLAPSE_TRAINER)
    desk = dict(COLLAPSE_DESK)
    if missing == "entropy":
        trainer["actor/entropy"] = flat(0.4)
    elif missing == "length":
        trainer["response_length/mean"] = flat(900)
    else:
        desk["pass_rate"] = ramp(0.5, 0.55)
    assert [w.kind for w in health_warnings(trainer, desk)] == []


def test_a_step_that_was_not_sum_preserving_is_named():
    desk = {"credit_imbalance": [(1, 0.0), (2, 1e-9), (3, 0.25), (4, 0.0)]}
    (warning,) = health_warnings({}, desk)
    assert (warning.kind, warning.first_step, warning.last_step) == ("credit_imbalance", 3, 3)
    assert "+0.25" in warning.evidence[0]


def test_reward_rising_while_an_eval_falls_is_a_hacking_signature():
    trainer = {"critic/score/mean": ramp(0.2, 0.6), "val-core/swe/reward/mean@1": ramp(0.4, 0.3), "eval/other": ramp(0.3, 0.4)}
    (warning,) = health_warnings(trainer, {})
    assert warning.kind == "hacking" and "val-core/swe/reward/mean@1" in warning.title
    assert warning.series == ["critic/score/mean", "val-core/swe/reward/mean@1"]


def test_a_rising_cheat_share_is_a_hacking_signature_and_thresholds_are_the_projects():
    desk = {"cheat_share": ramp(0.0, 0.12)}
    (warning,) = health_warnings({}, desk)
    assert warning.kind == "hacking" and "cheats rose" in warning.evidence[0]
    assert health_warnings({}, desk, Thresholds.from_dict({"cheat_share_rise": 0.2})) == []
    assert Thresholds.from_dict({"window": 2, "entropy_rise": "x", "nope": 1}) == Thresholds(window=4)


def test_set_thresholds_are_checked_strictly_naming_every_bad_field():
    assert Thresholds.checked({}) == Thresholds()
    assert Thresholds.checked({"window": 12.0, "imbalance": 0}) == Thresholds(window=12, imbalance=0.0)
    with pytest.raises(ThresholdsRefused) as refused:
        Thresholds.checked(
            {"window": 3, "entropy_rise": -0.1, "eval_fall": True, "reward_rise": "0.1", "imbalance": float("inf"), "nope": 1}
        )
    assert refused.value.errors == {
        "nope": "is not a threshold",
        "window": f"must be a whole number of steps from 4 to {MAX_WINDOW}",
        "entropy_rise": "must be a number, 0 or more",
        "reward_rise": "must be a number, 0 or more",
        "eval_fall": "must be a number, 0 or more",
        "imbalance": "must be a number, 0 or more",
    }
    assert refused.value.field == "nope"
    for window in (4.5, MAX_WINDOW + 1, float("nan")):
        with pytest.raises(ThresholdsRefused, match="window must be a whole number"):
            Thresholds.checked({"window": window})


def test_only_what_differs_from_a_default_is_stored_and_a_form_left_empty_keeps_the_defaults():
    assert Thresholds(window=10, entropy_rise=0.3).overrides() == {"entropy_rise": 0.3}
    names = [name for name, *_ in threshold_fields()]
    assert form_values({"window": " 12 ", "entropy_rise": "2e-1", "length_rise": "", "imbalance": "abc"}, names) == {
        "window": 12,
        "entropy_rise": 0.2,
        "imbalance": "abc",
    }
    assert Thresholds.checked(form_values(dict.fromkeys(names, ""), names)) == Thresholds()


def test_every_threshold_says_what_it_means_and_its_default():
    rows = threshold_fields()
    assert [name for name, *_ in rows] == list(Thresholds().as_dict())
    for name, default, warning, unit, meaning in rows:
        assert default == getattr(Thresholds(), name) and warning in {"all", "collapse", "hacking", "credit_imbalance"}
        assert unit and len(meaning) > 40, name


def test_roles_are_found_by_name():
    assert role_of(["entropy", "completions/mean_length", "reward"], "entropy") == "entropy"
    assert role_of(["entropy", "completions/mean_length"], "length") == "completions/mean_length"
    assert role_of(["policy/policy_entropy_avg"], "entropy") == "policy/policy_entropy_avg"
    assert role_of(["eval/entropy"], "entropy") is None


@settings(max_examples=60, deadline=None)
@given(
    level=st.floats(0.05, 0.95),
    noise=st.floats(0.0, 0.1),
    steps=st.integers(4, 60),
    seed=st.integers(0, 1000),
)
def test_steady_series_never_warn(level, noise, steps, seed):
    """Series that stay level (within a few percent of noise) raise nothing, whatever their length."""
    trainer = {"actor/entropy": flat(level, steps, noise * 0.3, seed), "response_length/mean": flat(800, steps, noise, seed + 1)}
    desk = {"pass_rate": flat(level, steps, noise * 0.2, seed + 2), "cheat_share": flat(0.01, steps, 0.5, seed + 3)}
    assert health_warnings(trainer, desk) == []
