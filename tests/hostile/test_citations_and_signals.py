"""Two lesser defects of the second review: the labeled export's turn-citation pattern
(reviews/formats/labeled.py) and searches turned into cheat signals again and again
(reviews/services/search_signals.py). The underflowing reward is a corpus case
("reward 1E-400"), the last human admin is in test_token_identity.py.

People: erin, auditor in acme.
"""

from __future__ import annotations

import time

import pytest

from grading.models import CheatDecision, Role
from reviews.formats.labeled import citations
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member


# 16,000 spaces: the review's figure, within 50 ms; a million (quadratic: hours) within 2 s.
@pytest.mark.parametrize(("spaces", "budget"), [(16_000, 0.05), (1_000_000, 2.0)])
def test_the_turn_citation_pattern_is_linear(spaces, budget):
    # Before: "turn" + 16,000 spaces took 5.4 s (two runs of \s* split the spaces N ways).
    for note in ("turn" + " " * spaces, "turn #" + " " * spaces + "x"):
        started = time.process_time()  # this process's CPU time: the bound is on the work, not on a loaded machine
        assert citations(note, 0) == []
        assert time.process_time() - started < budget
    # ... and it still reads what people write.
    assert [c["locator"] for c in citations("see turn 3, turn #4, Turn: 5, turns 6", 0)] == ["3", "4", "5", "6"]


@pytest.mark.django_db
def test_a_search_turned_into_signals_again_adds_none(client, acme):
    erin = member("erin", acme, Role.AUDITOR)
    ingest_groups(acme, small_group("g1@1", rewards=(1, 1, 0)), small_group("g2@1", instance_id="t-2", rewards=(1, 0)))
    client.force_login(erin)
    # Before: each spelling of the same search added one more open signal on every match.
    r = client.post("/projects/acme/search/signals/", {"q": "widget"}, follow=True)
    assert r.status_code == 200
    first = CheatDecision.objects.filter(source="search").count()
    assert first > 0
    for q in ("Widget", "WIDGET", '"widget"', "widget"):
        r = client.post("/projects/acme/search/signals/", {"q": q}, follow=True)
        assert r.status_code == 200
        assert "already had an open one from a search" in r.content.decode()
    signals = CheatDecision.objects.filter(source="search", confirmed__isnull=True)
    assert signals.count() == first
    assert len(set(signals.values_list("rollout_id", flat=True))) == first
