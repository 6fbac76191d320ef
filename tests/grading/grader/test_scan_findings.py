"""What the scanners' findings do once a group is graded (grading.jobs.scans.record_prescreen).

A leak, or a tampering that scored, is a cheat at once: stored confirmed by its scanner version,
so the method zeroes the reward before the statistics. A tampering that did not score is an open
signal for the auditor and changes nothing. Running the same scanner version again stores
nothing more, and an auditor's overturn stays in force.
"""

from __future__ import annotations

import pytest

from grading.grader.prescreen.catalogue import scanner_version
from grading.jobs.grade import grade_group
from grading.jobs.scans import record_prescreen
from grading.jobs.tasks import scan_groups_task
from grading.models import CheatDecision, Group, Rollout
from grading.registry.workspaces import load_workspace
from tests.helpers.audit_world import reward
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

FETCH = "curl -sL https://raw.githubusercontent.com/octo/widgets/main/w.py | head -50"
SKIP_OTHER = (
    "diff --git a/tests/test_other.py b/tests/test_other.py\n--- a/tests/test_other.py\n+++ b/tests/test_other.py\n"
    "@@ -1,3 +1,4 @@\n import pytest\n \n+@pytest.mark.skip(reason='flaky')\n def test_unrelated():\n"
)


def scanned_group(acme) -> Group:
    group = small_group("g@1", rewards=(1, 1, 0), FAIL_TO_PASS=["t::a"])
    leak = group["rollouts"][0]["messages"]
    leak.append({"role": "assistant", "content": f"```bash\n{FETCH}\n```", "action": FETCH, "observation": "y = 2"})
    group["rollouts"][1]["patch"] += SKIP_OTHER
    ingest_groups(acme, group)
    return Group.objects.get(uid="g@1")


@pytest.mark.django_db(transaction=True)
def test_a_leak_is_a_cheat_at_once_and_a_tampering_that_did_not_score_is_open(acme):
    group = scanned_group(acme)
    leaked, tampered, failed = (Rollout.objects.get(group=group, index=i) for i in range(3))
    grade_group(group_id=group.pk, backend="heuristic")  # scanned at ingest, and again by the grading job

    cheat = CheatDecision.objects.get(rollout=leaked, source="prescreen")
    assert (cheat.source, cheat.confirmed, cheat.author) == ("prescreen", True, scanner_version("project_fetch"))
    assert cheat.reason.startswith("project_fetch: ") and cheat.decided_at is not None
    assert cheat.evidence and cheat.evidence[0]["kind"] == "turn"
    assert reward(leaked) == 0.0  # zeroed before the statistics

    evidence = CheatDecision.objects.filter(rollout=tampered, source="prescreen")
    assert evidence.exists() and set(evidence.values_list("confirmed", flat=True)) == {None}
    assert reward(tampered) == 1.0 and not CheatDecision.objects.filter(rollout=failed).exists()


@pytest.mark.django_db(transaction=True)
def test_the_same_scanner_version_again_stores_nothing_and_an_overturn_stands(acme):
    from grading.verdicts.store import decide_cheat

    group = scanned_group(acme)
    grade_group(group_id=group.pk, backend="heuristic")
    stored = CheatDecision.objects.count()
    leaked = Rollout.objects.get(group=group, index=0)
    scanner = CheatDecision.objects.get(rollout=leaked, source="prescreen")
    decide_cheat(decision=scanner, confirmed=False, reason="a docs page, not the fix")
    assert record_prescreen(group=group, workspace=load_workspace(group)) == 0
    assert CheatDecision.objects.count() == stored and reward(leaked) == 1.0


@pytest.mark.django_db(transaction=True)
def test_every_stored_group_with_a_pass_is_scanned_graded_or_not(acme):
    """An all-pass group is never graded, and a run without auto-grading grades nothing: the
    scan after the ingest still zeroes a leak there."""
    group = small_group("all@1", rewards=(1, 1))
    group["rollouts"][1]["messages"].append(
        {"role": "assistant", "content": f"```bash\n{FETCH}\n```", "action": FETCH, "observation": "y = 2"}
    )
    ingest_groups(acme, group, small_group("none@1", instance_id="t-2", rewards=(0, 0)))
    honest, leaked = (Rollout.objects.get(group__uid="all@1", index=i) for i in range(2))
    assert list(CheatDecision.objects.values_list("rollout_id", "author", "confirmed")) == [
        (leaked.pk, scanner_version("project_fetch"), True)
    ]
    assert (reward(honest), reward(leaked)) == (1.0, 0.0)


@pytest.mark.django_db(transaction=True)
def test_a_step_is_not_final_until_its_groups_are_scanned_or_their_deadline_passes(acme, monkeypatch):
    """A trainer waiting for the step gets its final advantages with the scanners' cheats already
    zeroed: the step stays open while the scan task has not run, and a worker that never comes
    holds it no longer than the run's grading deadline."""
    from datetime import timedelta

    from django.utils import timezone

    from grading.jobs.scans import scan_groups
    from grading.waits.progress import step_status

    sent: list[list[int]] = []
    monkeypatch.setattr(scan_groups_task, "delay", lambda *, group_ids: sent.append(group_ids))
    group = small_group("g@1", rewards=(1, 1), FAIL_TO_PASS=["t::a"])  # all pass: no grader holds the step
    group["rollouts"][0]["messages"].append(
        {"role": "assistant", "content": f"```bash\n{FETCH}\n```", "action": FETCH, "observation": "y = 2"}
    )
    ingest_groups(acme, group, small_group("h@1", instance_id="t-2", rewards=(0, 0)))
    stored = Group.objects.get(uid="g@1")
    status = step_status(stored.step)
    assert (status.scanning, status.final, status.pending) == (1, False, 0)  # only the scan holds it
    assert status.deadline is not None and status.deadline > timezone.now()
    assert sent == [[stored.pk]] and Group.objects.get(uid="h@1").scan_due_at is None  # no pass: nothing to scan

    scan_groups(group_ids=sent[0])
    status = step_status(stored.step)
    assert (status.scanning, status.final) == (0, True)
    assert reward(Rollout.objects.get(group=stored, index=0)) == 0.0  # final, and the leak already zeroed

    Group.objects.filter(pk=stored.pk).update(
        scan_due_at=timezone.now() - timedelta(seconds=stored.run.grading_deadline_seconds + 1)
    )
    assert step_status(stored.step).final  # a scan that never came holds the step no longer than its deadline


@pytest.mark.django_db(transaction=True)
def test_a_group_whose_scan_fails_stays_due_and_the_others_are_read(acme, monkeypatch):
    from grading.jobs import scans as jobs

    sent: list[list[int]] = []
    monkeypatch.setattr(scan_groups_task, "delay", lambda *, group_ids: sent.append(group_ids))
    ingest_groups(acme, small_group("a@1", rewards=(1, 1)), small_group("b@1", instance_id="t-2", rewards=(1, 1)))
    broken = Group.objects.get(uid="a@1")
    real = jobs.record_prescreen

    def record(*, group, workspace, **options):
        if group.pk == broken.pk:
            raise RuntimeError("a scanner bug")
        return real(group=group, workspace=workspace, **options)

    monkeypatch.setattr(jobs, "record_prescreen", record)
    jobs.scan_groups(group_ids=[gid for ids in sent for gid in ids])
    assert Group.objects.get(uid="a@1").scan_due_at is not None  # its step waits, up to its deadline
    assert Group.objects.get(uid="b@1").scan_due_at is None


@pytest.mark.django_db(transaction=True)
def test_a_step_with_cheats_in_many_groups_is_recomputed_once_with_every_cheat_zeroed(acme, monkeypatch):
    """Scanned after ingest (with eager Celery, inside the request), three groups of one step
    each with a leak: the step is marked stale in each group's transaction and recomputed once,
    after the last, with all three rewards zeroed."""
    from grading.method.services import staleness

    queued: list[list[int]] = []
    real = staleness.queue_recompute
    monkeypatch.setattr(staleness, "queue_recompute", lambda ids: (queued.append(list(ids)), real(ids))[1])
    groups = []
    for n in range(3):
        group = small_group(f"leak{n}@1", instance_id=f"t-{n}", rewards=(1, 0))
        group["rollouts"][0]["messages"].append(
            {"role": "assistant", "content": f"```bash\n{FETCH}\n```", "action": FETCH, "observation": "y = 2"}
        )
        groups.append(group)
    ingest_groups(acme, *groups)
    leaked = [Rollout.objects.get(group__uid=f"leak{n}@1", index=0) for n in range(3)]
    assert all(CheatDecision.objects.get(rollout=r).confirmed for r in leaked)
    assert [ids for ids in queued if ids] == [[leaked[0].group.step_id]]  # one recomputation, not three
    assert [reward(r) for r in leaked] == [0.0, 0.0, 0.0]
