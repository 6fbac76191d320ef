"""What the queue serves: the groups a reviewer may be handed, best first, and their place in it.

The queue holds the groups of a project to judge (Group.to_judge): its mixed groups (only they
carry signal, docs/method.md §1) and the cross-run groups of its blind comparisons. A
group wants one reviewer, or two for the overlap share that measures people against
each other. The share is picked by group id (`id·19 mod 100 < overlap·100`), so the
same groups stay in the overlap set however often the queue is asked, spread evenly over
every hundred ids. Open assignments count toward a group's reviewers for the policy's
lease, then the group goes back to the queue.

Order: groups with a valid grader verdict first (only they pair a grader tier with a
human one), by how much credit the verdict moves, Σ|A* − A| over the group under the
run's active mapping (what a wrong verdict costs the trainer), then by step and uid.
With the policy's `disagreements_first` (the default), ahead of that order: the groups
the run's jury waits on for a person (until the step's deadline), then the widest tier gap
between two graders (where a person's word teaches the most). All of it is stored on the
group when it changes (a verdict, a step's computation, a mapping activation:
grading.verdicts.disagreements, grading.method.services), never recomputed per request.

Why a group is next (`why_next`) is said only to those who manage the project, and never
on a group they judge blind (reviews.access.sees_why_next): it is derived from verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, TypedDict

from django.db.models import Case, Count, Exists, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value, When, Window
from django.db.models.functions import Coalesce, Mod
from django.db.models.lookups import LessThan
from django.utils import timezone

from grading.models import Group, Project, Run
from reviews.models import Assignment, Judgment, Reveal, ReviewPolicy
from reviews.selectors.lanes import with_blind_fields

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class QueueAnnotations(TypedDict):
    wanted: int  # reviewers the group wants (wanted_reviewers)
    taken: int  # its assignments that count toward the policy (counts_toward)
    graded: bool  # has_valid_verdict
    impact: float  # credit_moved


if TYPE_CHECKING:
    QueuedGroup = WithAnnotations[Group, QueueAnnotations]

# The two orders, each the column order of a partial index (grading.Group.Meta.indexes), so
# the first candidate is one index walk whichever the policy names.
QUEUE_ORDER = ("-has_valid_verdict", "-credit_moved", "step_number", "uid")  # group_review_queue
DISAGREEMENTS_FIRST = ("-awaits_person", "-grader_gap", *QUEUE_ORDER)  # group_review_queue_split

OVERLAP_STRIDE = 19  # coprime with 100: id·19 mod 100 runs through every residue once per hundred ids


def policy_for(project: Project) -> ReviewPolicy:
    """The project's review policy, or its defaults (unsaved) until someone sets one: a read,
    so no page creates the row (update_policy does)."""
    return ReviewPolicy.objects.filter(project=project).first() or ReviewPolicy(project=project)


def wanted_reviewers(policy: ReviewPolicy):
    """How many reviewers each group wants, as a SQL expression over the group's id (the
    overlap share of groups, spread evenly over ids, wants two)."""
    slot = Mod(F("id") * OVERLAP_STRIDE, 100)
    return Case(When(LessThan(slot, round(policy.overlap * 100)), then=Value(2)), default=Value(1), output_field=IntegerField())


def queue_groups(
    *, project: Project, reviewer, run: Run | None = None, policy: ReviewPolicy | None = None
) -> QuerySet[QueuedGroup]:
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
        .filter(counts_toward(policy))
        .order_by()
        .values("group")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return (
        Group.objects.filter(run_id__in=run_ids)
        .filter(may_be_served(reviewer))
        .annotate(
            wanted=wanted_reviewers(policy),
            taken=Coalesce(Subquery(taken, output_field=IntegerField()), 0),
            graded=F("has_valid_verdict"),
            impact=F("credit_moved"),
        )
        .filter(taken__lt=F("wanted"))
        .select_related("step", "task", "run")
        .order_by(*queue_order(policy))
    )


def may_be_served(reviewer) -> Q:
    """The groups the queue may serve `reviewer`, now or later: to judge, still wanting reviews,
    and never served to them (assigned or skipped), shown to them (a Reveal) or judged by
    them. queue_groups narrows it to those with a reviewer slot free now; a slot held by
    someone else's open assignment frees when its lease lapses, so it is not part of this."""
    return Q(
        ~Exists(Assignment.objects.filter(group=OuterRef("pk"), reviewer=reviewer)),
        ~Exists(Reveal.objects.filter(group=OuterRef("pk"), user=reviewer)),
        ~Exists(Judgment.objects.filter(group=OuterRef("pk"), reviewer=reviewer)),
        to_judge=True,
        awaits_review=True,
    )


def queue_order(policy: ReviewPolicy) -> tuple[str, ...]:
    return DISAGREEMENTS_FIRST if policy.disagreements_first else QUEUE_ORDER


def why_next(group: Group, *, policy: ReviewPolicy, now: datetime | None = None) -> str:
    """Why the queue puts `group` where it is, in a few words (the first key of the policy's
    order that sets it apart). Derived from verdicts: for those reviews.access.sees_why_next allows."""
    if policy.disagreements_first:
        until = group.awaits_person_until
        if group.awaits_person and until is not None and until > (now or timezone.now()):
            return f"a jury waits for you until {timezone.localtime(until):%H:%M}"
        if group.grader_gap:
            tiers, rollouts = group.grader_gap, group.grader_gap_rollouts
            return f"graders differ by {tiers} tier{'s' * (tiers != 1)} on {rollouts} rollout{'s' * (rollouts != 1)}"
    if group.has_valid_verdict:
        return f"its verdict moves {group.credit_moved:.3f} of credit (Σ|A* − A|)"
    return "no grader verdict yet: by step"


def counts_toward(policy: ReviewPolicy) -> Q:
    """Assignments that hold a group's reviewer slot: submitted ones, and open ones within the lease."""
    lease_start = timezone.now() - timedelta(minutes=policy.lease_minutes)
    return Q(status=Assignment.Status.SUBMITTED) | Q(status=Assignment.Status.OPEN, created_at__gte=lease_start)


def taken_slots(group: Group, policy: ReviewPolicy) -> int:
    return Assignment.objects.filter(group=group).filter(counts_toward(policy)).count()


QUEUE_COUNT_CAP = 1_000  # groups still waiting are counted up to this ("of 1,001+")


@dataclass(frozen=True)
class QueuePlace:
    """Where a group stands in this person's queue: how many they finished before it (judged
    or skipped), how many more it could still serve them, and the last one they finished."""

    done: int
    waiting: int | None  # None when this group is not theirs to judge now (nothing counted)
    capped: bool  # more than QUEUE_COUNT_CAP wait
    previous: Assignment | None
    why: str = ""  # why the queue served it (why_next), when asked for and the group is theirs to judge now

    @property
    def position(self) -> int:
        return self.done + 1

    @property
    def total(self) -> int:
        return self.done + 1 + (self.waiting or 0)


def queue_place(*, assignment: Assignment, group: Group, reviewer, explain: bool = False) -> QueuePlace:
    """This person's place in their queue on `assignment`'s group (the group page's "group 3
    of 12 in your queue" and "previous group"): their finished assignments of the project
    other than this one, counted with the latest of them in one query; while the assignment
    is open, the groups the queue could still serve them after it (queue_groups, counted up
    to QUEUE_COUNT_CAP: two more queries, the policy and the count), and with `explain`
    why it was served (why_next, from the same policy: no query).
    `group` and `reviewer`: the assignment's, as the page already holds them."""
    project = group.run.project
    latest = (
        Assignment.objects.filter(
            reviewer=reviewer, group__run__project=project, status__in=[Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED]
        )
        .exclude(pk=assignment.pk)
        .select_related("group__run")
        .annotate(n_done=Window(Count("pk")))
        .order_by("-finished_at", "-pk")
        .first()
    )
    done = latest.n_done if latest is not None else 0
    waiting, why = None, ""
    if assignment.is_open:
        policy = policy_for(project)
        waiting = queue_groups(project=project, reviewer=reviewer, policy=policy)[: QUEUE_COUNT_CAP + 1].count()
        why = why_next(group, policy=policy) if explain else ""
    capped = waiting is not None and waiting > QUEUE_COUNT_CAP
    return QueuePlace(
        done=done, waiting=min(waiting, QUEUE_COUNT_CAP) if waiting is not None else None, capped=capped, previous=latest, why=why
    )


def open_assignment(*, group: Group, reviewer) -> Assignment | None:
    """`reviewer`'s open assignment on `group`, if any."""
    return Assignment.objects.filter(group=group, reviewer=reviewer, status=Assignment.Status.OPEN).first()


def assignment_for(*, group: Group, reviewer) -> Assignment | None:
    """`reviewer`'s assignment on `group` (open or finished), with the project's blind fields;
    its group is `group`, the page's copy."""
    assignment = with_blind_fields(Assignment.objects.filter(group=group, reviewer=reviewer)).first()
    if assignment is not None:
        assignment.group = group
    return assignment
