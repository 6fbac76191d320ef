"""A project's graders and their versions (grading.registry.versions).

A grader is a name in a project (`heuristic`, `llm:<model>`, or a team's own, e.g. `acme-fleet`)
with a backend; each of its versions is an immutable configuration, and a change of any part
of it (model, endpoint, prompt version, rubric guide, tools, budgets) is a new version. A
verdict names the version it was made by as `<grader>@<version>` in `Verdict.grader`, so two
versions are two graders to calibration and the bench. Endpoints and keys are stored as the
NAMES of environment variables, never as values.

A campaign runs one built-in grader version on a scope of groups (a step, a run, the groups
people judged) in the background (grading.jobs.campaigns); a group it finds graded by
that version already is skipped, so running it again does nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Grader(models.Model):
    class Backend(models.TextChoices):
        HEURISTIC = "heuristic", "Heuristic (built in)"
        LLM = "llm", "LLM over an OpenAI-compatible server"
        EXTERNAL = "external", "External (verdicts posted to /api/v1/verdicts/)"

    project = models.ForeignKey("grading.Project", on_delete=models.CASCADE, related_name="graders")
    name = models.CharField(max_length=80, help_text="the part of a verdict's grader name before '@'")
    backend = models.CharField(max_length=10, choices=Backend.choices)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="one_grader_per_name_per_project")]

    def __str__(self) -> str:
        return f"{self.name} ({self.backend}) in {self.project_id}"

    @property
    def is_defined(self) -> bool:
        """One of the project's own LLM graders (grading.registry.defined), not the built-in one."""
        return self.backend == self.Backend.LLM and not self.name.startswith("llm:")


class GraderVersion(models.Model):
    """One immutable configuration of a grader. `name` is what verdicts store ("<grader>@<version>")."""

    grader = models.ForeignKey(Grader, on_delete=models.CASCADE, related_name="versions")
    project = models.ForeignKey("grading.Project", on_delete=models.CASCADE, related_name="+")
    version = models.CharField(max_length=40)
    name = models.CharField(max_length=100, help_text="<grader>@<version>, as Verdict.grader holds it")
    model = models.CharField(max_length=200, blank=True)
    endpoint_env = models.CharField(max_length=100, blank=True, help_text="name of the environment variable holding the base URL")
    api_key_env = models.CharField(max_length=100, blank=True, help_text="name of the environment variable holding the key")
    prompt_version = models.PositiveIntegerField(null=True, blank=True, help_text="the grader protocol's version")
    guide_version = models.CharField(max_length=20, blank=True, help_text="the rubric guide's fingerprint; empty = default")
    guide = models.JSONField(default=dict, blank=True, help_text="the rubric guide it grades with, when edited")
    tools = models.JSONField(default=list, blank=True)
    budgets = models.JSONField(default=dict, blank=True, help_text="max_turns, max_tokens, request_timeout_s")
    config = models.JSONField(default=dict, blank=True, help_text="anything else an external grader declares")
    fingerprint = models.CharField(max_length=64, help_text="of the configuration above: same configuration, same version")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["grader_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["grader", "version"], name="one_grader_version_per_label"),
            models.UniqueConstraint(fields=["project", "name"], name="one_grader_version_per_name_per_project"),
            models.UniqueConstraint(fields=["grader", "fingerprint"], name="one_grader_version_per_configuration"),
        ]

    def __str__(self) -> str:
        return self.name


class Campaign(models.Model):
    """One grader version run on a scope of mixed groups, with its progress and what it cost.

    Counts move by atomic updates as each group finishes (CampaignGroup says which have);
    `graded + skipped_existing + failed == total` finishes it. Tokens and cost are the sums of
    its verdicts' usage; `cost_usd` stays empty while no verdict reports a cost."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class Scope(models.TextChoices):
        STEP = "step", "A step"
        RUN = "run", "A run"
        JUDGED = "judged", "The groups people judged"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    project = models.ForeignKey("grading.Project", on_delete=models.CASCADE, related_name="campaigns")
    grader = models.CharField(max_length=100, help_text="the version it runs, as Verdict.grader holds it")
    backend = models.CharField(max_length=10, choices=Grader.Backend.choices)
    scope = models.CharField(max_length=10, choices=Scope.choices)
    run = models.ForeignKey("grading.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="campaigns")
    step_number = models.PositiveIntegerField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    total = models.PositiveIntegerField(default=0, help_text="mixed groups in the scope")
    graded = models.PositiveIntegerField(default=0, help_text="given a valid verdict by this campaign")
    skipped_existing = models.PositiveIntegerField(default=0, help_text="had a verdict of this version already")
    failed = models.PositiveIntegerField(default=0, help_text="an invalid or timed-out verdict, or an error")
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.FloatField(null=True, blank=True, help_text="empty while no verdict reports a cost")
    latency_sum_s = models.FloatField(default=0.0)
    latency_p50_s = models.FloatField(null=True, blank=True, help_text="set when it ends")
    latency_max_s = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["project", "-created_at"], name="campaign_project_recent")]

    def __str__(self) -> str:
        return f"campaign {self.pk}: {self.grader} on {self.scope} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def done(self) -> int:
        return self.graded + self.skipped_existing + self.failed

    @property
    def percent(self) -> int:
        return 100 if not self.total else int(100 * self.done / self.total)

    @property
    def latency_mean_s(self) -> float | None:
        finished = self.graded + self.failed
        return self.latency_sum_s / finished if finished else None


class CampaignGroup(models.Model):
    """A group a campaign grades: pending until its outcome is counted, once."""

    class Outcome(models.TextChoices):
        PENDING = "pending", "Pending"
        GRADED = "graded", "Graded"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="groups")
    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="+")
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.PENDING)
    latency_s = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["campaign_id", "group_id"]
        constraints = [models.UniqueConstraint(fields=["campaign", "group"], name="one_row_per_group_per_campaign")]
