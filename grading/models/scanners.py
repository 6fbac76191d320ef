"""The scanners' validation set: people's labels of rollouts, one per rollout and category of
the scanners' catalogue (grading.grader.prescreen.catalogue), against which each scanner
version is counted (grading.grader.scan_figures, docs/scanners.md#validation-sets)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class ScanLabel(models.Model):
    """Whether a rollout is a cheat of one category, as a person says: an auditor's decision in
    the cheat audit on a rollout a scanner flagged (grading.grader.scan_labels.label_audited),
    or an upload. A newer label of the same rollout and category replaces the older, with its
    own author and time."""

    class Label(models.TextChoices):
        CHEAT = "cheat", "Cheat"
        HONEST = "honest", "Honest"

    class Source(models.TextChoices):
        AUDIT = "audit", "The cheat audit"
        UPLOAD = "upload", "An upload"

    project = models.ForeignKey("grading.Project", on_delete=models.CASCADE, related_name="scan_labels")
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="scan_labels")
    category = models.CharField(max_length=40, help_text="a slug of the scanners' catalogue, e.g. history_search")
    label = models.CharField(max_length=6, choices=Label.choices)
    source = models.CharField(max_length=6, choices=Source.choices)
    author = models.CharField(max_length=150, blank=True, help_text="who labeled it: the auditor or the uploading account")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, help_text="when this label was given (replacing any older one)")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["rollout", "category"], name="one_scan_label_per_rollout_and_category")]
        indexes = [models.Index(fields=["project", "category"], name="scan_label_project_category")]

    def __str__(self) -> str:
        return f"{self.category} on rollout {self.rollout_id}: {self.label}"
