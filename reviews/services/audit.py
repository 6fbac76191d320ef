"""The cheat audit: an auditor confirms or overturns a cheat signal, with a reason.

The signal (grading.CheatDecision) carries the current state the advantage engine reads:
a confirmed cheat gets reward 0 and counts as failing (docs/method.md §1). Every decision is
also kept as a `CheatAudit` row, so a signal confirmed and later overturned shows both.
Deciding marks the step stale and queues its recomputation (grading.grader.verdicts).
"""

from __future__ import annotations

from django.db import transaction

from grading.grader.verdicts import decide_cheat
from grading.models import CheatDecision
from reviews.models import CheatAudit
from reviews.services.calibration import schedule_warm, warming_enabled

MIN_REASON_CHARS = 3


class AuditError(ValueError):
    pass


@transaction.atomic
def audit_cheat(*, decision: CheatDecision, auditor, confirmed: bool, reason: str) -> CheatAudit:
    reason = (reason or "").strip()
    if len(reason) < MIN_REASON_CHARS:
        raise AuditError("say why: a reason is required to confirm or overturn a cheat signal")
    decided = decide_cheat(decision=decision, confirmed=confirmed, user=auditor, reason=None)
    audit = CheatAudit.objects.create(decision=decided, auditor=auditor, confirmed=confirmed, reason=reason[:5000])
    if warming_enabled():  # the frame's audit column changed
        run_id = CheatDecision.objects.filter(pk=decision.pk).values_list("rollout__group__run_id", flat=True).first()
        schedule_warm(run_id=run_id)
    return audit
