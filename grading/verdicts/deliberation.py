"""A jury's verdicts. A jury (grading.registry.juries) is a project's named set of
grader versions whose verdicts are combined into one (grading.grader.combine), stored as the
verdict of ``jury:<name>@<version>`` like any grader's, so the method, calibration and the bench
treat a jury as a grader.

A jury's verdict of a group is made when the last of its members' verdicts arrives
(on_verdict_recorded, connected in grading/apps.py to grading.verdicts.signals.verdict_recorded):

- every member valid: the members' rankings combined by the jury's rule; valid, unless the
  rule is agree-or-abstain and two members' tiers differ by more than ``max_gap`` on a
  rollout. Then the jury abstains: with ``on_abstain="fallback"`` it stores an invalid
  verdict (``raw["jury"]["abstained"]``), so the group falls back at once; with ``"wait"`` it
  stores nothing, the group stays pending for a person until the step's grading deadline
  (grading.waits.progress) and falls back then;
- a member invalid or timed out: an invalid verdict naming it (the group falls back).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median_low

from django.db import IntegrityError, transaction

from grading.grader.combine import JuryOutcome, combine
from grading.models import Group, Jury, RolloutGrade, Verdict
from grading.registry.juries import is_jury
from grading.verdicts.store import GradeInput, record_verdict


def on_verdict_recorded(sender, *, group: Group, verdict: Verdict, **kwargs) -> None:
    """A member's verdict arrived: make the verdict of every jury of the project it sits on."""
    if is_jury(verdict.grader):
        return
    for jury in Jury.objects.filter(project_id=group.run.project_id):
        if verdict.grader in jury.members:
            record_jury_verdict(jury=jury, group=group)


@dataclass(frozen=True)
class _Deliberation:
    """What a jury's members said of a group, read once: every member's verdict, their grades
    by rollout index, and the combined outcome (None while a member is missing or failed)."""

    verdicts: dict[str, Verdict]
    grades: dict[str, dict[int, RolloutGrade]]
    failed: list[str]
    outcome: JuryOutcome | None


def _deliberate(jury: Jury, group: Group) -> _Deliberation | None:
    """None until every member has a verdict of `group`."""
    verdicts = {v.grader: v for v in Verdict.objects.filter(group=group, grader__in=jury.members)}
    if len(verdicts) < len(jury.members):
        return None
    failed = [m for m in jury.members if verdicts[m].status != Verdict.Status.VALID]
    grades: dict[str, dict[int, RolloutGrade]] = {m: {} for m in jury.members}
    if failed:
        return _Deliberation(verdicts, grades, failed, None)
    member_of = {verdicts[m].pk: m for m in jury.members}
    for grade in RolloutGrade.objects.filter(verdict__in=list(verdicts.values())).select_related("rollout"):
        grades[member_of[grade.verdict_id]][grade.rollout.index] = grade
    rankings = [{i: (g.tier, g.rank) for i, g in grades[m].items()} for m in jury.members]
    return _Deliberation(verdicts, grades, failed, combine(jury.rule, rankings, max_gap=jury.max_gap))


def _info(jury: Jury, deliberation: _Deliberation) -> dict:
    info: dict = {"members": list(jury.members), "rule": jury.rule, "max_gap": jury.max_gap, "abstained": False}
    if deliberation.failed:
        info["failed"] = deliberation.failed
    if (outcome := deliberation.outcome) is not None:
        info.update(abstained=outcome.abstained, widest_gap=outcome.max_gap, split=outcome.split)
        if outcome.abstained:
            info["on_abstain"] = jury.on_abstain
    return info


def record_jury_verdict(*, jury: Jury, group: Group) -> Verdict | None:
    """The jury's verdict of `group` once all its members have one (None before, and while it
    waits for a person); stored once, like any grader's."""
    existing = Verdict.objects.filter(group=group, grader=jury.grader).first()
    if existing is not None:
        return existing
    deliberation = _deliberate(jury, group)
    if deliberation is None:
        return None
    info = _info(jury, deliberation)
    if deliberation.failed:
        errors = [f"member {m} gave no valid verdict" for m in deliberation.failed]
        # Members the run's policy settled without a model call (grading.verdicts.identical): the
        # jury's fallback is settled the same way, and kept out of what compares graders too.
        settled = all(deliberation.verdicts[m].settled_by == Verdict.SettledBy.IDENTICAL_PATCHES for m in deliberation.failed)
        by = Verdict.SettledBy.IDENTICAL_PATCHES if settled else Verdict.SettledBy.GRADER
        return _store(group, jury, Verdict.Status.INVALID, [], errors, info, settled_by=by)
    outcome = deliberation.outcome
    assert outcome is not None  # every member valid
    if outcome.abstained:
        if jury.on_abstain == Jury.OnAbstain.WAIT:
            return None
        why = f"members' tiers differ by more than {jury.max_gap} on rollouts {', '.join(f'#{i}' for i in outcome.split)}"
        return _store(group, jury, Verdict.Status.INVALID, [], [why], info)
    combined = []
    for index, (tier, rank) in sorted(outcome.ranking.items()):
        given = [deliberation.grades[m][index] for m in jury.members if index in deliberation.grades[m]]
        combined.append(
            GradeInput(
                index,
                tier,
                rank,
                cheat=sum(g.cheat for g in given) * 2 > len(given),
                scores=_scores(given),
                evidence=_evidence(given),
            )
        )
    return _store(group, jury, Verdict.Status.VALID, combined, [], info)


def waiting_jury(group: Group) -> Jury | None:
    """The run's jury, when it waits for a person on `group`: its members all gave valid
    verdicts, they differ beyond the jury's gap, it waits rather than falls back, and it has
    no verdict yet."""
    jury = group.run.jury
    if jury is None or jury.on_abstain != Jury.OnAbstain.WAIT:
        return None
    if Verdict.objects.filter(group=group, grader=jury.grader).exists():
        return None
    deliberation = _deliberate(jury, group)
    if deliberation is None or deliberation.outcome is None or not deliberation.outcome.abstained:
        return None
    return jury


@dataclass(frozen=True)
class PersonRanking:
    """One person's judgment of a group, as a waiting jury takes it: tier, rank and rubric
    scores per passing rollout (their cheat calls go to the audit queue as theirs)."""

    judgment_id: int
    person: str
    items: dict[int, tuple[str, int, dict]]


def settle_with_person(*, group: Group, ranking: PersonRanking) -> Verdict | None:
    """A person judged a group the run's jury waits on: their tiers and ranks become the jury's
    verdict (``settled_by="person"``), so the group's credit moves by a person's word rather
    than falling back at the deadline. Such a verdict is the method's input only: it is kept
    out of everything that compares or calibrates graders (Verdict.objects.by_graders). A
    judgment after the deadline settles the group too, as a late verdict does (the step's
    inputs_version moves). None when no jury waits on the group."""
    jury = waiting_jury(group)
    if jury is None:
        return None
    deliberation = _deliberate(jury, group)
    assert deliberation is not None  # waiting_jury found a verdict from every member
    info = _info(jury, deliberation) | {"settled_by": "person", "judgment": ranking.judgment_id, "person": ranking.person}
    grades = [GradeInput(index, tier, rank, scores=dict(scores)) for index, (tier, rank, scores) in sorted(ranking.items.items())]
    return _store(group, jury, Verdict.Status.VALID, grades, [], info, settled_by=Verdict.SettledBy.PERSON)


def _scores(given: Sequence[RolloutGrade]) -> dict:
    names = sorted({k for g in given for k in (g.scores or {}) if isinstance(g.scores.get(k), int)})
    return {k: median_low([g.scores[k] for g in given if isinstance(g.scores.get(k), int)]) for k in names}


def _evidence(given: Sequence[RolloutGrade]) -> list:
    seen, out = set(), []
    for g in given:
        for item in g.evidence or []:
            key = repr(item)
            if key not in seen:
                seen.add(key)
                out.append(item)
    return out


def _store(
    group: Group,
    jury: Jury,
    status: str,
    grades: list[GradeInput],
    errors: list[str],
    info: dict,
    *,
    settled_by: str = Verdict.SettledBy.GRADER,
) -> Verdict:
    # The members' cheat calls are already signals in the audit queue (each member's verdict
    # raised its own) and a person's are raised by their judgment: the jury adds none.
    try:
        with transaction.atomic():
            verdict, _ = record_verdict(
                group=group,
                grader=jury.grader,
                status=status,
                grades=grades,
                errors=errors,
                raw={"jury": info},
                settled_by=settled_by,
                raise_cheat_signals=False,
            )
    except IntegrityError:  # a concurrent member's verdict made it first
        verdict = Verdict.objects.get(group=group, grader=jury.grader)
    return verdict
