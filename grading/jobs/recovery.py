"""Grading jobs are never lost: a task that meets an infrastructure error is retried, a job
that no worker took or finished is sent again by a sweep, and what gives up says why.

Two ways a group could sit `queued` with nothing behind it, each closed here:

- **The task fails around the model call.** A database or broker error (PostgreSQL refusing
  connections under load, a broker that went away) before the grader is called or while its
  verdict is stored: the task is retried after GAGAR_GRADING_RETRY_BACKOFF · 2ⁿ seconds
  (capped at GAGAR_GRADING_RETRY_BACKOFF_MAX, with jitter so a burst does not come back in
  step), at most GAGAR_GRADING_RETRIES times, each retry written on the job (`retries`,
  `error`). Then the job is `failed` with the error, and with no verdict its group falls back
  at once rather than at the deadline (grading.waits.progress). The model conversation is not
  retried here: the backend retries its own API calls, and a grader that fails leaves an
  invalid verdict. The trade-off: a verdict whose *storing* failed is lost with the worker's
  memory, so the retry grades the group again (one more model call). That is safe only because
  `grade_group` is idempotent (a verdict that did land is found, no second call) and the
  verdict is unique per group and grader; it costs a conversation, which is the price of
  never holding a result outside the database.
- **The task never runs or never ends.** A message lost to the broker, a retry that could not
  be sent, a job whose worker was killed at the hard time limit with the message acked, or a
  failure recorded nowhere because the database was down: the sweep (Celery beat, every
  minute) sends such a job again, at most GAGAR_GRADING_SWEEP_RESENDS times, then fails it
  ("lost: …"). The broker cannot be asked cheaply whether a task is alive, so the sweep reads
  the job's timestamps: `running` past the task's hard time limit + GAGAR_GRADING_SWEEP_MARGIN
  (no task runs past it), or `queued` since GAGAR_GRADING_QUEUED_LIMIT before now (its
  `queued_at`, or `due_at` of its latest retry or resend) while no grading job at all started
  in that window: workers busy on a backlog start a task at least once a time limit, so a
  quiet window means nobody is taking messages, whatever order they are taken in. A job sent
  again while its first message still waits costs nothing once a verdict exists; two
  deliveries graded at once keep one verdict (the constraint) at one extra call. A job sent
  again loses its claim (grading.jobs.scheduling): the task that held it is taken for dead,
  and the new message claims the best job then queued, which may be this one or another.

A campaign's groups are left to the campaign (its chunk is redelivered and counts each group
once), so the sweep skips the jobs of a grader a campaign runs on that group.
"""

from __future__ import annotations

import logging
import random
from datetime import datetime, timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Exists, OuterRef, Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

from grading.grader.heuristic import HeuristicGrader
from grading.jobs.grade import GRADE_GROUP, finish_job
from grading.models import CampaignGroup, GradingJob, Group, Verdict
from grading.queueing import queue
from grading.registry.backends import GraderUnavailable, grader_name
from grading.registry.defined import defined_version

logger = logging.getLogger(__name__)

# Errors of the infrastructure, not of the grader: worth the task's retry.
INFRASTRUCTURE_ERRORS = (OperationalError, InterfaceError, BrokerError)
UNRECORDED = (OperationalError, InterfaceError, BrokerError, GraderUnavailable)  # what keeps a job from being written

SWEEP_BATCH = 500  # jobs one sweep takes; the next sweep takes the rest
ERROR_CHARS = 2000


def describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()[:ERROR_CHARS]


def retry_delay(retry: int, *, base: float, cap: float, rng: random.Random | None = None) -> float:
    """Seconds before retry number `retry` (0-based): base · 2^retry capped at `cap`, the upper
    half jittered ("equal jitter": at least half the step, so retries still back off)."""
    step = min(cap, base * 2 ** min(retry, 30))
    return step / 2 + (rng or random).uniform(0, step / 2)


def _job(group_id: int, backend: str, *, task_id: str, unclaimed: bool):
    """The group's job for `backend`'s grader when the task `task_id` holds it, or (when
    `unclaimed`) when no task does (a query to name the grader, one to read the job). Never
    a job another task claimed (grading.jobs.scheduling): that one is not this task's to write."""
    project_id = Group.objects.filter(pk=group_id).values_list("run__project_id", flat=True).first()
    if project_id is None:
        return GradingJob.objects.none()
    held = Q(claimed_by=task_id) | Q(claimed_by="") if unclaimed else Q(claimed_by=task_id)
    return GradingJob.objects.filter(held, group_id=group_id, grader=grader_name(backend, project_id))


def note_retry(*, group_id: int, backend: str, task_id: str, retry: int, of: int, delay: float, exc: BaseException) -> None:
    """Write retry number `retry` (1-based) of `of` on the job the task claimed: queued again
    (still claimed: the retry goes on with it), due after `delay`, the error it met. Nothing
    when it claimed none yet (the retry claims one). Best effort: with the database down
    nothing can be written, the retry still runs (and the sweep finds a job whose retries all
    went unrecorded)."""
    try:
        _job(group_id, backend, task_id=task_id, unclaimed=False).filter(verdict__isnull=True).update(
            status=GradingJob.Status.QUEUED,
            retries=retry,
            due_at=timezone.now() + timedelta(seconds=delay),
            error=f"retry {retry} of {of} in {delay:.0f} s after {describe(exc)}"[:ERROR_CHARS],
        )
    except UNRECORDED:
        logger.warning("could not record retry %s of group %s", retry, group_id, exc_info=True)


def give_up(*, group_id: int, backend: str, task_id: str, error: str) -> bool:
    """The task's retries are spent: its job is `failed` with `error` (or finished, when its
    verdict did land meanwhile). Its job is the one it claimed, else the one its message names
    while no other task holds that: a message that dies without a claim leaves one job without
    a message, and failing the named one keeps each queued job one message. (When another task
    holds the named job, the job left without a message is found by the sweep.) False when
    even that could not be written (the sweep will)."""
    try:
        jobs = _job(group_id, backend, task_id=task_id, unclaimed=True)
        job = jobs.first()
        if job is None:
            return False
        verdict = Verdict.objects.filter(group_id=group_id, grader=job.grader).first()
        if verdict is not None:
            finish_job(job, verdict, error="")
        else:
            fail(jobs, error)
    except UNRECORDED:
        logger.warning("could not mark the job of group %s failed", group_id, exc_info=True)
        return False
    return True


def fail(jobs, error: str) -> int:
    return jobs.filter(verdict__isnull=True).update(
        status=GradingJob.Status.FAILED, error=error[:ERROR_CHARS], finished_at=timezone.now()
    )


def backend_of(grader: str, project_id: int) -> str | None:
    """The backend a task grades `grader` with, when this desk runs it as it is named now."""
    if grader == HeuristicGrader.name:
        backend = "heuristic"
    elif grader.startswith("llm:"):
        backend = "llm"
    elif defined_version(project_id, grader) is not None:
        backend = grader
    else:
        return None
    try:
        return backend if grader_name(backend, project_id) == grader else None
    except GraderUnavailable:
        return None


def sweep(*, now: datetime | None = None) -> dict[str, int]:
    """Send again the jobs no task holds (module docstring), or fail them past their resends.

    Safe to run twice at once: each run locks the jobs it takes (skip_locked on PostgreSQL,
    the whole database on SQLite), and a job it sent is due now, so the other run skips it."""
    now = now or timezone.now()
    queued_limit = timedelta(seconds=settings.GAGAR_GRADING_QUEUED_LIMIT)
    running_limit = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + settings.GAGAR_GRADING_SWEEP_MARGIN)
    lost = Q(status=GradingJob.Status.RUNNING, started_at__lt=now - running_limit)
    if not GradingJob.objects.filter(started_at__gte=now - queued_limit).exists():  # nobody is taking messages
        lost |= Q(status=GradingJob.Status.QUEUED, sent__lt=now - queued_limit)
    campaign = CampaignGroup.objects.filter(group_id=OuterRef("group_id"), campaign__grader=OuterRef("grader"))
    counts = {"resent": 0, "failed": 0, "finished": 0}
    sends: list[tuple[int, str]] = []
    with transaction.atomic():
        jobs = list(
            GradingJob.objects.annotate(sent=Greatest("queued_at", Coalesce("due_at", "queued_at")))
            .filter(lost)
            .exclude(Exists(campaign))
            .select_for_update(skip_locked=True)
            .order_by("pk")[:SWEEP_BATCH]
        )
        if not jobs:
            return counts
        projects = dict(Group.objects.filter(pk__in={j.group_id for j in jobs}).values_list("id", "run__project_id"))
        verdicts = {
            (v.group_id, v.grader): v for v in Verdict.objects.filter(group_id__in=projects, grader__in={j.grader for j in jobs})
        }
        backends: dict[tuple[str, int], str | None] = {}
        for job in jobs:
            if (verdict := verdicts.get((job.group_id, job.grader))) is not None:  # stored, not finished
                finish_job(job, verdict, error="")
                counts["finished"] += 1
                continue
            key = (job.grader, projects[job.group_id])
            backend = backends[key] if key in backends else backends.setdefault(key, backend_of(*key))
            never_started = job.status == GradingJob.Status.QUEUED
            if backend is None:
                error = f"lost: the grader {job.grader} does not run here as named; queue the step again"
            elif job.resends >= settings.GAGAR_GRADING_SWEEP_RESENDS:
                what = "never picked up by a worker" if never_started else "its worker stopped without finishing"
                error = f"lost: {what} (sent {job.resends + 1} times)"
            else:
                GradingJob.objects.filter(pk=job.pk).update(  # unclaimed: the task that held it is gone
                    status=GradingJob.Status.QUEUED, resends=job.resends + 1, due_at=now, claimed_by=""
                )
                sends.append((job.group_id, backend))
                counts["resent"] += 1
                continue
            fail(GradingJob.objects.filter(pk=job.pk), error)
            counts["failed"] += 1
        transaction.on_commit(lambda: _send(sends))
    if any(counts.values()):
        logger.info("grading sweep: %s", counts)
    return counts


def _send(sends: list[tuple[int, str]]) -> None:
    for group_id, backend in sends:
        try:
            queue(GRADE_GROUP, group_id=group_id, backend=backend)
        except BrokerError:  # still due: the next sweep past the limit sends it again
            logger.warning("could not send the grading of group %s again", group_id, exc_info=True)
