"""The minimum evidence a fitted mapping needs before it is activated without an override
(grading/method/evidence.py). Pure, no database."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading.method import evidence
from grading.method.evidence import EvidenceMinimum, TooLittleEvidence, assess, recorded_evidence

counts = st.lists(st.lists(st.integers(0, 40), min_size=3, max_size=3), min_size=3, max_size=3)
minimums = st.builds(EvidenceMinimum, groups=st.integers(0, 60), tier_pairs=st.integers(0, 12))


def test_docstring_examples_run():
    failed, attempted = doctest.testmod(evidence, raise_on_error=False)
    assert attempted and not failed


def test_the_default_is_30_groups_and_5_pairs_a_tier():
    assert EvidenceMinimum().to_dict() == {"groups": 30, "tier_pairs": 5}
    at = assess(counts=[[5, 0, 0], [1, 3, 1], [0, 0, 5]], n_groups=30, minimum=EvidenceMinimum())
    assert at.sufficient and at.tier_pairs == (5, 5, 5) and at.shortfalls == ()
    short = assess(counts=[[5, 0, 0], [1, 3, 0], [0, 0, 5]], n_groups=29, minimum=EvidenceMinimum())
    assert short.shortfalls == ("29 judged mixed groups, 30 needed", "T2 seen in 4 pairs, 5 needed")
    assert short.to_dict() == {
        "sufficient": False,
        "n_groups": 29,
        "tier_pairs": {"T1": 5, "T2": 4, "T3": 5},
        "minimum": {"groups": 30, "tier_pairs": 5},
        "shortfalls": list(short.shortfalls),
    }
    assert str(TooLittleEvidence(short)) == "too little evidence: 29 judged mixed groups, 30 needed; T2 seen in 4 pairs, 5 needed"


@given(counts, st.integers(0, 80), minimums)
def test_sufficient_exactly_when_the_groups_and_every_tier_row_meet_the_minimum(table, n_groups, minimum):
    found = assess(counts=table, n_groups=n_groups, minimum=minimum)
    rows_ok = all(sum(row) >= minimum.tier_pairs for row in table)
    assert found.sufficient == (n_groups >= minimum.groups and rows_ok)
    assert found.sufficient == (found.shortfalls == ())
    assert found.n_pairs == sum(map(sum, table))


@given(counts, st.integers(0, 80), minimums, st.integers(0, 2), st.integers(0, 2), st.integers(1, 10), st.integers(0, 10))
def test_more_judgments_never_take_sufficiency_away(table, n_groups, minimum, g, h, more_pairs, more_groups):
    before = assess(counts=table, n_groups=n_groups, minimum=minimum)
    grown = [row[:] for row in table]
    grown[g][h] += more_pairs
    after = assess(counts=grown, n_groups=n_groups + more_groups, minimum=minimum)
    assert after.sufficient or not before.sufficient
    assert len(after.shortfalls) <= len(before.shortfalls)


@given(counts, st.integers(0, 80), minimums)
def test_a_higher_minimum_never_lets_more_through(table, n_groups, minimum):
    stricter = EvidenceMinimum(groups=minimum.groups + 1, tier_pairs=minimum.tier_pairs + 1)
    assert (
        not assess(counts=table, n_groups=n_groups, minimum=stricter).sufficient
        or assess(counts=table, n_groups=n_groups, minimum=minimum).sufficient
    )


def test_a_recorded_fit_without_counts_claims_nothing_and_a_broken_one_is_no_evidence():
    assert recorded_evidence({}, EvidenceMinimum()) is None
    assert recorded_evidence({"f": [1, 0.8, 0.5]}, EvidenceMinimum()) is None
    broken = recorded_evidence({"counts": [[1, 2]], "n_groups": 40}, EvidenceMinimum())
    assert broken is not None and not broken.sufficient and broken.n_groups == 0
    unknown_groups = recorded_evidence({"counts": [[9, 0, 0], [0, 9, 0], [0, 0, 9]], "n_groups": None}, EvidenceMinimum())
    assert unknown_groups.n_groups == 0 and not unknown_groups.sufficient


@pytest.mark.parametrize("bad", [-1, 1.5, "30", True, None, 10**7])
def test_a_minimum_is_a_whole_number_in_range(bad):
    with pytest.raises(ValueError):
        EvidenceMinimum(groups=bad)
    with pytest.raises(ValueError):
        EvidenceMinimum(tier_pairs=bad)
