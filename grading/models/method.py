"""Models of the method: factor mappings and their activations, step computations and the
stored advantages. Kept apart from the data store (runs, groups, rollouts) and from the
grader's verdicts because these change for different reasons.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from grading.method.advantage import MappingSpec


class FactorMapping(models.Model):
    """A versioned tier -> f mapping (docs/method.md §3). Immutable once used: change = new version."""

    class Source(models.TextChoices):
        DEFAULT = "default", "Default (docs/method.md §3)"
        CALIBRATED = "calibrated", "Calibrated from human judgments"
        MANUAL = "manual", "Set by hand"

    project = models.ForeignKey(
        "grading.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="mappings",
        help_text="empty for the built-in default mapping, shared by every project",
    )
    name = models.SlugField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    bands = models.JSONField(help_text='{"T1": [hi, lo], "T2": [hi, lo], "T3": [hi, lo]}')
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MANUAL)
    fit = models.JSONField(default=dict, blank=True, help_text="judgments, counts and intervals a calibrated mapping came from")
    # A calibrated mapping fits one grader version's tiers (or one jury's): it is activated
    # only on runs that grader grades (grading.method.services.activation.mapping_grader_refusal).
    grader = models.CharField(
        max_length=100,
        blank=True,
        help_text="the grader version (or jury) a calibrated mapping was fitted on; empty for default, manual mappings",
    )
    note = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        # Versions count per project (grading.method.services.activation.create_mapping): a name another
        # project uses is neither visible nor in the way. Built-in mappings have no project,
        # and NULLs are distinct in a unique index, hence the second constraint.
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name", "version"],
                condition=models.Q(project__isnull=False),
                name="mapping_version_unique_in_project",
            ),
            models.UniqueConstraint(
                fields=["name", "version"], condition=models.Q(project__isnull=True), name="mapping_version_unique_builtin"
            ),
        ]

    def __str__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}"

    @property
    def spec(self):
        return MappingSpec.from_dict(self.bands)


class MappingActivation(models.Model):
    """Who made which mapping active for a run, when and why. The newest row is in force."""

    run = models.ForeignKey("grading.Run", on_delete=models.CASCADE, related_name="mapping_activations")
    mapping = models.ForeignKey(FactorMapping, on_delete=models.PROTECT, related_name="activations")
    activated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField(blank=True)
    # A calibrated mapping below its project's minimum evidence (CalibrationMinimum) is only
    # activated on an explicit override; the row says which activations were.
    overrode_minimum = models.BooleanField(default=False, help_text="activated below the project's calibration minimum")
    created_at = models.DateTimeField(auto_now_add=True)

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
    # The step's inputs_version these numbers were computed from.
    inputs_version = models.PositiveIntegerField(default=0)
    # A recomputation is queued and has not saved yet: further changes need not queue another.
    recompute_queued = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["step", "mapping"], name="one_computation_per_step_mapping")]


class StepExport(models.Model):
    """The exact bytes of a one-step export as served, per inputs version, mapping and format.

    A trainer trains on what it took: a verdict arriving after the step's deadline changes
    the current numbers (and the pages), so asking again with `inputs_version=V` must give
    back the rows served at V, byte for byte, not a recomputation.
    """

    step = models.ForeignKey("grading.Step", on_delete=models.CASCADE, related_name="exports")
    mapping = models.ForeignKey(FactorMapping, on_delete=models.PROTECT, related_name="+")
    inputs_version = models.PositiveIntegerField()
    format = models.CharField(max_length=10)
    turn_weights = models.BooleanField(default=False, help_text="served with the turn_weights column (?turn_weights=1)")
    final = models.BooleanField(help_text="whether the step was final when these bytes were first served")
    body = models.BinaryField(editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["step", "mapping", "inputs_version", "format", "turn_weights"],
                name="one_export_per_step_version_format_columns",
            )
        ]


class AdvantageResult(models.Model):
    """One `gagar-advantage/1` row: a rollout's numbers under one mapping.

    The export columns are stored denormalised so a million rows stream straight out of
    one table (PostgreSQL COPY) without joins.
    """

    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="advantages")
    mapping = models.ForeignKey(FactorMapping, on_delete=models.PROTECT, related_name="results")
    step = models.ForeignKey("grading.Step", on_delete=models.CASCADE, related_name="advantages")
    verdict = models.ForeignKey("grading.Verdict", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
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
    # The trainer's drop reason ("" = kept) and the mode the run's drop policy gave it.
    dropped = models.CharField(max_length=40, blank=True, default="")
    drop_mode = models.CharField(max_length=10, blank=True, default="")
    # {message index: weight} for the turns weighing less than 1 ({} = uniform), when the run
    # gives per-token advantages (Run.turn_weights); null when it does not.
    turn_weights = models.JSONField(null=True, blank=True)
    computed_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rollout", "mapping"], name="one_result_per_rollout_per_mapping")]
        indexes = [models.Index(fields=["step", "mapping", "uid", "index"], name="advantage_export_order")]


class RubricGuide(models.Model):
    """A project's edits to the rubric guide (grading.method.guide): what T1, T2, T3 and the
    five rubric dimensions mean. No row means the method's default text. The LLM grader's
    prompt, the judge panel and the grader SFT export all read it through
    grading.method.project_guides.guide_for."""

    project = models.OneToOneField("grading.Project", on_delete=models.CASCADE, related_name="rubric_guide")
    tiers = models.JSONField(default=dict, help_text='{"T1": meaning, "T2": ..., "T3": ...}')
    dimensions = models.JSONField(default=dict, help_text='{"<dimension>": {"meaning": ..., "example": ...}} for the five')
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"rubric guide of {self.project}"


class CalibrationMinimum(models.Model):
    """A project's minimum evidence for activating a fitted mapping without an override
    (grading.method.evidence). No row means the defaults: 30 judged mixed groups and every
    grader tier seen in at least 5 pairs."""

    project = models.OneToOneField("grading.Project", on_delete=models.CASCADE, related_name="calibration_minimum")
    groups = models.PositiveIntegerField(help_text="judged mixed groups a fit must rest on")
    tier_pairs = models.PositiveIntegerField(help_text="pairs (grader tier, people's tier) every grader tier must have")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"calibration minimum of {self.project}"
