"""Handing out groups: a reviewer's next group, skipping, and the project's review policy.

The queue holds the mixed groups of a project (only they carry signal, docs/method.md §1). A
group wants one reviewer, or two for the overlap share that measures people against
each other. The share is picked by group id (`id·19 mod 100 < overlap·100`), so the
same groups stay in the overlap set however often the queue is asked, spread evenly over
every hundred ids. Open assignments count toward a group's reviewers for the policy's
lease, then the group goes back to the queue.

Order: groups with a valid grader verdict first (only they pair a grader tier with a
human one), by how much credit the verdict moves, Σ|A* − A| over the group under the
run's active mapping (what a wrong verdict costs the trainer), then by step and uid.
Both are stored on the group when they change (a verdict, a step's computation, a mapping
activation), never recomputed per request.
"""

from __future__ import annotations

import random
from datetime import timedelta

from django.db import IntegrityError, connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Mod
from django.db.models.lookups import LessThan
from django.utils import timezone

from grading.models import Group, Project, Run
from grading.rollouts.blinding import BlindFields
from reviews.models import Assignment, Judgment, Reveal, ReviewPolicy

OVERLAP_STRIDE = 19  # coprime with 100: id·19 mod 100 runs through every residue once per hundred ids


def policy_for(project: Project) -> ReviewPolicy:
    policy, _ = ReviewPolicy.objects.get_or_create(project=project)
    return policy


@transaction.atomic
def update_policy(
    *, project: Project, overlap: float, blind: bool, lease_minutes: int, blind_fields: list[str] | None = None
) -> ReviewPolicy:
    """`blind_fields`: what a blind judge is not shown of a rollout (grading.rollouts.blinding;
    BlindFieldError for a name it does not know); None keeps the project's."""
    if not 0.0 <= overlap <= 1.0:
        raise ValueError("overlap must be between 0 and 1")
    if not 1 <= lease_minutes <= 7 * 24 * 60:
        raise ValueError("lease must be between 1 minute and 7 days")
    policy = ReviewPolicy.objects.select_for_update().get(pk=policy_for(project).pk)
    policy.overlap, policy.blind, policy.lease_minutes = overlap, blind, lease_minutes
    if blind_fields is not None:
        policy.blind_fields = BlindFields.parse(blind_fields).names
    policy.save(update_fields=["overlap", "blind", "lease_minutes", "blind_fields", "updated_at"])
    refresh_awaits_review(project=project, policy=policy)
    return policy


def wanted_reviewers(policy: ReviewPolicy):
    """How many reviewers each group wants, as a SQL expression over the group's id (the
    overlap share of groups, spread evenly over ids, wants two)."""
    slot = Mod(F("id") * OVERLAP_STRIDE, 100)
    return Case(When(LessThan(slot, round(policy.overlap * 100)), then=Value(2)), default=Value(1), output_field=IntegerField())


def queue_groups(*, project: Project, reviewer, run: Run | None = None, policy: ReviewPolicy | None = None) -> QuerySet[Group]:
    """Mixed groups this reviewer may be served, best first.

    The order and the reviews a group still wants are stored on the group (Group.
    has_valid_verdict, credit_moved, step_number, awaits_review), so the best candidate is
    the first row of one partial index (group_review_queue) that the reviewer has not seen:
    what is walked past is only groups held by open assignments and this reviewer's own
    skips, never the groups already reviewed, however many there are.
    """
    policy = policy or policy_for(project)
    run_ids = [run.pk] if run is not None else list(project.runs.values_list("pk", flat=True))
    taken = (
        Assignment.objects.filter(group=OuterRef("pk"))
        .filter(_counts_toward(policy))
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        Group.objects.filter(run_id__in=run_ids, is_mixed=True, awaits_review=True)
        .exclude(Exists(Assignment.objects.filter(group=OuterRef("pk"), reviewer=reviewer)))
        .exclude(Exists(Reveal.objects.filter(group=OuterRef("pk"), user=reviewer)))
        .exclude(Exists(Judgment.objects.filter(group=OuterRef("pk"), reviewer=reviewer)))
        .annotate(
            wanted=wanted_reviewers(policy),
            taken=Coalesce(Subquery(taken, output_field=IntegerField()), 0),
            graded=F("has_valid_verdict"),
            impact=F("credit_moved"),
        )
        .filter(taken__lt=F("wanted"))
        .select_related("step", "task", "run")
        .order_by("-has_valid_verdict", "-credit_moved", "step_number", "uid")
    )


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


def _counts_toward(policy: ReviewPolicy) -> Q:
    """Assignments that hold a group's reviewer slot: submitted ones, and open ones within the lease."""
    lease_start = timezone.now() - timedelta(minutes=policy.lease_minutes)
    return Q(status=Assignment.Status.SUBMITTED) | Q(status=Assignment.Status.OPEN, created_at__gte=lease_start)


def _taken(group: Group, policy: ReviewPolicy) -> int:
    return Assignment.objects.filter(group=group).filter(_counts_toward(policy)).count()


def shuffled_order(group: Group) -> list[int]:
    """A blind judge's order of the group's rollouts: passing first, then unknown, then
    failing, each shuffled, so the page's lanes (passing first) read A, B, C... in this order
    (reviews.selectors.lanes)."""
    rollouts = list(group.rollouts.order_by("index").values_list("index", "passed"))
    shuffle = random.SystemRandom().shuffle
    order = []
    for outcome in (True, None, False):
        batch = [index for index, passed in rollouts if passed is outcome]
        shuffle(batch)
        order += batch
    return order


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
            if _taken(group, policy) >= group.wanted:
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
