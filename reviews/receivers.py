"""Receivers of the signals grading sends upward (connected in reviews/apps.py)."""

from __future__ import annotations

from reviews.models import GroupReview
from reviews.services.calibration import schedule_warm
from reviews.services.judgments import refresh_review_state


def refresh_review_on_verdict(sender, *, group, verdict, **kwargs) -> None:
    """A verdict arrived for a group people may already have judged: recompute its review
    state (agreement with the grader, whether it needs adjudication)."""
    review = GroupReview.objects.filter(group=group).first()
    if review is not None:
        refresh_review_state(group=group, review=review)
        schedule_warm(run_id=group.run_id)  # people judged it: the grader's new tiers change calibration
