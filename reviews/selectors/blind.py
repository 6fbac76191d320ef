"""Who must not see grader fields yet: open blind assignments, the groups the queue may still
serve a person blind, and verdicts a person has not been shown."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q, QuerySet

from grading.models import ROLE_CAPABILITIES, Capability, ComparisonEntry, Group, Membership, Project, Run, Verdict
from reviews.models import Assignment, Reveal, ReviewPolicy
from reviews.selectors.queue import may_be_served

# Roles whose figures leave out the groups the queue may still serve them blind: those who may
# be served (review) and do not manage the project. An admin fits and activates mappings on
# every group's figures and so sees them; their own open blind groups stay out as for anyone.
_WITHHOLD_QUEUED = frozenset(
    role for role, caps in ROLE_CAPABILITIES.items() if Capability.REVIEW in caps and Capability.MANAGE not in caps
)


def open_blind_group_ids(*, project: Project, user) -> QuerySet:
    """Groups of the project this person still has to judge blind: an open, blind assignment
    they have not asked to reveal. No figure derived from the grader's verdict on these may
    reach them, however aggregated (a step or repo slice can hold just their group). Lazy:
    used as a subquery it costs no query of its own."""
    if user is None or not getattr(user, "is_authenticated", False):
        return Assignment.objects.none().values_list("group_id", flat=True)
    return Assignment.objects.filter(reviewer=user, group__run__project=project).open_blind().values_list("group_id", flat=True)


def blind_comparison_sources(*, project: Project, user) -> QuerySet:
    """The rollouts copied into comparison groups this person judges blind (open_blind_group_ids):
    their sources, which name the run a lane came from. Lazy, as a subquery; never a NULL (a
    deleted source), which would make NOT IN match nothing."""
    return ComparisonEntry.objects.filter(
        rollout__group_id__in=open_blind_group_ids(project=project, user=user), source__isnull=False
    ).values_list("source_id", flat=True)


@dataclass(frozen=True)
class Withheld:
    """The groups a person's figures leave out (withheld_groups), in two parts the API counts."""

    open_blind: frozenset[int] = frozenset()  # their open blind assignments
    queued: frozenset[int] = frozenset()  # groups the queue may still serve them blind

    @property
    def groups(self) -> frozenset[int]:
        return self.open_blind | self.queued


def withheld_groups(*, project: Project, user) -> Withheld:
    """Groups of the project no figure shown to this person may count (agreement, calibration,
    the grader bench): their open blind groups (open_blind_group_ids), and, when the policy
    is blind and their role may be served groups and does not manage the project, every
    group the queue may still serve them (reviews.selectors.queue.may_be_served).

    Why the second part: a figure that leaves out only the open blind groups moves when
    "judge next" opens one, by exactly that group, and the difference is its grader's and
    its other reviewer's tiers. Leaving the group out from before it can be handed out
    until they judge, skip or choose to see it keeps every figure still across the hand-out.
    A slot held by someone else's lease does not put a group back (the lease lapses); a
    group that wants no more reviewers comes back, since it is served to nobody. One query.
    """
    if user is None or not getattr(user, "is_authenticated", False):
        return Withheld()
    open_blind = Assignment.objects.filter(group=OuterRef("pk"), reviewer=user).open_blind()
    queued = Q(
        may_be_served(user),
        Exists(Membership.objects.filter(project=project, user=user, role__in=_WITHHOLD_QUEUED)),
        ~Exists(ReviewPolicy.objects.filter(project=project, blind=False)),  # no row: the defaults, blind
    )
    rows = (
        Group.objects.filter(run__project=project)
        .annotate(is_open_blind=Exists(open_blind))
        .filter(Q(is_open_blind=True) | queued)
        .values_list("pk", "is_open_blind")
    )
    found = list(rows)
    return Withheld(
        open_blind=frozenset(pk for pk, is_open in found if is_open),
        queued=frozenset(pk for pk, is_open in found if not is_open),
    )


def open_blind_count(*, project: Project, user, run: Run) -> int:
    """How many groups of `run` this person still has to judge blind (open_blind_group_ids)."""
    return open_blind_group_ids(project=project, user=user).filter(group__run=run).count()


def open_blind_groups(*, project: Project, user) -> set[int]:
    return set(open_blind_group_ids(project=project, user=user))


def needs_browse_reveal(*, user, group: Group, verdict: Verdict | None) -> bool:
    """Grader fields about to be shown to someone who has not seen this verdict yet."""
    if verdict is None:
        return False
    return not Reveal.objects.filter(group=group, user=user, verdict=verdict).exists()
