"""Which group a grading task grades: the best job its run still has queued.

Queueing a step sends one message per job (grading.jobs.grade._queue), but a message does
not decide which group is graded. When a grading task starts it *claims* a job: the one its
own task id already holds (a redelivered or retried message goes on with the job it had),
else the best unclaimed queued job of the run and grader its message names, in the order of
CLAIM_ORDER. Each message grades at most one job and each job is claimed by one task, so
the messages sent still equal the jobs queued, and a message that finds nothing left to
claim (its job was taken, graded by another path, or it was sent twice) does nothing.

The order is what keeps the most credit signal when the step's deadline passes before all
its groups are graded (a group without a verdict then falls back, docs/method.md §2):

1. the earliest step first: its deadline comes first (the run's deadline counts from when
   each group was stored or queued, and a run's steps arrive in order);
2. within a step, groups the run's policy settles without a model call first, when it
   settles identical patches (grading.verdicts.identical): they take no conversation, so they
   cost the backlog nothing. A group is a candidate when its passing rollouts form one patch
   cluster (distinct_solutions = 1, two passes or more): byte-identical patches always do, a
   candidate whose patches differ after all is graded at once like any other;
3. then the groups with the most distinct solutions among their passing rollouts
   (Group.distinct_solutions; not yet clustered last): the more the passing rollouts differ,
   the more a grader's tiers move credit between them;
4. then the most passing rollouts, then the group's id (a fixed order).

On PostgreSQL the claim locks the job it takes (skip_locked), so tasks starting at once
take different jobs; on SQLite (one writer at a time, eager Celery in `make run`) the same
query runs without a lock. The sweep of lost jobs (grading.jobs.recovery) clears the
claim of a job it sends again, so the new message can take it.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Case, Exists, F, IntegerField, OuterRef, Q, Value, When

from grading.models import CampaignGroup, GradingJob, Group
from grading.registry.backends import GraderUnavailable, grader_name


def claim_order(*, settle_identical: bool) -> list:
    """The order jobs are claimed in (module docstring), as order_by() terms over GradingJob."""
    order: list = [F("group__step_number").asc()]
    if settle_identical:
        candidate = Q(group__distinct_solutions=1, group__n_passed__gte=2)
        order.append(Case(When(candidate, then=Value(0)), default=Value(1), output_field=IntegerField()).asc())
    order += [F("group__distinct_solutions").desc(nulls_last=True), F("group__n_passed").desc(), F("group_id").asc()]
    return order


def claimable(run_id: int, grader: str):
    """The run's jobs for `grader` that a task may claim: queued, unclaimed, without a verdict,
    not a campaign's (a campaign grades its own groups, grading.jobs.campaigns)."""
    campaign = CampaignGroup.objects.filter(group_id=OuterRef("group_id"), campaign__grader=OuterRef("grader"))
    return GradingJob.objects.filter(
        group__run_id=run_id, grader=grader, status=GradingJob.Status.QUEUED, claimed_by="", verdict__isnull=True
    ).exclude(Exists(campaign))


def claim(*, group_id: int, backend: str, task_id: str) -> int | None:
    """The id of the group the task `task_id` (whose message names `group_id`) grades now, with
    its job claimed for it; None when there is nothing left for it to grade. Without a task id
    (the task's body called as a function) it grades the group named, claiming nothing."""
    if not task_id:
        return group_id
    row = Group.objects.filter(pk=group_id).values_list("run_id", "run__project_id", "run__settle_identical").first()
    if row is None:
        return None
    run_id, project_id, settle = row
    try:
        name = grader_name(backend, project_id)
    except GraderUnavailable:  # grade_group says why, on the job the message names
        return group_id
    mine = GradingJob.objects.filter(grader=name, claimed_by=task_id).values_list("group_id", "status").first()
    if mine is not None:  # a redelivery or a retry of this task: its own job, unless that is finished
        held, status = mine
        return held if status in (GradingJob.Status.QUEUED, GradingJob.Status.RUNNING) else None
    with transaction.atomic():
        job = (
            claimable(run_id, name)
            .select_for_update(skip_locked=True, of=("self",))
            .order_by(*claim_order(settle_identical=settle))
            .only("id", "group_id")
            .first()
        )
        if job is None:
            return None
        GradingJob.objects.filter(pk=job.pk).update(claimed_by=task_id)
    return job.group_id
