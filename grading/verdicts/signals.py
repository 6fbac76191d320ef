"""What the grader tells the layers above it, without importing them (grading never imports
reviews): plain Django signals, sent inside the transaction that stored the change, so a
receiver's writes commit or roll back with it. Receivers are connected in their app's
`ready()` (reviews/apps.py)."""

from django.dispatch import Signal

# Sent with group=<Group>, verdict=<Verdict> after a verdict and its grades are stored.
verdict_recorded = Signal()
