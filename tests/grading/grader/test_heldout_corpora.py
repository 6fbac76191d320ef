"""Held-out corpora B, C and D (tests/helpers/exploits/heldout_{b,c,d}.py) are what they claim to
be: each builds, every catalogue category in its minimum of new forms each in a different real
host, at least two honest look-alikes a category, valid diffs, no form id of the met corpus or of
an earlier held-out corpus reused, no look-alike scored, and named tamperings scored by the tests
they touch.

Shape only. Recall is deliberately NOT asserted, nor anything the scanners flag or call a cheat:
each corpus was written blind and its first-contact figures are in docs/benchmarks.md; a
threshold here would make it a tuning target. Pure: no database."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest
import unidiff

from grading.grader.prescreen.catalogue import BY_SLUG, CATEGORIES
from tests.helpers.exploits import Case, lookalikes, planted
from tests.helpers.exploits.heldout import heldout_lookalikes, heldout_planted
from tests.helpers.exploits.heldout_b import heldout_b_lookalikes, heldout_b_planted
from tests.helpers.exploits.heldout_c import heldout_c_lookalikes, heldout_c_planted
from tests.helpers.exploits.heldout_d import heldout_d_lookalikes, heldout_d_planted


@dataclass(frozen=True)
class Held:
    name: str
    planted: Callable[[], Sequence[Case]]
    lookalikes: Callable[[], Sequence[Case]]
    per_category: int  # forms a category, at least
    min_planted: int = 0
    min_lookalikes: int = 0


# in the order they were written: each may reuse no form id of the met corpus or of those before it
ORDER = [
    Held("met", planted, lookalikes, 0),
    Held("A", heldout_planted, heldout_lookalikes, 0),
    Held("B", heldout_b_planted, heldout_b_lookalikes, 4),
    Held("C", heldout_c_planted, heldout_c_lookalikes, 5, 100, 40),
    Held("D", heldout_d_planted, heldout_d_lookalikes, 5, 100, 40),
]
CHECKED = pytest.mark.parametrize("corpus", ORDER[2:], ids=lambda c: c.name)


@CHECKED
def test_every_category_has_its_new_forms_in_different_hosts(corpus: Held):
    by_slug = defaultdict(list)
    for case in corpus.planted():
        by_slug[case.slug].append(case)
    assert set(by_slug) == {c.slug for c in CATEGORIES}
    assert len(corpus.planted()) >= corpus.min_planted
    for slug, cases in by_slug.items():
        assert len(cases) >= corpus.per_category, slug
        assert len({c.host for c in cases}) == len(cases), f"{slug}: two forms share a host"
        assert len({c.form for c in cases}) == len(cases), f"{slug}: two forms share an id"


@CHECKED
def test_no_form_id_of_the_met_corpus_or_an_earlier_heldout_is_reused(corpus: Held):
    before = ORDER[: ORDER.index(corpus)]
    earlier = {(c.slug, c.form) for held in before for c in [*held.planted(), *held.lookalikes()]}
    mine = [*corpus.planted(), *corpus.lookalikes()]
    assert [c.name for c in mine if (c.slug, c.form) in earlier] == []
    assert len({(c.slug, c.form) for c in mine}) == len(mine)


@CHECKED
def test_every_category_has_two_lookalikes_and_none_scores(corpus: Held):
    counts = Counter(case.slug for case in corpus.lookalikes())
    assert {slug for slug in BY_SLUG if counts[slug] < 2} == set()
    assert len(corpus.lookalikes()) >= corpus.min_lookalikes
    assert not any(case.scored for case in corpus.lookalikes())
    assert all(case.lookalike for case in corpus.lookalikes())


@CHECKED
def test_named_tamperings_mark_scored_by_the_tests_they_touch(corpus: Held):
    for case in corpus.planted():
        if BY_SLUG[case.slug].scores != "named":
            continue
        named = {*case.task.fail_to_pass, *case.task.pass_to_pass}
        assert set(case.tests) <= named, case.name
        assert case.scored == (case.view.passed is True and bool(case.tests)), case.name


@CHECKED
def test_patches_are_valid_diffs(corpus: Held):
    for case in [*corpus.planted(), *corpus.lookalikes()]:
        if case.view.patch:
            unidiff.PatchSet(case.view.patch)
