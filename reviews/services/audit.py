"""The cheat audit: an auditor settles a rollout — confirms or overturns it, with one reason.

A rollout may carry several signals (the grader's flag, the prescreen's, a search's, each
reviewer's). One decision settles every open signal of the rollout; a rollout with none open
(already decided) is decided again as a whole, every signal with it. The signals
(grading.CheatDecision) carry the state the advantage engine reads: of a rollout's decided
signals the latest is in force, and a confirmed cheat gets reward 0 and counts as failing
(docs/method.md §1) — so settling all of them at one moment puts this decision in force.
Every decision is kept as a `CheatAudit` row per signal it settled, so a signal confirmed
and later overturned shows both. Deciding marks the steps stale and queues their
recomputation, and labels each category a scanner found on the rollout for the scanners'
validation set (grading.verdicts.store.decide_cheats, docs/scanners.md#validation-sets).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from grading.models import CheatDecision, Project
from grading.verdicts.store import decide_cheats
from reviews.models import CheatAudit
from reviews.services.calibration import schedule_warm, warming_enabled

MIN_REASON_CHARS = 3


class AuditError(ValueError):
    pass


@dataclass(frozen=True)
class AuditReport:
    rollouts: int  # rollouts settled
    signals: int  # signals decided with them


def audit_rollouts(*, project: Project, rollout_ids: list[int], auditor, confirmed: bool, reason: str) -> AuditReport:
    """Settle these rollouts of `project` (the caller checked the `audit` capability and that
    the auditor may see them) with one decision and one reason."""
    reason = (reason or "").strip()
    if len(reason) < MIN_REASON_CHARS:
        raise AuditError("say why: a reason is required to confirm or overturn a cheat signal")
    with transaction.atomic():
        signals = list(
            CheatDecision.objects.filter(rollout_id__in=rollout_ids, rollout__group__run__project=project).values_list(
                "pk", "rollout_id", "confirmed"
            )
        )
        has_open = {rollout for _, rollout, state in signals if state is None}
        chosen = [pk for pk, rollout, state in signals if state is None or rollout not in has_open]
        decided = decide_cheats(decision_ids=chosen, confirmed=confirmed, user=auditor, reason=reason[:2000])
        CheatAudit.objects.bulk_create(
            CheatAudit(decision_id=pk, auditor=auditor, confirmed=confirmed, reason=reason[:5000]) for pk in decided
        )
        settled = {rollout for pk, rollout, _ in signals if pk in set(decided)}
    if decided and warming_enabled():  # the frame's audit column changed
        for run_id in set(CheatDecision.objects.filter(pk__in=decided).values_list("rollout__group__run_id", flat=True)):
            schedule_warm(run_id=run_id)
    return AuditReport(rollouts=len(settled), signals=len(decided))


def audit_cheat(*, decision: CheatDecision, auditor, confirmed: bool, reason: str) -> AuditReport:
    """Settle the rollout this signal is on (as `audit_rollouts` does)."""
    project = Project.objects.get(runs__groups__rollouts__cheat_decisions=decision)
    return audit_rollouts(project=project, rollout_ids=[decision.rollout_id], auditor=auditor, confirmed=confirmed, reason=reason)
