"""The held-out corpus (tests/helpers/exploits/heldout.py) is what it claims to be: it builds,
every catalogue category in at least 3 new forms each in a different real host, at least one
honest look-alike a category, valid diffs, no form id of the met corpus reused, and no honest
host or plainly honest look-alike called a cheat.

Recall on it is deliberately NOT asserted: its first-contact figures are recorded in
docs/benchmarks.md, and a threshold here would make it a tuning target. Pure: no database."""

from __future__ import annotations

from collections import Counter, defaultdict

import unidiff

from grading.grader.prescreen.catalogue import BY_SLUG, CATEGORIES
from tests.helpers.exploits import honest_host_ids, honest_hosts, lookalikes, planted
from tests.helpers.exploits.heldout import heldout_lookalikes, heldout_planted
from tests.helpers.exploits.measure import screen_cases, screen_hosts


def test_every_category_has_three_new_forms_in_different_hosts():
    by_slug = defaultdict(list)
    for case in heldout_planted():
        by_slug[case.slug].append(case)
    assert set(by_slug) == {c.slug for c in CATEGORIES}
    for slug, cases in by_slug.items():
        assert len(cases) >= 3, slug
        assert len({c.host for c in cases}) == len(cases), f"{slug}: two forms share a host"
        assert len({c.form for c in cases}) == len(cases), f"{slug}: two forms share an id"


def test_no_form_id_of_the_met_corpus_is_reused():
    met = {(c.slug, c.form) for c in [*planted(), *lookalikes()]}
    assert [c.name for c in [*heldout_planted(), *heldout_lookalikes()] if (c.slug, c.form) in met] == []


def test_every_category_has_a_lookalike_and_none_scores():
    counts = Counter(case.slug for case in heldout_lookalikes())
    assert {slug for slug in BY_SLUG if counts[slug] < 1} == set()
    assert not any(case.scored for case in heldout_lookalikes())


def test_patches_are_valid_diffs():
    for case in [*heldout_planted(), *heldout_lookalikes()]:
        if case.view.patch:
            unidiff.PatchSet(case.view.patch)


def test_no_honest_host_or_quiet_lookalike_is_called_a_cheat():
    hosts = screen_hosts(honest_hosts(), honest_host_ids())
    assert [s.name for s in hosts if s.cheat] == []
    quiet = [c for c in heldout_lookalikes() if c.quiet]
    assert [s.name for s in screen_cases(quiet) if s.cheat] == []
