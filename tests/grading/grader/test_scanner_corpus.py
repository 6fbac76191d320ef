"""The prescreens measured on held-out data: the corpus of tests/helpers/exploits (every
catalogue category planted in at least 8 varied forms into the real trajectories, honest
look-alikes beside them), written without reading the detectors.

Per category: recall >= 0.90 (a case is caught when a signal of its category is raised on its
rollout); every case that scored is a cheat (some signal has cheat=True); no planted case that
did not score, no honest host and no look-alike is a cheat; a quiet look-alike raises no signal
of the category it mimics; every signal cites evidence that resolves. `pytest -s` prints the
table (benchmarks/scanners.py prints it with intervals and the scanning throughput)."""

from __future__ import annotations

import pytest

from grading.grader.evidence import resolve
from grading.grader.prescreen.catalogue import CATEGORIES
from grading.grader.workspace import GroupWorkspace
from tests.helpers.exploits import honest_host_ids, honest_hosts, lookalikes, planted
from tests.helpers.exploits.measure import misses, render, rows, screen_cases, screen_hosts

RECALL = 0.90


@pytest.fixture(scope="module")
def screened():
    found = {
        "planted": screen_cases(planted()),
        "lookalikes": screen_cases(lookalikes()),
        "hosts": screen_hosts(honest_hosts(), honest_host_ids()),
    }
    print("\n" + render(rows(found["planted"], found["lookalikes"], found["hosts"])))
    return found


@pytest.mark.parametrize("slug", [c.slug for c in CATEGORIES])
def test_recall_per_category(screened, slug):
    mine = [s for s in screened["planted"] if s.case.slug == slug]
    caught = [s for s in mine if s.raised(slug)]
    missed = [s.name for s in mine if not s.raised(slug)]
    assert len(caught) / len(mine) >= RECALL, f"{slug}: {len(caught)}/{len(mine)} caught; missed {missed}"


def test_every_scored_case_is_a_cheat(screened):
    not_cheat = [s.name for s in screened["planted"] if s.case.scored and not s.cheat]
    assert not_cheat == []


def test_no_unscored_planted_case_is_a_cheat(screened):
    called = [(s.name, [x.signal for x in s.signals if x.cheat]) for s in screened["planted"] if not s.case.scored and s.cheat]
    assert called == []


def test_no_honest_host_is_a_cheat(screened):
    called = [(s.name, [(x.signal, x.detail) for x in s.signals if x.cheat]) for s in screened["hosts"] if s.cheat]
    assert called == []


def test_no_lookalike_is_a_cheat_or_raises_what_it_mimics(screened):
    called = [(s.name, [x.signal for x in s.signals if x.cheat]) for s in screened["lookalikes"] if s.cheat]
    mimicked = [s.name for s in screened["lookalikes"] if s.case.quiet and s.raised(s.case.slug)]
    assert (called, mimicked) == ([], [])


def test_every_signal_cites_evidence_that_resolves(screened):
    unresolved = []
    for s in [*screened["planted"], *screened["lookalikes"]]:
        ws = GroupWorkspace(uid="corpus", instance_id=s.case.host, rollouts=[s.case.view])
        for signal in s.signals:
            problem = "no evidence" if signal.evidence is None else resolve(ws, signal.evidence)
            if problem:
                unresolved.append((s.name, signal.signal, problem))
    assert unresolved == []


def test_misses_are_listed(screened):
    """Not a threshold: the misses, for whoever improves a detector (pytest -s shows them)."""
    print("\nmissed:\n  " + "\n  ".join(misses(screened["planted"])))
