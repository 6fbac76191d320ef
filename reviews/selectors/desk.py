"""Reads of the review desk: what one person may see and do on a group, queues, progress."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count, Q, QuerySet, Window

from grading import selectors as grading_selectors
from grading.models import Group, Membership, Project, Verdict
from grading.rollouts.blinding import lane_position
from reviews.models import Assignment, GroupReview, Judgment, JudgmentItem, Reveal
from reviews.selectors.lanes import Lanes, cluster_text, with_blind_fields


@dataclass
class ReviewContext:
    """How the group page treats this person: blind or not, may they judge, what they said."""

    assignment: Assignment | None
    judgment: Judgment | None  # their own review, once submitted
    review: GroupReview | None
    can_judge: bool
    can_adjudicate: bool
    blind: bool  # grader fields must not reach this person's HTML
    items: dict[int, dict] = field(default_factory=dict)  # rollout index -> their tier/rank/... (draft or submitted)
    others: list[Judgment] = field(default_factory=list)  # everyone's judgments, for adjudicators

    @property
    def version(self) -> int:
        return self.review.version if self.review else 0

    @property
    def judging(self) -> bool:
        return self.can_judge and self.judgment is None

    @property
    def order(self) -> list[int]:
        return list(self.assignment.order) if self.assignment and self.assignment.blind else []


def items_from_fields(draft: dict) -> dict[int, dict]:
    items: dict[int, dict] = {}
    for key, value in (draft or {}).items():
        parts = key.split("-")
        if len(parts) < 2 or not (parts[1].isascii() and parts[1].isdigit()):  # '²'.isdigit() is True
            continue
        item = items.setdefault(int(parts[1]), {"scores": {}})
        if parts[0] == "score" and len(parts) == 3:
            item["scores"][parts[2]] = value
        elif parts[0] == "cheat":
            item["cheat"] = str(value).lower() in ("on", "1", "true", "yes")
        else:
            item[parts[0]] = value
    return items


def review_context(*, user, membership: Membership, group: Group) -> ReviewContext:
    """Three queries: the person's assignment (with the project's blind fields), their
    judgments, the group's review state."""
    caps = membership.capabilities
    assignment = with_blind_fields(Assignment.objects.filter(group=group, reviewer=user)).first()
    own = list(Judgment.objects.filter(group=group, reviewer=user, kind=Judgment.Kind.REVIEW))
    review = GroupReview.objects.filter(group=group).first()
    judgment = own[0] if own else None
    open_blind = bool(assignment and assignment.is_open and assignment.blind and not assignment.revealed_early)
    adjudicator = "adjudicate" in caps and group.is_mixed
    # The form is offered only where the queue says the group waits for an adjudicator, and
    # never to a party to it: someone who reviewed it or holds an open assignment on it
    # (services.judgments.adjudication_refusal says the same when the form is posted).
    party = judgment is not None or bool(assignment and assignment.is_open)
    context = ReviewContext(
        assignment=assignment,
        judgment=judgment,
        review=review,
        can_judge="review" in caps and assignment is not None and assignment.is_open and group.is_mixed,
        can_adjudicate=adjudicator and not party and review is not None and review.needs_adjudication,
        blind=open_blind,
    )
    if judgment is not None:
        context.items = {
            item.rollout.index: {
                "tier": item.tier,
                "rank": str(item.rank),
                "cheat": item.cheat,
                "note": item.note,
                "scores": {k: str(v) for k, v in item.scores.items()},
            }
            for item in JudgmentItem.objects.filter(judgment=judgment)
            .select_related("rollout")
            .only("tier", "rank", "cheat", "note", "scores", "rollout__index")
        }
    elif assignment is not None and assignment.is_open:
        context.items = items_from_fields(assignment.draft)
    if adjudicator and not open_blind and review is not None and review.n_reviews:
        context.others = list(Judgment.objects.filter(group=group).select_related("reviewer").prefetch_related("items__rollout"))
    return context


def open_blind_group_ids(*, project: Project, user) -> QuerySet:
    """Groups of the project this person still has to judge blind: an open, blind assignment
    they have not asked to reveal. No figure derived from the grader's verdict on these may
    reach them, however aggregated (a step or repo slice can hold just their group). Lazy:
    used as a subquery it costs no query of its own."""
    if user is None or not getattr(user, "is_authenticated", False):
        return Assignment.objects.none().values_list("group_id", flat=True)
    return Assignment.objects.filter(
        reviewer=user,
        group__run__project=project,
        status=Assignment.Status.OPEN,
        blind=True,
        revealed_early=False,
    ).values_list("group_id", flat=True)


def open_blind_groups(*, project: Project, user) -> set[int]:
    return set(open_blind_group_ids(project=project, user=user))


def needs_browse_reveal(*, user, group: Group, verdict: Verdict | None) -> bool:
    """Grader fields about to be shown to someone who has not seen this verdict yet."""
    if verdict is None:
        return False
    return not Reveal.objects.filter(group=group, user=user, verdict=verdict).exists()


def my_progress(*, project: Project, reviewer) -> dict:
    counts = dict(
        Assignment.objects.filter(group__run__project=project, reviewer=reviewer)
        .values_list("status")
        .annotate(n=Count("pk"))
        .values_list("status", "n")
    )
    return {s: counts.get(s, 0) for s in Assignment.Status.values}


def my_assignments(*, project: Project, reviewer, limit: int = 20) -> QuerySet[Assignment]:
    return (
        Assignment.objects.filter(group__run__project=project, reviewer=reviewer)
        .select_related("group__run", "group__step", "group__task")
        .order_by("-created_at")[:limit]
    )


def team_progress(project: Project) -> list[dict]:
    """Per reviewer: open, submitted, skipped assignments and blind share of their judgments."""
    members = Membership.objects.filter(project=project).select_related("user").order_by("user__username")
    per_user = {
        row["reviewer"]: row
        for row in Assignment.objects.filter(group__run__project=project)
        .values("reviewer")
        .annotate(
            open=Count("pk", filter=Q(status=Assignment.Status.OPEN)),
            submitted=Count("pk", filter=Q(status=Assignment.Status.SUBMITTED)),
            skipped=Count("pk", filter=Q(status=Assignment.Status.SKIPPED)),
        )
    }
    blind = dict(
        Judgment.objects.filter(group__run__project=project, kind=Judgment.Kind.REVIEW, blind=True)
        .values_list("reviewer")
        .annotate(n=Count("pk"))
        .values_list("reviewer", "n")
    )
    rows = []
    for m in members:
        if "review" not in m.capabilities:
            continue
        row = per_user.get(m.user_id, {})
        rows.append(
            {
                "user": m.user,
                "role": m.role,
                "open": row.get("open", 0),
                "submitted": row.get("submitted", 0),
                "skipped": row.get("skipped", 0),
                "blind": blind.get(m.user_id, 0),
            }
        )
    return rows


def project_review_totals(project: Project) -> dict:
    mixed = Group.objects.filter(run__project=project, is_mixed=True)
    reviewed = GroupReview.objects.filter(group__run__project=project)
    return {
        "mixed": mixed.count(),
        **reviewed.aggregate(
            judged=Count("pk", filter=Q(n_reviews__gte=1)),
            two_reviewers=Count("pk", filter=Q(n_reviews__gte=2)),
            **_adjudication_counts(),
        ),
    }


def adjudication_queue(project: Project, *, include_done: bool = False) -> QuerySet:
    """The group ids waiting for an adjudicator (and, with `include_done`, those settled), by
    step and uid; a page of them is read by `adjudication_rows`. Ids first, rows second: a
    run's reviewed groups can nearly all be waiting, and sorting them with their
    disagreements and tasks attached was most of the page at 20,000 judgments
    (benchmarks/scale.py)."""
    reviews = GroupReview.objects.filter(group__run__project=project)
    reviews = (
        reviews.filter(Q(needs_adjudication=True) | Q(adjudicated=True))
        if include_done
        else reviews.filter(needs_adjudication=True)
    )
    return reviews.order_by("group__step_number", "group__uid").values_list("group_id", flat=True)


def adjudication_rows(group_ids: list[int]) -> list[GroupReview]:
    """The queue's rows for these groups, in the order given, with what the queue shows."""
    rows = {
        r.group_id: r
        for r in GroupReview.objects.filter(group_id__in=group_ids)
        .select_related("group__run", "group__task")
        .only(
            "group_id",
            "n_reviews",
            "needs_adjudication",
            "adjudicated",
            "disagreement",
            "group__uid",
            "group__step_number",
            "group__run__name",
            "group__task__instance_id",
        )
    }
    return [rows[g] for g in group_ids if g in rows]


def _adjudication_counts() -> dict[str, Count]:
    return {
        "needs_adjudication": Count("pk", filter=Q(needs_adjudication=True)),
        "adjudicated": Count("pk", filter=Q(adjudicated=True)),
    }


def adjudication_counts(project: Project) -> dict[str, int]:
    """How many groups wait for an adjudicator and how many are settled, in one aggregate (the
    two are disjoint: a settled group no longer waits)."""
    return GroupReview.objects.filter(group__run__project=project).aggregate(**_adjudication_counts())


# --- the group page's overview ----------------------------------------------------------------


@dataclass(frozen=True)
class ClusterLabel:
    """Which patch cluster a rollout falls in, as the overview and its lane say it."""

    cluster: str  # the cluster's first member (grading.rollouts.clusters), as this person names it (Lanes.key)
    size: int  # members of that cluster in the group
    label: str  # "same change as #3, +2 extra files" (or "same change as C": a blind judge's labels)
    extra_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class PageClusters:
    labels: dict[int, ClusterLabel]  # rollout index -> its cluster; empty when none is stored
    distinct: int = 0  # clusters among the rollouts given


def group_clusters(rollouts: list, lanes: Lanes | None = None) -> PageClusters:
    """Each rollout's patch cluster, from its stored fields (Rollout.cluster, extra_files,
    cluster_label, written at ingest by grading.ingest.clustering): no query and no
    patch parsed on a page view. Rollouts not clustered yet are left out. A blind judge's
    clusters (`lanes`) are named by their labels, the cluster by its lowest."""
    lanes = lanes or Lanes(blind=False)
    members = grading_selectors.cluster_members(rollouts)
    first = {
        number: min(indexes, key=lambda i: lane_position(lanes.key(i)) or 0) if lanes.blind else number
        for number, indexes in members.items()
    }
    return PageClusters(
        {
            r.index: ClusterLabel(
                cluster=lanes.key(first[r.cluster]),
                size=len(members[r.cluster]),
                label=cluster_text(r, members[r.cluster], lanes),
                extra_files=tuple(r.extra_files or ()),
            )
            for r in rollouts
            if r.cluster is not None and r.cluster in members
        },
        distinct=len(members),
    )


# A rollout's stored test outcome categories, as the overview's columns name them.
TEST_CATEGORIES = dict((("fail_to_pass", "f2p"), ("pass_to_pass", "p2p")))


def rollout_test_counts(outcomes) -> dict[str, tuple[int, int]]:
    """(passed, failed) of the FAIL_TO_PASS and PASS_TO_PASS tests in a rollout's stored
    outcomes ({"FAIL_TO_PASS": {"success": [...], "failure": [...]}, ...}), as "f2p" and "p2p";
    a category the rollout does not carry is left out."""
    counts: dict[str, tuple[int, int]] = {}
    for category, outcome in outcomes.items() if isinstance(outcomes, dict) else ():
        key = TEST_CATEGORIES.get(str(category).lower())
        if key is None or not isinstance(outcome, dict):
            continue
        passed, failed = counts.get(key, (0, 0))
        success, failure = outcome.get("success") or [], outcome.get("failure") or []
        counts[key] = (
            passed + (len(success) if isinstance(success, list) else 0),
            failed + (len(failure) if isinstance(failure, list) else 0),
        )
    return counts


def lane_order(rollouts: list, order: list[int]) -> list:
    """The lanes in the order the page shows them: passing first, then those of unknown
    outcome, then failing; within each, the reviewer's blind order (`order`, a shuffle of
    the indices kept on their assignment) or, without one, by index."""
    position = {index: n for n, index in enumerate(order)}
    outcome_rank = {True: 0, None: 1, False: 2}
    return sorted(rollouts, key=lambda r: (outcome_rank[r.passed], position.get(r.index, len(position) + r.index)))


# --- the judge panel -----------------------------------------------------------------------------


def grader_says(mine: dict, grade) -> str:
    """What the grader says of a rollout where it differs from this person's judgment ("T2",
    "cheat", "T2, no cheat"), or "" where it agrees: the same tier and the same cheat call.
    `mine`: the person's item as the page holds it (tier, cheat); `grade`: a RolloutGrade."""
    tier_differs = grade.tier != mine.get("tier")
    cheat_differs = bool(grade.cheat) != bool(mine.get("cheat"))
    if not (tier_differs or cheat_differs):
        return ""
    parts = [grade.tier] if tier_differs else []
    if cheat_differs:
        parts.append("cheat" if grade.cheat else "no cheat")
    return ", ".join(parts)


def start_rankings(*, others: list[Judgment], grades: dict, lanes: Lanes) -> tuple[dict, list[dict]]:
    """The rankings an adjudication form can start from: each reviewer's, then the grader's.
    ({source key: {lane key: {"tier", "rank", "cheat"}}}, [{"key", "label"}] in that order),
    from what the page already read (`others` with their items prefetched, the verdict's
    `grades` by rollout index): no query."""
    rankings: dict[str, dict] = {}
    sources: list[dict] = []
    reviews = sorted((j for j in others if j.kind == Judgment.Kind.REVIEW), key=lambda j: j.reviewer.username)
    for n, judgment in enumerate(reviews, 1):
        key = f"reviewer-{n}"
        rankings[key] = {
            lanes.key(item.rollout.index): {"tier": item.tier, "rank": item.rank, "cheat": item.cheat}
            for item in judgment.items.all()
        }
        sources.append({"key": key, "label": f"{judgment.reviewer.username}'s ranking"})
    if grades:
        rankings["grader"] = {
            lanes.key(index): {"tier": g.tier, "rank": g.rank, "cheat": bool(g.cheat)} for index, g in grades.items()
        }
        sources.append({"key": "grader", "label": "the grader's ranking"})
    return rankings, sources


QUEUE_COUNT_CAP = 1_000  # groups still waiting are counted up to this ("of 1,001+")


@dataclass(frozen=True)
class QueuePlace:
    """Where a group stands in this person's queue: how many they finished before it (judged
    or skipped), how many more it could still serve them, and the last one they finished."""

    done: int
    waiting: int | None  # None when this group is not theirs to judge now (nothing counted)
    capped: bool  # more than QUEUE_COUNT_CAP wait
    previous: Assignment | None

    @property
    def position(self) -> int:
        return self.done + 1

    @property
    def total(self) -> int:
        return self.done + 1 + (self.waiting or 0)


def queue_place(*, assignment: Assignment, group: Group, reviewer) -> QueuePlace:
    """This person's place in their queue on `assignment`'s group (the group page's "group 3
    of 12 in your queue" and "previous group"): their finished assignments of the project
    other than this one, counted with the latest of them in one query; while the assignment
    is open, the groups the queue could still serve them after it (reviews.services.queue.
    queue_groups, counted up to QUEUE_COUNT_CAP: two more queries, the policy and the count).
    `group` and `reviewer`: the assignment's, as the page already holds them."""
    from reviews.services.queue import queue_groups  # the queue's own definition of what it serves

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
    waiting = None
    if assignment.is_open:
        waiting = queue_groups(project=project, reviewer=reviewer)[: QUEUE_COUNT_CAP + 1].count()
    capped = waiting is not None and waiting > QUEUE_COUNT_CAP
    return QueuePlace(
        done=done, waiting=min(waiting, QUEUE_COUNT_CAP) if waiting is not None else None, capped=capped, previous=latest
    )
