"""The scanners' validation set: people's labels of rollouts, one per rollout and category of
the scanners' catalogue (grading.grader.prescreen.catalogue), against which each scanner
version is counted (grading.grader.scan_figures, docs/scanners.md#validation-sets)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class ScanLabel(models.Model):
    """Whether a rollout is a cheat of one category, as a person says: an auditor's decision in
    the cheat audit on a rollout a scanner flagged (grading.verdicts.scan_labels.label_audited),
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


class ProjectScanner(models.Model):
    """One version of a project's own scanner (grading.jobs.project_scanners): a pattern of
    literal terms over the commands a rollout ran or the lines its patch adds or removes, or an
    LLM scanner (a question asked of a defined grader's endpoint). A changed definition is a new
    version; the same definition again is the version it already is. Its findings are stored as
    open cheat decisions authored `<name>@<version>`: evidence for the auditor, never a cheat."""

    class Kind(models.TextChoices):
        PATTERN = "pattern", "Pattern"
        LLM = "llm", "LLM"

    project = models.ForeignKey("grading.Project", on_delete=models.CASCADE, related_name="scanners")
    name = models.CharField(max_length=60, help_text="a slug, unique in the project; its versions share it")
    version = models.PositiveIntegerField()
    kind = models.CharField(max_length=7, choices=Kind.choices)
    definition = models.JSONField(default=dict)
    category = models.CharField(max_length=40, default="custom", help_text="a catalogue slug it reports under, or custom")
    description = models.TextField(blank=True)
    fingerprint = models.CharField(max_length=64)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name", "version"], name="one_scanner_version_per_number"),
            models.UniqueConstraint(fields=["project", "name", "fingerprint"], name="one_scanner_version_per_definition"),
        ]

    def __str__(self) -> str:
        return f"{self.author} ({self.kind})"

    @property
    def author(self) -> str:
        """The versioned name its findings are stored under."""
        return f"{self.name}@{self.version}"


class ScannerRead(models.Model):
    """A project scanner's version read this rollout and stored no finding: it found nothing, or
    (an LLM scanner) its answer was refused. Running the version again does not read the rollout
    again (grading.jobs.project_scanners.run_scanner): the same version asks the same question
    once. A call that failed leaves no row, so the next run asks again."""

    class Outcome(models.TextChoices):
        CLEAR = "clear", "nothing found"
        REFUSED = "refused", "the answer was refused"

    scanner = models.ForeignKey(ProjectScanner, on_delete=models.CASCADE, related_name="reads")
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scanner", "rollout"], name="one_read_per_scanner_version_per_rollout")]

    def __str__(self) -> str:
        return f"{self.scanner_id} read {self.rollout_id}: {self.outcome}"
