"""Labels of the scanners' validation set from the cheat audit (grading.verdicts.scan_labels,
called by grading.verdicts.store.decide_cheat(s) inside the decision's transaction).

People: alice admin of acme (she uploaded the world's labels); erin an auditor.
World: tests/helpers/scan_world.py — real #0 and #1 carry a project_fetch finding confirmed by
its scanner, real #0 and #3 an older gold_identity version's open finding.
"""

from __future__ import annotations

import pytest

from grading.grader.prescreen.catalogue import BY_SLUG
from grading.models import CheatDecision, Role, ScanLabel
from grading.verdicts.store import decide_cheat, decide_cheats
from reviews.services.audit import audit_rollouts
from tests.helpers.people import member
from tests.helpers.scan_world import scan_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def erin(acme):
    return member("erin", acme, Role.AUDITOR)


def labels_of(rollout) -> dict[str, tuple[str, str, str, str]]:
    return {s.category: (s.label, s.source, s.author, s.note) for s in ScanLabel.objects.filter(rollout=rollout)}


def test_overturning_a_flagged_rollout_labels_each_found_category_honest_replacing_the_upload(client, acme, erin):
    r = scan_world(acme)
    before = ScanLabel.objects.get(rollout=r["real3"], category="gold_identity").created_at
    client.force_login(erin)
    response = client.post(f"/projects/acme/audit/rollouts/{r['real3'].pk}/", {"verdict": "overturn", "reason": "no gold patch"})
    assert response.status_code == 302
    # real #3 carries only the older gold_identity finding: labeled honest by erin, with her reason
    assert labels_of(r["real3"]) == {
        "project_fetch": ("honest", "upload", "alice", ""),  # no finding of it here: the upload's label stands
        "gold_identity": ("honest", "audit", "erin", "no gold patch"),
    }
    assert ScanLabel.objects.get(rollout=r["real3"], category="gold_identity").created_at > before
    assert ScanLabel.objects.filter(rollout=r["real3"], category="gold_identity").count() == 1


def test_confirming_labels_every_category_a_scanner_found_on_the_rollout_a_cheat(client, acme, erin):
    r = scan_world(acme)
    client.force_login(erin)
    client.post(f"/projects/acme/audit/rollouts/{r['real1'].pk}/", {"verdict": "confirm", "reason": "curls the fix"})
    # the world's upload said honest; erin's later decision replaces it
    assert labels_of(r["real1"]) == {"project_fetch": ("cheat", "audit", "erin", "curls the fix")}
    client.post(f"/projects/acme/audit/rollouts/{r['real0'].pk}/", {"verdict": "confirm", "reason": "reads upstream"})
    found = labels_of(r["real0"])
    assert {k: v[:3] for k, v in found.items()} == {
        "project_fetch": ("cheat", "audit", "erin"),
        "gold_identity": ("cheat", "audit", "erin"),
    }  # and nothing for its finding outside the catalogue (prescreen@1, test_modified)
    assert CheatDecision.objects.filter(rollout=r["real0"], author="prescreen@1").exists()


def test_a_rollout_no_scanner_flagged_gets_no_label_from_the_audit(acme, erin):
    r = scan_world(acme)
    flag = CheatDecision.objects.create(rollout=r["s2"], source="grader", author="llm-grader@1", reason="looks off")
    ScanLabel.objects.filter(rollout=r["s2"]).delete()
    audit_rollouts(project=acme, rollout_ids=[r["s2"].pk], auditor=erin, confirmed=True, reason="reads the fix")
    flag.refresh_from_db()
    assert flag.confirmed is True and not ScanLabel.objects.filter(rollout=r["s2"]).exists()


def test_findings_stored_before_versions_are_labeled_by_their_rule_when_it_is_a_category(acme, erin):
    r = scan_world(acme)
    ScanLabel.objects.all().delete()
    for reason in ("test_skip: @pytest.mark.skip added to test_widget", "upstream_history: git log --all"):
        CheatDecision.objects.create(rollout=r["s1"], source="prescreen", author="prescreen", reason=reason)
    ids = list(CheatDecision.objects.filter(rollout=r["s1"]).values_list("pk", flat=True))
    decide_cheats(decision_ids=ids, confirmed=False, user=erin, reason="a skip on an unnamed test")
    # gold_identity: the world's older finding on s #1; upstream_history is no category any more
    assert {k: v[0] for k, v in labels_of(r["s1"]).items()} == {"test_skip": "honest", "gold_identity": "honest"}


def test_deciding_one_signal_labels_its_rollout_as_that_decision_puts_it(acme, erin):
    r = scan_world(acme)
    finding = CheatDecision.objects.get(rollout=r["real1"], author=f"project_fetch@{BY_SLUG['project_fetch'].version}")
    decide_cheat(decision=finding, confirmed=False, user=erin, reason="a docs page, not the fix")
    assert labels_of(r["real1"]) == {"project_fetch": ("honest", "audit", "erin", "a docs page, not the fix")}


def test_deciding_rollouts_takes_no_more_queries_than_before_labels_were_written(acme, erin, django_assert_num_queries):
    """decide_cheats reads and locks the rollouts' signals with their steps and findings in one
    query, where it used to lock, then read the steps (two); it updates in one, and labels in
    one when a scanner found something. Measured on this world with the code before labels:
    15 queries for the first decision of a step (mark_stale creates the step's computation)
    and 11 for the next, each plus the savepoint pair of its transaction: 17 and 13."""
    r = scan_world(acme)
    plain = CheatDecision.objects.create(rollout=r["s2"], source="grader", author="llm-grader@1", reason="x")
    with django_assert_num_queries(14 + 2):  # one fewer: no finding, no label
        decide_cheats(decision_ids=[plain.pk], confirmed=True, user=erin)
    found = list(CheatDecision.objects.filter(rollout=r["real1"]).values_list("pk", flat=True))
    with django_assert_num_queries(11 + 2):  # the same: the label takes the query the steps took
        decide_cheats(decision_ids=found, confirmed=True, user=erin)
