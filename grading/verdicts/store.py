"""Writes of the method's inputs: grader verdicts and cheat decisions.

Each write marks the step's stored advantages stale and queues their recomputation after
the commit (grading.method.services.staleness.mark_stale).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from grading.grader.evidence import is_uncited
from grading.grader.workspace import CheckRecord
from grading.method.services.staleness import mark_stale
from grading.models import CheatDecision, Group, Rollout, RolloutGrade, Verdict, VerdictCheck
from grading.verdicts.scan_labels import label_audited
from grading.verdicts.signals import verdict_recorded


@dataclass(frozen=True)
class GradeInput:
    index: int
    tier: str
    rank: int
    cheat: bool = False
    scores: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)


@transaction.atomic
def record_verdict(
    *,
    group: Group,
    grader: str,
    status: str,
    grades: Sequence[GradeInput] = (),
    errors: list | None = None,
    raw: dict | None = None,
    checks: Sequence[CheckRecord] = (),
    settled_by: str = Verdict.SettledBy.GRADER,
    raise_cheat_signals: bool = True,
    bench_only: bool = False,
) -> tuple[Verdict, bool]:
    """Store the verdict of `grader` on `group` once; a second call for the same pair returns the first.

    Returns (verdict, created). Grades must name passing rollouts of the group; `checks` are
    the commands the grader ran (any rollout of the group), stored with the verdict whatever
    its status, since they are what it saw. A grade's cheat call opens a signal in the audit
    queue unless `raise_cheat_signals` is off (a jury's: its members raised theirs). A
    `bench_only` verdict (a campaign's, of a grader the run's policy does not use) leaves the
    step's advantages as they are. A grader's grade that speaks against its rollout and cites
    nothing is marked uncited (grading.grader.evidence.is_uncited: only a verdict posted from
    elsewhere, or a jury's made of such, passes the checks so); a person's ranking that a
    waiting jury took is not a grader's word and is never marked.
    """
    existing = Verdict.objects.filter(group=group, grader=grader).first()
    if existing is not None:
        return existing, False
    rollouts = {r.index: r for r in Rollout.objects.filter(group=group).only("id", "index", "passed")}
    for grade in grades:
        rollout = rollouts.get(grade.index)
        if rollout is None:
            raise ValueError(f"group {group.uid} has no rollout {grade.index}")
        if rollout.passed is not True:
            raise ValueError(f"rollout {grade.index} of {group.uid} did not pass; only passing rollouts are graded")
        if grade.tier not in RolloutGrade.Tier.values:
            raise ValueError(f"tier must be one of {', '.join(RolloutGrade.Tier.values)}, got {grade.tier!r}")
    for check in checks:
        if check.rollout not in rollouts:
            raise ValueError(f"check {check.number}: group {group.uid} has no rollout {check.rollout}")
    verdict = Verdict.objects.create(
        group=group,
        grader=grader,
        status=status,
        errors=errors or [],
        raw=raw or {},
        n_checks=len(checks),
        settled_by=settled_by,
        bench_only=bench_only,
    )
    VerdictCheck.objects.bulk_create(
        VerdictCheck(
            verdict=verdict,
            number=c.number,
            rollout=rollouts[c.rollout],
            command=c.command,
            exit_status=c.exit_status,
            seconds=c.seconds,
            output=c.output,
            truncated=c.truncated,
            killed=c.killed[:40],
            sandbox=c.sandbox[:40],
        )
        for c in checks
    )
    if status == Verdict.Status.VALID and not group.has_valid_verdict:  # the review queue serves graded groups first
        Group.objects.filter(pk=group.pk).update(has_valid_verdict=True)
        group.has_valid_verdict = True
    by_grader = settled_by == Verdict.SettledBy.GRADER
    RolloutGrade.objects.bulk_create(
        RolloutGrade(
            verdict=verdict,
            rollout=rollouts[g.index],
            tier=g.tier,
            rank=g.rank,
            cheat=g.cheat,
            scores=g.scores,
            evidence=g.evidence,
            uncited=by_grader and is_uncited(g.tier, g.cheat, g.scores, g.evidence),
        )
        for g in grades
    )
    for grade in grades:
        if grade.cheat and raise_cheat_signals:
            CheatDecision.objects.create(
                rollout=rollouts[grade.index],
                source=CheatDecision.Source.GRADER,
                reason="flagged by " + grader,
                author=grader[:150],
                evidence=[e for e in grade.evidence or [] if isinstance(e, dict)],
            )
    if not bench_only:  # the method never reads a bench-only verdict (grading.method.services.computation.step_inputs)
        mark_stale(step_ids=[group.step_id])
    verdict_recorded.send(sender=Verdict, group=group, verdict=verdict)  # people may have judged the group already
    return verdict, True


@transaction.atomic
@transaction.atomic
def decide_cheat(*, decision: CheatDecision, confirmed: bool, user=None, reason: str = "") -> CheatDecision:
    """An auditor confirms (reward -> 0) or overturns a cheat signal. Its decision is now the
    rollout's in force, so each category a scanner found on the rollout is labeled by it
    (grading.verdicts.scan_labels.label_audited)."""
    decision = CheatDecision.objects.select_for_update().select_related("rollout__group").get(pk=decision.pk)
    decision.confirmed = confirmed
    decision.decided_by = user
    decision.reason = reason or decision.reason
    decision.decided_at = timezone.now()
    decision.save(update_fields=["confirmed", "decided_by", "reason", "decided_at"])
    findings = CheatDecision.objects.filter(rollout_id=decision.rollout_id, source=CheatDecision.Source.PRESCREEN)
    label_audited(
        findings=findings.values_list("rollout__group__run__project_id", "rollout_id", "author", "reason"),
        confirmed=confirmed,
        author=_username(user),
        note=reason,
    )
    mark_stale(step_ids=[decision.rollout.group.step_id])
    return decision


def _username(user) -> str:
    return getattr(user, "username", "") or ""


@transaction.atomic
def decide_cheats(*, decision_ids: list[int], confirmed: bool, user=None, reason: str = "") -> list[int]:
    """Confirm or overturn many signals at once (an audit of whole rollouts), in one update
    under row locks; each signal keeps its own reason. Returns the ids decided, in id order.
    The advantage engine reads a rollout's most recently decided signal (one moment here,
    then the highest id), so one decision over all of a rollout's open signals is in force —
    and each category a scanner found on those rollouts is labeled by it, `reason` its note
    (grading.verdicts.scan_labels.label_audited).

    One read locks the signals of the rollouts concerned and brings their steps and scanner
    findings; one update decides; one write labels (only when a scanner found something)."""
    wanted = set(decision_ids)
    rows = list(
        CheatDecision.objects.select_for_update(of=("self",))
        .filter(rollout_id__in=CheatDecision.objects.filter(pk__in=decision_ids).values("rollout_id"))
        .order_by("pk")
        .values_list(
            "pk", "rollout_id", "source", "author", "reason", "rollout__group__step_id", "rollout__group__run__project_id"
        )
    )
    decided = [row for row in rows if row[0] in wanted]
    if not decided:
        return []
    ids = [row[0] for row in decided]
    CheatDecision.objects.filter(pk__in=ids).update(confirmed=confirmed, decided_by=user, decided_at=timezone.now())
    settled = {row[1] for row in decided}
    label_audited(
        findings=[
            (project_id, rollout_id, author, why)
            for _, rollout_id, source, author, why, _, project_id in rows
            if source == CheatDecision.Source.PRESCREEN and rollout_id in settled
        ],
        confirmed=confirmed,
        author=_username(user),
        note=reason,
    )
    mark_stale(step_ids=sorted({row[5] for row in decided}))
    return ids
