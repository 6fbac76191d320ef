"""The held-out D corpus (tests/helpers/exploits/heldout_d.py) is what it claims to be: it builds,
every catalogue category in at least 5 new forms each in a different real host (100 or more in
all), at least two honest look-alikes a category (40 or more), valid diffs, no form id of the met
corpus, held-out A, B or C reused, no look-alike scored, and named tamperings scored by the
tests they touch.

Shape only. Recall is deliberately NOT asserted, nor anything the scanners flag or call a cheat:
the corpus was written blind and its value is that the detectors never met it; a threshold here
would make it a tuning target. Pure: no database."""

from __future__ import annotations

from collections import Counter, defaultdict

import unidiff

from grading.grader.prescreen.catalogue import BY_SLUG, CATEGORIES
from tests.helpers.exploits import lookalikes, planted
from tests.helpers.exploits.heldout import heldout_lookalikes, heldout_planted
from tests.helpers.exploits.heldout_b import heldout_b_lookalikes, heldout_b_planted
from tests.helpers.exploits.heldout_c import heldout_c_lookalikes, heldout_c_planted
from tests.helpers.exploits.heldout_d import heldout_d_lookalikes, heldout_d_planted


def test_every_category_has_five_new_forms_in_different_hosts():
    by_slug = defaultdict(list)
    for case in heldout_d_planted():
        by_slug[case.slug].append(case)
    assert set(by_slug) == {c.slug for c in CATEGORIES}
    assert len(heldout_d_planted()) >= 100
    for slug, cases in by_slug.items():
        assert len(cases) >= 5, slug
        assert len({c.host for c in cases}) == len(cases), f"{slug}: two forms share a host"
        assert len({c.form for c in cases}) == len(cases), f"{slug}: two forms share an id"


def test_no_form_id_of_the_met_corpus_or_heldout_a_b_c_is_reused():
    earlier = {
        (c.slug, c.form)
        for c in [
            *planted(),
            *lookalikes(),
            *heldout_planted(),
            *heldout_lookalikes(),
            *heldout_b_planted(),
            *heldout_b_lookalikes(),
            *heldout_c_planted(),
            *heldout_c_lookalikes(),
        ]
    }
    mine = [*heldout_d_planted(), *heldout_d_lookalikes()]
    assert [c.name for c in mine if (c.slug, c.form) in earlier] == []
    assert len({(c.slug, c.form) for c in mine}) == len(mine)


def test_every_category_has_two_lookalikes_and_none_scores():
    counts = Counter(case.slug for case in heldout_d_lookalikes())
    assert {slug for slug in BY_SLUG if counts[slug] < 2} == set()
    assert len(heldout_d_lookalikes()) >= 40
    assert not any(case.scored for case in heldout_d_lookalikes())
    assert all(case.lookalike for case in heldout_d_lookalikes())


def test_named_tamperings_mark_scored_by_the_tests_they_touch():
    for case in heldout_d_planted():
        if BY_SLUG[case.slug].scores != "named":
            continue
        named = {*case.task.fail_to_pass, *case.task.pass_to_pass}
        assert set(case.tests) <= named, case.name
        assert case.scored == (case.view.passed is True and bool(case.tests)), case.name


def test_patches_are_valid_diffs():
    for case in [*heldout_d_planted(), *heldout_d_lookalikes()]:
        if case.view.patch:
            unidiff.PatchSet(case.view.patch)
