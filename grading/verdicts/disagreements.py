"""Keeping each group's grader disagreement: the figures the review queue and the
cheat audit order by when the review policy puts disagreements first.

Recomputed from the group's verdicts whenever one lands (on_verdict_recorded, connected in
grading/apps.py to grading.verdicts.signals.verdict_recorded), by the pure
grading.grader.compare over every grader's valid verdict but juries' (a jury's
verdict is made of its members'), and stored on the group (Group.grader_gap,
grader_gap_rollouts) and its rollouts (Rollout.cheat_split).

And whether a person is awaited: when the run's policy names a jury that agrees or
abstains and waits (grading.verdicts.deliberation), a group on which it abstained has no verdict
until the step's grading deadline (grading.models.Run.falls_back_at). Such a group is
marked (Group.awaits_person, awaits_person_until) so the queue serves it first; the mark
goes when the jury's verdict lands, when the run's policy changes, and when the deadline
passes (expire_person_waits: a "next group" pick and Celery beat call it).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from grading.grader.combine import Ranking, combine
from grading.grader.compare import Calls, disagreement
from grading.models import GradingJob, Group, Jury, Rollout, RolloutGrade, Run, Verdict
from grading.registry.juries import JURY_PREFIX

CHUNK = 2000  # groups recomputed per round when a whole run is


def on_verdict_recorded(sender, *, group: Group, verdict: Verdict, **kwargs) -> None:
    refresh_disagreement(group_ids=[group.pk])


def waits_for_people(jury: Jury | None) -> bool:
    """A jury that, abstaining, leaves the group to a person until the deadline."""
    return jury is not None and jury.rule == Jury.Rule.AGREE_OR_ABSTAIN and jury.on_abstain == Jury.OnAbstain.WAIT


@transaction.atomic
def refresh_disagreement(*, group_ids: Iterable[int], now: datetime | None = None) -> int:
    """Store the graders' disagreement and whether a person is awaited on these groups: two
    to four reads and a write only where something changed. Returns the groups changed.
    The groups' rows are locked first, so two verdicts landing at once on one group are
    counted one after the other (the second sees the first's grades once it commits)."""
    ids = sorted(set(group_ids))
    if not ids:
        return 0
    now = now or timezone.now()
    groups = list(Group.objects.filter(pk__in=ids).select_related("run__jury").order_by("pk").select_for_update(of=("self",)))
    calls: dict[int, dict[str, Calls]] = {}
    ranks: dict[int, dict[str, Ranking]] = {}
    flagged: dict[int, bool] = {}  # rollout id -> its stored cheat_split
    indexes: dict[tuple[int, int], int] = {}  # (group id, index) -> rollout id
    for group_id, grader, rollout_id, index, stored, tier, rank, cheat in (
        RolloutGrade.objects.filter(verdict__group_id__in=ids, verdict__status=Verdict.Status.VALID)
        .exclude(verdict__grader__startswith=JURY_PREFIX)
        .values_list(
            "verdict__group_id",
            "verdict__grader",
            "rollout_id",
            "rollout__index",
            "rollout__cheat_split",
            "tier",
            "rank",
            "cheat",
        )
    ):
        calls.setdefault(group_id, {}).setdefault(grader, {})[index] = (tier, cheat)
        ranks.setdefault(group_id, {}).setdefault(grader, {})[index] = (tier, rank)
        flagged[rollout_id] = stored
        indexes[(group_id, index)] = rollout_id
    waiting = _abstained(groups, ranks)
    requeued = (
        dict(
            GradingJob.objects.filter(group_id__in=waiting)
            .values("group_id")
            .annotate(q=Max("queued_at"))
            .values_list("group_id", "q")
        )
        if waiting
        else {}
    )
    changed: list[Group] = []
    split: set[int] = set()
    for group in groups:
        found = disagreement(list(calls.get(group.pk, {}).values()))
        split.update(indexes[(group.pk, i)] for i in found.cheat_split)
        until = None
        if group.pk in waiting:
            until = group.run.falls_back_at(stored_at=group.created_at, queued_at=requeued.get(group.pk))
            until = until if until > now else None
        before = (group.grader_gap, group.grader_gap_rollouts, group.awaits_person, group.awaits_person_until)
        fresh = (found.gap, len(found.gap_rollouts), until is not None, until)
        if before != fresh:
            group.grader_gap, group.grader_gap_rollouts, group.awaits_person, group.awaits_person_until = fresh
            changed.append(group)
    if changed:
        Group.objects.bulk_update(changed, ["grader_gap", "grader_gap_rollouts", "awaits_person", "awaits_person_until"])
    newly = [pk for pk in split if not flagged[pk]]
    settled = [pk for pk, stored in flagged.items() if stored and pk not in split]
    if newly:
        Rollout.objects.filter(pk__in=newly).update(cheat_split=True)
    if settled:
        Rollout.objects.filter(pk__in=settled).update(cheat_split=False)
    return len(changed)


def _abstained(groups: list[Group], ranks: dict[int, dict[str, Ranking]]) -> set[int]:
    """The groups whose run's jury abstained and waits for a person: every member's verdict
    valid, none of the jury's yet, and the members apart by more than its gap (the jury's
    own rule, grading.grader.combine.combine)."""
    juries = {g.pk: g.run.jury for g in groups if waits_for_people(g.run.jury)}
    if not juries:
        return set()
    statuses: dict[int, dict[str, str]] = {}
    for group_id, grader, status in Verdict.objects.filter(group_id__in=juries).values_list("group_id", "grader", "status"):
        statuses.setdefault(group_id, {})[grader] = status
    out = set()
    for group_id, jury in juries.items():
        assert jury is not None  # juries holds only groups whose run names a jury
        have = statuses.get(group_id, {})
        if jury.grader in have or any(have.get(m) != Verdict.Status.VALID for m in jury.members):
            continue
        members = [ranks.get(group_id, {}).get(m, {}) for m in jury.members]
        if combine(jury.rule, members, max_gap=jury.max_gap).abstained:
            out.add(group_id)
    return out


def refresh_run(run: Run) -> int:
    """Recompute every mixed group of the run (its jury or its deadline changed), CHUNK at a time."""
    ids = list(Group.objects.filter(run=run, to_judge=True).order_by("pk").values_list("pk", flat=True))
    return sum(refresh_disagreement(group_ids=ids[i : i + CHUNK]) for i in range(0, len(ids), CHUNK))


def expire_person_waits(*, now: datetime | None = None) -> int:
    """Groups whose jury waited for a person past the step's deadline have fallen back: no
    longer first for that reason (one UPDATE over the partial index group_awaits_person)."""
    return Group.objects.filter(awaits_person=True, awaits_person_until__lte=now or timezone.now()).update(
        awaits_person=False, awaits_person_until=None
    )
