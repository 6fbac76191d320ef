"""The cheat audit by rollout, on groups built from the vendored real trajectories.

People: alice admin, bob and dan reviewers, erin auditor (tests/reviews/conftest.py);
carol is an admin of another project only.
World: `audit_world` (tests/helpers/audit_world.py), with bob as the reviewer and erin as the
auditor.
"""

from __future__ import annotations

import pytest

from grading.models import CheatDecision, Role, Rollout
from reviews.models import Assignment, CheatAudit
from tests.helpers.audit_world import GRADER, GRADER_NOTE, PRESCREEN_REASON, RUN, SEARCH, audit_world, reward
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member
from tests.helpers.real_groups import load_real_long_groups

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(acme, alice, bob, erin):
    return audit_world(acme, reviewer=bob, auditor=erin)


def test_one_row_per_rollout_with_each_signal_under_its_author_and_its_own_evidence(client, erin, world):
    x = world["x"]
    client.force_login(erin)
    page = client.get("/projects/acme/audit/").content.decode()
    assert page.count('data-testid="audit-rollout-') == 3  # three rollouts, five... six signals
    signals = {s.source: s for s in CheatDecision.objects.filter(rollout=x)}
    assert set(signals) == {"grader", "prescreen", "reviewer"}
    assert [signals[s].author for s in ("grader", "prescreen", "reviewer")] == [GRADER, "prescreen", "bob"]
    row = page[page.index(f'data-testid="audit-rollout-{x.pk}"') :]
    row = row[: row.index("</tr>")]
    group = f"/projects/acme/runs/{RUN}/groups/real-long-00@0/"

    def item(source: str) -> str:
        start = row.index(f'data-testid="signal-{signals[source].pk}"')
        return row[start : row.index("</li>\n", start) if "</li>\n" in row[start:] else len(row)]

    grader, bob = item("grader"), item("reviewer")
    assert GRADER in grader and GRADER_NOTE in grader
    assert f'href="{group}?lane=2&amp;start=5#turn-2-5"' in grader  # the evidence opens the group page's turn
    assert ">bob<" in bob and "turn 7" in bob and GRADER_NOTE not in bob  # bob's flag shows bob's evidence only
    assert f'href="{group}?lane=2&amp;start=7#turn-2-7"' in bob
    assert f'href="{group}?lane=2&amp;start=3#turn-2-3"' in item("prescreen")
    search = page[page.index(f'data-testid="signal-{CheatDecision.objects.get(rollout=world["z"]).pk}"') :]
    assert "?q=git+log+--all&amp;mode=words" in search[:2000] and ">erin<" in search[:2000]


def test_one_decision_settles_the_rollout_and_every_open_signal_with_one_reason(client, erin, world):
    x = world["x"]
    assert reward(x) == 1.0
    client.force_login(erin)
    r = client.post(
        f"/projects/acme/audit/rollouts/{x.pk}/",
        {"verdict": "confirm", "reason": "turn 3 reads the fix", "status": "pending"},
        HTTP_HX_REQUEST="true",
    )
    body = r.content.decode()
    assert r.status_code == 200 and 'data-state="confirmed"' in body and "no longer pending" in body
    assert 'data-testid="filter-pending"' in body and 'pending <span class="muted">(2)' in body  # the counts, out of band
    assert set(CheatDecision.objects.filter(rollout=x).values_list("confirmed", "decided_by__username")) == {(True, "erin")}
    assert set(CheatAudit.objects.values_list("reason", flat=True)) == {"turn 3 reads the fix"}
    assert CheatAudit.objects.count() == 3
    assert CheatDecision.objects.filter(confirmed__isnull=True).count() == 3  # y's two and z's one untouched
    assert reward(x) == 0.0  # what the method acts on: a confirmed cheat
    page = client.get("/projects/acme/audit/").content.decode()
    assert f'audit-rollout-{x.pk}"' not in page
    # Overturned as a whole later: every signal with it, and the reward is back.
    r = client.post(
        f"/projects/acme/audit/rollouts/{x.pk}/",
        {"verdict": "overturn", "reason": "the log was the issue's", "status": "all"},
        HTTP_HX_REQUEST="true",
    )
    assert r.status_code == 200 and 'data-state="overturned"' in r.content.decode()
    assert set(CheatDecision.objects.filter(rollout=x).values_list("confirmed", flat=True)) == {False}
    assert reward(x) == 1.0 and CheatAudit.objects.count() == 6


def test_a_new_signal_on_a_decided_rollout_reopens_it_and_only_the_open_one_is_decided(client, erin, world):
    x = world["x"]
    client.force_login(erin)
    client.post(f"/projects/acme/audit/rollouts/{x.pk}/", {"verdict": "confirm", "reason": "reads the fix"})
    late = CheatDecision.objects.create(rollout=x, source="search", author="erin", reason="pip install astropy==")
    assert 'data-state="pending"' in client.get("/projects/acme/audit/").content.decode()
    client.post(f"/projects/acme/audit/rollouts/{x.pk}/", {"verdict": "overturn", "reason": "a harmless install"})
    late.refresh_from_db()
    assert late.confirmed is False and CheatAudit.objects.filter(decision=late).count() == 1
    assert CheatDecision.objects.filter(rollout=x, confirmed=True).count() == 3  # kept, with their own audits
    assert reward(x) == 1.0  # the latest decision is in force, as the method reads it


def test_bulk_decisions_for_a_prescreen_rule_and_for_a_search(client, erin, world):
    x, y, z = world["x"], world["y"], world["z"]
    client.force_login(erin)
    page = client.get("/projects/acme/audit/").content.decode()
    assert "Confirm all 2" in page  # the rule's two rollouts, and the search's two
    r = client.post(
        "/projects/acme/audit/bulk/",
        {"rule": "upstream_history", "verdict": "overturn", "reason": "issue text", "back_status": "pending"},
        HTTP_HX_REQUEST="true",
    )
    body = r.content.decode()
    assert r.status_code == 200 and "2 rollouts overturned (5 signals)" in body
    assert f'audit-rollout-{z.pk}"' in body and f'audit-rollout-{x.pk}"' not in body  # decided ones left pending
    assert not CheatDecision.objects.filter(rollout__in=[x, y], confirmed__isnull=True).exists()
    assert CheatDecision.objects.get(rollout=z).confirmed is None
    r = client.post("/projects/acme/audit/bulk/", {"search": SEARCH, "verdict": "confirm", "reason": "reads upstream"})
    assert r.status_code == 302 and r["Location"] == "/projects/acme/audit/?status=pending"
    assert CheatDecision.objects.get(rollout=z).confirmed is True
    assert CheatDecision.objects.get(rollout=y, source="search").confirmed is False  # y was no longer pending
    r = client.post(
        "/projects/acme/audit/bulk/", {"search": SEARCH, "verdict": "confirm", "reason": "again"}, HTTP_HX_REQUEST="true"
    )
    assert r.status_code == 422 and "no pending rollout" in r.content.decode()


def test_refusals(client, bob, carol, erin, world):
    x = world["x"]
    url = f"/projects/acme/audit/rollouts/{x.pk}/"
    r = client.post(url, {"verdict": "confirm", "reason": "saw it"})
    assert r.status_code == 302 and "/login/" in r["Location"]  # anonymous
    client.force_login(erin)
    assert client.get(url).status_code == 405
    r = client.post(url, {"verdict": "maybe", "reason": "saw it"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 422 and "choose confirm or overturn" in r.content.decode()
    r = client.post(url, {"verdict": "confirm", "reason": "<script>alert(1)</script>"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200
    assert "<script>alert(1)" not in client.get("/projects/acme/audit/?status=all").content.decode()  # escaped
    unflagged = Rollout.objects.get(group=x.group, index=0)
    assert (
        client.post(f"/projects/acme/audit/rollouts/{unflagged.pk}/", {"verdict": "confirm", "reason": "x y z"}).status_code
        == 404
    )
    r = client.post("/projects/acme/audit/bulk/", {"verdict": "confirm", "reason": "all of it"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 422 and "choose a prescreen rule or a search" in r.content.decode()
    # bob reviews but does not audit; carol is another project's admin.
    client.force_login(bob)
    assert client.post(url, {"verdict": "confirm", "reason": "saw it"}).status_code == 403
    client.force_login(carol)
    assert client.post(url, {"verdict": "confirm", "reason": "saw it"}).status_code == 404
    assert client.get("/projects/acme/audit/").status_code == 404


def test_a_rollout_on_a_group_the_auditor_judges_blind_stays_out(client, acme, erin, world):
    x = world["x"]
    Assignment.objects.create(group=x.group, reviewer=erin, blind=True, order=[0, 1, 2, 3])
    client.force_login(erin)
    page = client.get("/projects/acme/audit/?status=all").content.decode()
    assert f'audit-rollout-{x.pk}"' not in page and GRADER_NOTE not in page
    assert client.post(f"/projects/acme/audit/rollouts/{x.pk}/", {"verdict": "confirm", "reason": "saw it"}).status_code == 404


def test_the_audit_page_takes_the_same_queries_however_many_rollouts(client, acme, erin, dan, world, django_assert_num_queries):
    client.force_login(erin)
    member("gina", acme, Role.AUDITOR)
    # 10: session, user, project, membership, the counts, the bulk choices, the pager's count,
    # a page of rollouts, their signals, their audits
    with django_assert_num_queries(10):
        assert client.get("/projects/acme/audit/?status=all").status_code == 200
    ingest_groups(acme, *load_real_long_groups()[2:4])
    for rollout in Rollout.objects.filter(group__uid__in=["real-long-02@0", "real-long-03@0"]):
        CheatDecision.objects.create(
            rollout=rollout,
            source="prescreen",
            author="prescreen",
            reason=PRESCREEN_REASON,
            evidence=[{"kind": "patch", "rollout": rollout.index, "locator": "a.py:1", "note": ""}],
        )
        CheatDecision.objects.create(rollout=rollout, source="search", author="gina", reason="curl github.com")
    client.post(f"/projects/acme/audit/rollouts/{world['y'].pk}/", {"verdict": "confirm", "reason": "reads the fix"})
    with django_assert_num_queries(10):
        assert client.get("/projects/acme/audit/?status=all").status_code == 200
