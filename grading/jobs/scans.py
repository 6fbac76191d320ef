"""The scanners over stored groups: run after ingest on every group with a pass (queue_scans,
scan_groups) and inside each grading job (record_prescreen), storing what they find as the
rollouts' cheat decisions."""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from grading.grader.prescreen import screen_group
from grading.method.services.staleness import mark_stale
from grading.models import CheatDecision, Group, Rollout
from grading.queueing import queue
from grading.registry.future_history import holds_future_history
from grading.registry.workspaces import load_workspace

logger = logging.getLogger(__name__)

SCAN_GROUPS = "grading.scan_groups"  # grading.jobs.tasks.scan_groups_task


def record_prescreen(*, group: Group, workspace, stale_steps: set[int] | None = None) -> int:
    """Store the scanners' findings on the group's rollouts (grading.grader.prescreen): one
    decision per rollout and scanner version, citing every finding of it, so running a version
    again on a rollout does nothing (whatever an auditor wrote on its decision since).

    A finding that makes its rollout a cheat (a leak, or a tampering that scored:
    prescreen.catalogue.is_cheat) is stored decided — confirmed by the scanner, so the reward
    is zeroed before the statistics as for any confirmed cheat (docs/method.md §1), until an
    auditor overturns it. Any other finding (a tampering whose tests still ran, test lines
    changed) is stored open: evidence for the auditor and the grader, never a cheat by itself.
    Returns how many decisions were stored now. Given `stale_steps`, a step with a new cheat is
    marked stale and added to it, its recomputation left to the caller (mark_stale)."""
    workspace.future_history = holds_future_history(group.run.project, workspace.instance_id)
    signals = screen_group(workspace)
    if not signals:
        return 0
    rollouts = {r.index: r for r in Rollout.objects.filter(group=group).only("id", "index")}
    known = set(
        CheatDecision.objects.filter(rollout__group=group, source=CheatDecision.Source.PRESCREEN).values_list(
            "rollout_id", "author"
        )
    )
    found: dict[tuple[int, str], list] = {}
    for signal in signals:
        rollout = rollouts.get(signal.rollout)
        if rollout is not None and (rollout.pk, signal.scanner) not in known:
            found.setdefault((rollout.pk, signal.scanner), []).append(signal)
    now = timezone.now()
    fresh = []
    for (rollout_id, scanner), same in found.items():
        cheat = any(s.cheat for s in same)
        first = next((s for s in same if s.cheat), same[0])
        more = f" (and {len(same) - 1} more)" if len(same) > 1 else ""
        fresh.append(
            CheatDecision(
                rollout_id=rollout_id,
                source=CheatDecision.Source.PRESCREEN,
                reason=f"{first.signal}: {first.detail}{more}"[:1000],
                author=scanner,
                evidence=[s.evidence.as_dict() for s in same if s.evidence][:50],
                confirmed=True if cheat else None,
                decided_at=now if cheat else None,
            )
        )
    CheatDecision.objects.bulk_create(fresh)
    if any(d.confirmed for d in fresh):
        mark_stale(step_ids=[group.step_id], recompute=stale_steps is None)
        if stale_steps is not None:
            stale_steps.add(group.step_id)
    return len(fresh)


def queue_scans(*, group_ids: list[int]) -> None:
    """Scan these stored groups once the transaction that stored them commits (scan_groups):
    every group with a pass, graded or not, so a cheat in a group no grader reads is zeroed too.
    Call it inside that transaction; a broker fault after the commit loses no stored row.

    The groups are marked due first: their step is not final until they are scanned, or until
    the run's grading deadline has passed since (a worker that never comes holds no trainer
    longer than grading would), so a trainer's final advantages already have the scanners'
    cheats zeroed (grading.waits.progress). They are marked in the storing transaction, so no
    reader ever sees them stored and not yet due (a trainer reading the step between the commit
    and the hook would take advantages no scanner had read), and a transaction that rolls back
    marks nothing."""
    if not group_ids:
        return
    Group.objects.filter(pk__in=group_ids).update(scan_due_at=timezone.now())
    transaction.on_commit(lambda: queue(SCAN_GROUPS, group_ids=group_ids), robust=True)


def scan_groups(*, group_ids: list[int]) -> int:
    """Run the scanners over the passing rollouts of these groups and store what they find
    (record_prescreen; a scanner version already run on a rollout stores nothing). A failing
    rollout's reward is 0 already, so a cheat there moves no credit: the grading job, which
    reads the whole group, scans those. Returns how many decisions were stored.

    A step with a new cheat is marked stale in the group's own transaction and recomputed once
    after every group is read, not once per such group (with eager Celery, inside the request
    that stored them: benchmarks/ingest.py)."""
    stored = 0
    cheated: set[int] = set()
    Group.objects.filter(pk__in=group_ids, scan_due_at__isnull=False, n_passed=0).update(scan_due_at=None)
    for group in Group.objects.filter(pk__in=group_ids, n_passed__gt=0).select_related("run__project", "task", "step"):
        try:
            workspace = load_workspace(group, passed_only=True)  # a failing rollout's body is never read
            with transaction.atomic():
                stored += record_prescreen(group=group, workspace=workspace, stale_steps=cheated)
                Group.objects.filter(pk=group.pk).update(scan_due_at=None)
        except Exception:  # one group's failure must not leave the others unread; it stays due
            logger.exception("scanning group %s failed; its step waits until its deadline", group.pk)
    if cheated:
        mark_stale(step_ids=cheated)
    return stored
