"""How far the grading of a step has come, and whether its advantages are final (a selector).

A mixed group is *graded* when its latest verdict is valid, *settled* when that verdict
settled it without a model call because its passing patches are byte-identical (a
fallback, grading.verdicts.identical), *invalid* or *timeout* when it is otherwise not valid,
and *pending* while it has no verdict and its run's grading deadline has not passed
since it was stored or last queued for grading, unless its grading *failed*: a job of it gave
up with no verdict (retries and resends spent, grading.jobs.recovery) and none is queued or
running, so nothing will grade it; it falls back at once. A group with a pass is *scanning* from when
the scanners are asked to read it until they have (grading.jobs.scans.queue_scans), or until the
run's grading deadline has passed since. A step is *final* when no group is pending or scanning:
from then on its advantages only change if someone changes the method's inputs (a late
verdict, a cheat decision, a mapping), and each such change bumps `inputs_version`.
Groups that are not graded when the step turns final fall back to baseline advantages.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Max, Q
from django.utils import timezone

from grading.method.services.computation import policy_verdicts
from grading.models import GradingJob, Group, Step, Verdict

SETTLED = "settled"  # a latest verdict settled without a model call (grading.verdicts.identical)


@dataclass(frozen=True)
class StepStatus:
    run: str
    step: int
    groups: int
    mixed: int
    graded: int
    invalid: int
    timeout: int
    pending: int
    fallback: int
    final: bool
    inputs_version: int
    deadline: datetime | None  # when the last pending group falls back; None when nothing is pending
    failed: int = 0  # groups falling back because their grading gave up (among `fallback`)
    failures: tuple[dict, ...] = ()  # the first FAILURES_SHOWN of them: group, grader, retries, resends, error
    settled: int = 0  # groups settled without a model call, identical patches (among `fallback`, not in `invalid`)
    scanning: int = 0  # groups the scanners have not read yet: the step is not final while any is

    def as_dict(self) -> dict:
        data = asdict(self)
        data["deadline"] = self.deadline.isoformat() if self.deadline else None
        return data

    @property
    def header(self) -> str:
        """The counts as one response header value."""
        return ", ".join(
            f"{key}={getattr(self, key)}"
            for key in ("groups", "mixed", "graded", "invalid", "timeout", "pending", "fallback", "settled")
        )


def step_status(step: Step, *, now: datetime | None = None) -> StepStatus:
    """Counts of one step in four queries, whatever its size (five when grading failed)."""
    now = now or timezone.now()
    run = step.run
    version = Step.objects.values_list("inputs_version", flat=True).get(pk=step.pk)
    # Groups the scanners have not read yet (grading.jobs.scans.queue_scans), in the same query
    # as the count: each holds the step until it is scanned or its deadline has passed.
    scan_open = Q(scan_due_at__gt=now - timedelta(seconds=run.grading_deadline_seconds))
    counts = step.groups.aggregate(
        n=Count("id"), scanning=Count("id", filter=scan_open), due=Max("scan_due_at", filter=scan_open)
    )
    groups, scanning = counts["n"], counts["scanning"]
    mixed = dict(step.groups.filter(is_mixed=True).values_list("id", "created_at"))
    latest: dict[int, str] = {}
    # A jury's members' verdicts are not the group's until the jury's is made; a campaign's
    # bench-only verdicts never are (the advantages read the same ones).
    verdicts = policy_verdicts(Verdict.objects.filter(group__step=step, group__is_mixed=True), run)
    rows = verdicts.order_by("group_id", "-created_at", "-id").values_list("group_id", "status", "settled_by")
    for group_id, status, settled_by in rows:
        if settled_by == Verdict.SettledBy.IDENTICAL_PATCHES:
            status = SETTLED  # counted apart from the grader's own invalid verdicts
        latest.setdefault(group_id, status)
    waiting = [group_id for group_id in mixed if group_id not in latest]
    jobs = Group.objects.filter(pk__in=waiting).annotate(
        q=Max("grading_jobs__queued_at"),
        live=Count("grading_jobs", filter=Q(grading_jobs__status__in=[GradingJob.Status.QUEUED, GradingJob.Status.RUNNING])),
        gave_up=Count("grading_jobs", filter=Q(grading_jobs__status=GradingJob.Status.FAILED, grading_jobs__verdict=None)),
    )
    requeued, failed = {}, []
    for group_id, queued_at, live, gave_up in jobs.values_list("id", "q", "live", "gave_up") if waiting else ():
        requeued[group_id] = queued_at
        if gave_up and not live:
            failed.append(group_id)
    lost = set(failed)
    deadlines = [run.falls_back_at(stored_at=mixed[g], queued_at=requeued.get(g)) for g in waiting if g not in lost]
    open_deadlines = [d for d in deadlines if d > now]
    if scanning:  # the last unscanned group holds the step until its deadline
        open_until = [*open_deadlines, counts["due"] + timedelta(seconds=run.grading_deadline_seconds)]
    else:
        open_until = open_deadlines
    graded = sum(1 for s in latest.values() if s == Verdict.Status.VALID)
    settled = sum(1 for s in latest.values() if s == SETTLED)
    invalid = sum(1 for s in latest.values() if s == Verdict.Status.INVALID)
    timeout = sum(1 for s in latest.values() if s == Verdict.Status.TIMEOUT)
    pending = len(open_deadlines)
    return StepStatus(
        run=run.name,
        step=step.number,
        groups=groups,
        mixed=len(mixed),
        graded=graded,
        invalid=invalid,
        timeout=timeout,
        pending=pending,
        fallback=len(mixed) - graded - pending,
        final=pending == 0 and not scanning,
        inputs_version=version,
        deadline=max(open_until) if open_until else None,
        failed=len(failed),
        failures=_failures(failed) if failed else (),
        settled=settled,
        scanning=scanning,
    )


FAILURES_SHOWN = 5


def _failures(group_ids: list[int]) -> tuple[dict, ...]:
    """The first FAILURES_SHOWN failed groups' jobs that gave up, by group uid (one query)."""
    rows = (
        GradingJob.objects.filter(group_id__in=group_ids, status=GradingJob.Status.FAILED, verdict=None)
        .order_by("group__uid", "grader")
        .values_list("group__uid", "grader", "retries", "resends", "error")[:FAILURES_SHOWN]
    )
    return tuple(
        {"group": uid, "grader": grader, "retries": retries, "resends": resends, "error": error[:500]}
        for uid, grader, retries, resends, error in rows
    )


MAX_WAIT_SECONDS = 300
POLL_SECONDS = 0.5


def wait_until_final(step: Step, *, seconds: float, poll: float = POLL_SECONDS) -> StepStatus:
    """The step's status as soon as it is final, or after `seconds` (at most MAX_WAIT_SECONDS).

    A poll of four small queries every `poll` seconds; the caller's thread waits (see
    docs/api.md for how the server is sized so waiting trainers cannot starve pages).
    """
    give_up = time.monotonic() + min(seconds, MAX_WAIT_SECONDS)
    while True:
        status = step_status(step)
        left = give_up - time.monotonic()
        if status.final or left <= 0:
            return status
        nap = min(poll, left)
        if status.deadline is not None:  # wake when the last pending group falls back, if sooner
            nap = min(nap, max(0.01, (status.deadline - timezone.now()).total_seconds()))
        time.sleep(nap)
