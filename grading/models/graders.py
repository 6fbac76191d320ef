"""A project's graders and their versions (grading.grader.registry).

A grader is a name in a project (`heuristic`, `llm:<model>`, or a team's own, e.g. `acme-fleet`)
with a backend; each of its versions is an immutable configuration, and a change of any part
of it (model, endpoint, prompt version, rubric guide, tools, budgets) is a new version. A
verdict names the version it was made by as `<grader>@<version>` in `Verdict.grader`, so two
versions are two graders to calibration and the bench. Endpoints and keys are stored as the
NAMES of environment variables, never as values.
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
