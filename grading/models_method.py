"""Models of the method: verdicts, cheat decisions, factor mappings, stored advantages.

Imported into grading.models. Kept apart from the data store (runs, groups, rollouts)
because these change for different reasons: the method's inputs and outputs.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class FactorMapping(models.Model):
    """A versioned tier -> f mapping (METHOD.md §3). Immutable once used: change = new version."""

    class Source(models.TextChoices):
        DEFAULT = "default", "Default (METHOD.md §3)"
        CALIBRATED = "calibrated", "Calibrated from human judgments"
        MANUAL = "manual", "Set by hand"

    project = models.ForeignKey("grading.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="mappings",
                                help_text="empty for the built-in default mapping, shared by every project")
    name = models.SlugField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    bands = models.JSONField(help_text='{"T1": [hi, lo], "T2": [hi, lo], "T3": [hi, lo]}')
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MANUAL)
    fit = models.JSONField(default=dict, blank=True, help_text="judgments, counts and intervals a calibrated mapping came from")
    note = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [models.UniqueConstraint(fields=["name", "version"], name="mapping_version_unique")]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def spec(self):
        from grading.advantage import MappingSpec

        return MappingSpec.from_dict(self.bands)


class MappingActivation(models.Model):
    """Who made which mapping active for a run, when and why. The newest row is in force."""

    run = models.ForeignKey("grading.Run", on_delete=models.CASCADE, related_name="mapping_activations")
    mapping = models.ForeignKey(FactorMapping, on_delete=models.PROTECT, related_name="activations")
    activated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class Verdict(models.Model):
    """A grader's judgment of one mixed group. One per group per grader version."""

    class Status(models.TextChoices):
        VALID = "valid", "Valid"
        INVALID = "invalid", "Invalid (falls back)"
        TIMEOUT = "timeout", "Timed out (falls back)"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="verdicts")
    grader = models.CharField(max_length=100, help_text="grader name and version, e.g. heuristic@1 or gpt-x@2026-11")
    status = models.CharField(max_length=10, choices=Status.choices)
    errors = models.JSONField(default=list, blank=True)
    raw = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["group", "grader"], name="one_verdict_per_group_per_grader")]

    def __str__(self) -> str:
        return f"{self.grader} on {self.group_id} ({self.status})"


class RolloutGrade(models.Model):
    """The verdict's judgment of one passing rollout."""

    class Tier(models.TextChoices):
        T1 = "T1"
        T2 = "T2"
        T3 = "T3"

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="grades")
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="grades")
    tier = models.CharField(max_length=2, choices=Tier.choices)
    rank = models.PositiveIntegerField()
    scores = models.JSONField(default=dict, blank=True)
    cheat = models.BooleanField(default=False)
    evidence = models.JSONField(default=list, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verdict", "rollout"], name="one_grade_per_rollout_per_verdict")]


class CheatDecision(models.Model):
    """A cheat signal and its audit. Only a confirmed one zeroes the reward (METHOD.md §1)."""

    class Source(models.TextChoices):
        GRADER = "grader", "Grader flag"
        PRESCREEN = "prescreen", "Deterministic prescreen"
        REVIEWER = "reviewer", "Reviewer"

    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="cheat_decisions")
    source = models.CharField(max_length=10, choices=Source.choices)
    confirmed = models.BooleanField(null=True, help_text="empty until audited; true = confirmed cheat; false = overturned")
    reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class StepComputation(models.Model):
    """Stored advantages of one step under one mapping are current iff this row is not stale."""

    step = models.ForeignKey("grading.Step", on_delete=models.CASCADE, related_name="computations")
    mapping = models.ForeignKey(FactorMapping, on_delete=models.PROTECT, related_name="computations")
    stale = models.BooleanField(default=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    n_rows = models.PositiveIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    # The step's gagar-advantage/1 rows as a Parquet file, written in the same transaction
    # as the rows: a Parquet export of current steps is a concatenation of these, and an
    # export can be reproduced byte for byte later. Deferred wherever it is not needed.
    parquet = models.BinaryField(null=True, blank=True, editable=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["step", "mapping"], name="one_computation_per_step_mapping")]


class AdvantageResult(models.Model):
    """One `gagar-advantage/1` row: a rollout's numbers under one mapping.

    The export columns are stored denormalised so a million rows stream straight out of
    one table (PostgreSQL COPY) without joins.
    """

    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="advantages")
    mapping = models.ForeignKey(FactorMapping, on_delete=models.PROTECT, related_name="results")
    step = models.ForeignKey("grading.Step", on_delete=models.CASCADE, related_name="advantages")
    verdict = models.ForeignKey(Verdict, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    run_name = models.CharField(max_length=200)
    step_number = models.PositiveIntegerField()
    uid = models.CharField(max_length=300)
    index = models.PositiveIntegerField()
    instance_id = models.CharField(max_length=300)
    reward = models.FloatField(null=True)
    passed = models.BooleanField(null=True)
    cheat = models.BooleanField(default=False)
    cheat_source = models.CharField(max_length=10, blank=True)
    baseline = models.CharField(max_length=8)
    advantage = models.FloatField()
    tier = models.CharField(max_length=2, blank=True)
    rank = models.PositiveIntegerField(null=True)
    factor = models.FloatField()
    lambda_value = models.FloatField(db_column="lambda")
    redistributed_advantage = models.FloatField()
    discount_only_advantage = models.FloatField()
    mapping_label = models.CharField(max_length=120)
    status = models.CharField(max_length=10)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rollout", "mapping"], name="one_result_per_rollout_per_mapping")]
        indexes = [models.Index(fields=["step", "mapping", "uid", "index"], name="advantage_export_order")]


class GradingJob(models.Model):
    """One group queued for one grader: what the grader-run page shows. The verdict itself is
    unique per (group, grader), so a redelivered task finds it and makes no second call."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="grading_jobs")
    grader = models.CharField(max_length=100)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    verdict = models.ForeignKey(Verdict, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    latency_s = models.FloatField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["group_id"]
        constraints = [models.UniqueConstraint(fields=["group", "grader"], name="one_grading_job_per_group_per_grader")]
