"""The human side: who is asked to judge which group, what they said, what they saw.

A reviewer works through a queue: each `Assignment` hands one mixed group to one person
(never twice to the same person). Their `Judgment` holds a tier, a rank and a cheat call
for every passing rollout (`JudgmentItem`). Judgments are immutable once submitted: a
blind judgment edited after the grader's verdict was revealed would be anchored on it.
`GroupReview` is the per-group state the queues read (how many judgments, whether the
group waits for an adjudicator); its row is the lock two concurrent submitters meet on.
`Reveal` logs every time grader fields were shown to someone, and why.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from grading.method.tiers import TIER_CHOICES
from grading.rollouts.blinding import DEFAULT_BLIND_FIELDS


def default_blind_fields() -> list[str]:
    return list(DEFAULT_BLIND_FIELDS)


class ReviewPolicy(models.Model):
    """How a project's queue hands out groups. One per project, created when first set
    (reviews.services.queue.update_policy); read as the defaults until then."""

    project = models.OneToOneField("grading.Project", on_delete=models.CASCADE, related_name="review_policy")
    overlap = models.FloatField(default=0.2, help_text="share of groups judged by two reviewers (inter-human agreement); 0 to 1")
    blind = models.BooleanField(default=True, help_text="hide grader tiers, ranks and evidence until the reviewer submits")
    # What a blind judge is not shown of a rollout, as well as the grader's verdict: who made
    # it (grading.rollouts.blinding: source, cost, metadata:<word>); rollouts are lane labels.
    blind_fields = models.JSONField(
        default=default_blind_fields,
        blank=True,
        help_text="rollout fields withheld from a blind judge: source, cost, metadata:<word>",
    )
    lease_minutes = models.PositiveIntegerField(
        default=120, help_text="an assignment left open this long stops counting toward a group's reviewers"
    )
    disagreements_first = models.BooleanField(
        default=True,
        help_text="first the groups a jury waits on for a person, then the widest grader gaps; audit: split cheat calls",
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"review policy of {self.project}"


class AssignmentQuerySet(models.QuerySet):
    def open_blind(self) -> AssignmentQuerySet:
        """Assignments still judged blind: open, blind, and their reviewer has not asked to see
        the grader early. No grader field may reach the reviewer on such a group, however
        aggregated (Assignment.is_open_blind says the same of one row already read)."""
        return self.filter(status=Assignment.Status.OPEN, blind=True, revealed_early=False)


class Assignment(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="assignments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    blind = models.BooleanField(default=True)
    # Rollout indexes in the order this reviewer sees them (shuffled per reviewer in blind mode).
    order = models.JSONField(default=list, blank=True)
    # The unsaved form as last autosaved, so a reload or a crash loses nothing.
    draft = models.JSONField(default=dict, blank=True)
    draft_saved_at = models.DateTimeField(null=True, blank=True)
    revealed_early = models.BooleanField(default=False, help_text="the reviewer asked to see the grader before submitting")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["group", "reviewer"], name="group_served_once_per_reviewer")]
        indexes = [models.Index(fields=["reviewer", "status"], name="assignment_reviewer_status")]

    def __str__(self) -> str:
        return f"{self.group_id} → {self.reviewer} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN

    @property
    def is_open_blind(self) -> bool:
        """AssignmentQuerySet.open_blind, for this row."""
        return self.is_open and self.blind and not self.revealed_early


class Judgment(models.Model):
    """One person's judgment of one group: a review, or an adjudicator's final word."""

    class Kind(models.TextChoices):
        REVIEW = "review", "Review"
        ADJUDICATION = "adjudication", "Adjudication"

    class Reason(models.TextChoices):
        REVIEWERS_DISAGREE = "reviewers_disagree", "Reviewers disagreed; settled on the evidence"
        GRADER_RIGHT = "grader_right", "Grader was right; reviewer missed something"
        GRADER_WRONG = "grader_wrong", "Grader was wrong"
        GUIDELINE = "guideline", "Tier guideline clarified"
        CHEAT = "cheat", "Cheat status decided the ranking"
        TIE = "tie", "No evidence separates them (tie)"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="judgments")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="judgments")
    kind = models.CharField(max_length=12, choices=Kind.choices, default=Kind.REVIEW)
    assignment = models.OneToOneField(Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="judgment")
    blind = models.BooleanField(default=False, help_text="made without having seen the grader's verdict")
    note = models.TextField(blank=True)
    reason = models.CharField(max_length=24, choices=Reason.choices, blank=True, help_text="adjudications only")
    seconds_spent = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "reviewer", "kind"], name="one_judgment_per_person_per_kind"),
            models.UniqueConstraint(fields=["group"], condition=Q(kind="adjudication"), name="one_adjudication_per_group"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.group_id} by {self.reviewer}"


class JudgmentItem(models.Model):
    """A judgment of one passing rollout."""

    # T1, T2, T3 (grading.method.tiers). The Enum functional API, which django-stubs types only as a class.
    Tier = models.TextChoices("Tier", TIER_CHOICES)  # type: ignore[call-overload]

    judgment = models.ForeignKey(Judgment, on_delete=models.CASCADE, related_name="items")
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="judgment_items")
    tier = models.CharField(max_length=2, choices=Tier.choices)
    rank = models.PositiveIntegerField()
    cheat = models.BooleanField(default=False)
    scores = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["judgment", "rank", "rollout"]
        constraints = [models.UniqueConstraint(fields=["judgment", "rollout"], name="one_item_per_rollout_per_judgment")]


class AdjudicationDraft(models.Model):
    """An adjudicator's unsaved final ranking of a group, as last autosaved, so reopening the
    form loses nothing. Deleted when the group's adjudication is stored."""

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="adjudication_drafts")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="adjudication_drafts")
    data = models.JSONField(default=dict, blank=True)
    saved_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["group", "user"], name="one_adjudication_draft_per_person")]


class GroupReview(models.Model):
    """What the queues need to know about one group, kept current by the services."""

    group = models.OneToOneField("grading.Group", on_delete=models.CASCADE, primary_key=True, related_name="review")
    n_reviews = models.PositiveIntegerField(default=0)
    # Bumped by every judgment; a page that loaded an older version learns someone else submitted.
    version = models.PositiveIntegerField(default=0)
    needs_adjudication = models.BooleanField(default=False, db_index=True)
    disagreement = models.JSONField(default=list, blank=True, help_text="why the group needs an adjudicator")
    adjudicated = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)


class Reveal(models.Model):
    """Grader fields were shown to a person: every time, with the reason."""

    class Reason(models.TextChoices):
        SUBMITTED = "submitted", "After submitting"
        EARLY = "early", "Asked before submitting"
        BROWSE = "browse", "Opened outside a blind assignment"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="reveals")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reveals")
    verdict = models.ForeignKey("grading.Verdict", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=10, choices=Reason.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "group"], name="reveal_user_group")]


class CheatAudit(models.Model):
    """One audit decision on a cheat signal. The signal (grading.CheatDecision) holds the
    current state; these rows keep every confirm / overturn, who made it and why."""

    decision = models.ForeignKey("grading.CheatDecision", on_delete=models.CASCADE, related_name="audits")
    auditor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="cheat_audits")
    confirmed = models.BooleanField()
    reason = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
