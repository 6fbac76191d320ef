"""Highlight new rollouts' patches ahead of the reviewer and store them (PatchHighlight).

Ingest names the rollouts it wrote (`queue_highlights`, in its transaction); after the
commit a Celery task (grading.highlights.tasks) calls `highlight_rollouts` on them. Each
patch is highlighted by grading.rollouts.diffs.highlight_patch with one patch's
HighlightBudget (the bounds a page's highlighting has: worker processes killed past
HUNK_SECONDS, at most HIGHLIGHT_SECONDS and HIGHLIGHT_CHARS a patch; past them the text is
kept escaped and unhighlighted, with the note saying so, as a page would show it). The
stored HTML is our highlighter's output only: pygments' escaped spans or html.escape()d
lines, checked against the patch's text before it is kept.

A page never waits for this: a rollout without a row (not highlighted yet, or its patch
changed since: the digest differs) is highlighted by the page as before.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings

from grading.models import PatchHighlight, RolloutContent
from grading.queueing import queue_on_commit
from grading.rollouts.diffs import highlight_patch, patch_digest

BATCH = 32  # rollouts read (their patches) per query


def queue_highlights(rollout_ids: list[int]) -> None:
    """Ingest's call, in its transaction: highlight these rollouts' patches after the commit
    (a Celery task; in-process where Celery runs eagerly). Off with GAGAR_HIGHLIGHT_AHEAD=false."""
    if not rollout_ids or not settings.GAGAR_HIGHLIGHT_AHEAD:
        return
    queue_on_commit("grading.highlight_rollouts", robust=True, rollout_ids=list(rollout_ids))


def highlight_rollouts(rollout_ids: Iterable[int]) -> int:
    """Highlight and store the patches of these rollouts that have none stored for their
    current text; the number stored. Rollouts without a patch, or whose patch does not parse
    (shown as plain text), get no row."""
    ids = list(rollout_ids)
    done = 0
    for start in range(0, len(ids), BATCH):
        chunk = ids[start : start + BATCH]
        stored = dict(PatchHighlight.objects.filter(rollout_id__in=chunk).values_list("rollout_id", "digest"))
        rows = []
        for rollout_id, patch in RolloutContent.objects.filter(rollout_id__in=chunk).values_list("rollout_id", "patch"):
            digest = patch_digest(patch)
            if not patch or stored.get(rollout_id) == digest:
                continue
            hunks = highlight_patch(patch)
            if hunks is None:
                continue
            rows.append(PatchHighlight(rollout_id=rollout_id, digest=digest, hunks=[list(h) for h in hunks]))
        if rows:
            PatchHighlight.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["rollout"], update_fields=["digest", "hunks"]
            )
            done += len(rows)
    return done
