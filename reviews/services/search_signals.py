"""An auditor turns a search into cheat signals: one open signal (source `search`, the query
as its reason) on every matching rollout, which the cheat audit queue then lists.

All or none, and bounded: more than MAX_SIGNALS matches is refused (narrow the search), and
idempotent per rollout: one that already has an open signal from a search gets no second one,
whatever the query (`widget`, `Widget`, `"widget"` find the same rollouts, and each added
three more signals before). The rollouts are locked first, so two auditors at once do not
both see "none open yet".
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from grading.models import CheatDecision, Rollout
from grading.search.selectors import search_signal_targets
from reviews.selectors.search import SearchRequest

MAX_SIGNALS = 500


class SignalRefused(ValueError):
    pass


@dataclass(frozen=True)
class SignalReport:
    created: int
    skipped: int  # already had an open signal from a search


def signal_search(*, search: SearchRequest, auditor) -> SignalReport:
    """Create the signals (auditors and admins only: the caller checked the `audit` capability)."""
    reason = search.query.raw if search.query.mode == "words" else f"{search.query.raw} (literal)"
    with transaction.atomic():
        ids = search_signal_targets(query=search.query, scope=search.scope, cap=MAX_SIGNALS)
        if ids is None:
            raise SignalRefused(
                f"more than {MAX_SIGNALS} rollouts match: narrow the search (run, steps, pass/fail) "
                "before turning it into cheat signals"
            )
        if not ids:
            raise SignalRefused("no rollout matches this search")
        list(Rollout.objects.select_for_update().filter(pk__in=ids).order_by("pk").values_list("pk", flat=True))
        open_already = set(
            CheatDecision.objects.filter(
                rollout_id__in=ids, source=CheatDecision.Source.SEARCH, confirmed__isnull=True
            ).values_list("rollout_id", flat=True)
        )
        new = [
            CheatDecision(rollout_id=pk, source=CheatDecision.Source.SEARCH, reason=reason, author=auditor.username)
            for pk in ids
            if pk not in open_already
        ]
        CheatDecision.objects.bulk_create(new)
    return SignalReport(created=len(new), skipped=len(open_already))
