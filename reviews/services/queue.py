"""Handing out groups: a reviewer's next group, skipping, assigning, and the project's review policy.

What the queue serves and in which order is read by reviews.selectors.queue.
"""

from __future__ import annotations

from django.db import IntegrityError, connection, transaction
from django.db.models import BooleanField, Case, Count, IntegerField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.db.models.lookups import LessThan
from django.utils import timezone

from grading.models import Group, Project, Run
from grading.rollouts.blinding import BlindFields
from grading.verdicts.disagreements import expire_person_waits
from reviews.models import Assignment, Reveal, ReviewPolicy
from reviews.selectors.lanes import shuffled_order
from reviews.selectors.queue import policy_for, queue_groups, taken_slots, wanted_reviewers


@transaction.atomic
def update_policy(
    *,
    project: Project,
    overlap: float,
    blind: bool,
    lease_minutes: int,
    blind_fields: list[str] | None = None,
    disagreements_first: bool | None = None,
) -> ReviewPolicy:
    """`blind_fields`: what a blind judge is not shown of a rollout (grading.rollouts.blinding;
    BlindFieldError for a name it does not know); `disagreements_first`: the queue's order
    (reviews.selectors.queue); None keeps the project's."""
    if not 0.0 <= overlap <= 1.0:
        raise ValueError("overlap must be between 0 and 1")
    if not 1 <= lease_minutes <= 7 * 24 * 60:
        raise ValueError("lease must be between 1 minute and 7 days")
    policy, _ = ReviewPolicy.objects.select_for_update().get_or_create(project=project)
    policy.overlap, policy.blind, policy.lease_minutes = overlap, blind, lease_minutes
    if blind_fields is not None:
        policy.blind_fields = BlindFields.parse(blind_fields).names
    if disagreements_first is not None:
        policy.disagreements_first = disagreements_first
    policy.save(update_fields=["overlap", "blind", "lease_minutes", "blind_fields", "disagreements_first", "updated_at"])
    refresh_awaits_review(project=project, policy=policy)
    return policy


def refresh_awaits_review(*, project: Project, policy: ReviewPolicy | None = None, group_ids: list[int] | None = None) -> int:
    """Store whether each group (of the project, or these) still wants submitted reviews under
    the policy: one UPDATE. Called when a review is submitted and when the overlap changes;
    open assignments are left to queue_groups (they lapse with the lease)."""
    policy = policy or policy_for(project)
    submitted = (
        Assignment.objects.filter(group=OuterRef("pk"), status=Assignment.Status.SUBMITTED)
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    wanted = wanted_reviewers(policy)
    groups = Group.objects.filter(run__project=project)
    if group_ids is not None:
        groups = groups.filter(pk__in=group_ids)
    return groups.update(
        awaits_review=Case(
            When(LessThan(Coalesce(Subquery(submitted, output_field=IntegerField()), 0), wanted), then=Value(True)),
            default=Value(False),
            output_field=BooleanField(),
        )
    )


def next_assignment(*, project: Project, reviewer, run: Run | None = None) -> Assignment | None:
    """The reviewer's open assignment if they have one, else a new one on the best free group.

    Two reviewers asking at once lock different candidate rows (SKIP LOCKED on PostgreSQL),
    and the unique (group, reviewer) constraint keeps a person from being served a group twice.
    """
    open_ = (
        Assignment.objects.filter(reviewer=reviewer, status=Assignment.Status.OPEN, group__run__project=project)
        .select_related("group__run")
        .order_by("created_at")
        .first()
    )
    if open_ is not None and (run is None or open_.group.run_id == run.pk):
        return open_
    policy = policy_for(project)
    if policy.disagreements_first:  # a jury's wait past the step's deadline no longer puts a group first
        expire_person_waits()
    for _ in range(20):  # a candidate taken by someone else between read and lock: try the next best
        with transaction.atomic():
            candidates = queue_groups(project=project, reviewer=reviewer, run=run, policy=policy)
            if connection.features.has_select_for_update_skip_locked:
                candidates = candidates.select_for_update(skip_locked=True, of=("self",))
            group = candidates.first()
            if group is None:
                return None
            # The candidate query's count may predate an assignment committed just before we
            # locked the row; count again now that we hold it (READ COMMITTED sees that commit).
            if taken_slots(group, policy) >= group.wanted:
                continue
            try:
                with transaction.atomic():
                    return Assignment.objects.create(
                        group=group,
                        reviewer=reviewer,
                        blind=policy.blind,
                        order=shuffled_order(group) if policy.blind else [],
                    )
            except IntegrityError:
                continue
    return None


@transaction.atomic
def skip_assignment(*, assignment: Assignment) -> Assignment:
    """Give the group back; it is never served to this reviewer again."""
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.status != Assignment.Status.OPEN:
        raise ValueError("only an open assignment can be skipped")
    assignment.status = Assignment.Status.SKIPPED
    assignment.finished_at = timezone.now()
    assignment.save(update_fields=["status", "finished_at"])
    return assignment


def assign(*, group: Group, reviewer, blind: bool | None = None) -> Assignment:
    """An admin hands a specific group to a specific reviewer (idempotent). Someone who has
    already seen grader fields on the group (a logged Reveal) is never handed it blind."""
    policy = policy_for(group.run.project)
    blind = policy.blind if blind is None else blind
    if blind and Reveal.objects.filter(group=group, user=reviewer).exists():
        blind = False
    assignment, _ = Assignment.objects.get_or_create(
        group=group, reviewer=reviewer, defaults={"blind": blind, "order": shuffled_order(group) if blind else []}
    )
    return assignment
