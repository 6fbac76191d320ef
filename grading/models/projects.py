"""Tenancy: projects, their members and roles, and API tokens bound to a project."""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Role(models.TextChoices):
    REVIEWER = "reviewer", "Reviewer"
    AUDITOR = "auditor", "Auditor"
    ADJUDICATOR = "adjudicator", "Adjudicator"
    ADMIN = "admin", "Admin"
    TRAINER = "trainer", "Trainer (read-only API)"
    GRADER = "grader", "Grader (posts an external grader's verdicts through the API)"


class Capability(models.TextChoices):
    """What a role may do. The access helpers (grading.projects.access), the views and the
    templates (through grading.context_processors) name these members, never the strings."""

    VIEW = "view", "See the project's runs, groups and figures"
    REVIEW = "review", "Judge groups from the review queue"
    AUDIT = "audit", "Settle cheat signals"
    ADJUDICATE = "adjudicate", "Settle disagreements between raters"
    INGEST = "ingest", "Import runs and groups"
    MANAGE = "manage", "Grade, set policies, activate mappings, manage the team"
    EXPORT = "export", "Read advantages and labels through the API"
    GRADE = "grade", "Post an external grader's verdicts"


# What each role may do. Views and API permissions ask for a capability, never a role
# name, so adding a role is one line here.
ROLE_CAPABILITIES: dict[str, frozenset[Capability]] = {
    Role.REVIEWER: frozenset({Capability.VIEW, Capability.REVIEW}),
    Role.AUDITOR: frozenset({Capability.VIEW, Capability.REVIEW, Capability.AUDIT}),
    Role.ADJUDICATOR: frozenset({Capability.VIEW, Capability.REVIEW, Capability.ADJUDICATE}),
    Role.ADMIN: frozenset(Capability),
    Role.TRAINER: frozenset({Capability.EXPORT}),
    # A team's own grading fleet: sees the groups it grades (GET /api/v1/groups/) and posts
    # its verdicts (POST /api/v1/verdicts/); it neither judges, exports nor manages.
    Role.GRADER: frozenset({Capability.VIEW, Capability.GRADE}),
}


class Project(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    # Instance-id prefixes of the benchmarks whose images hold history past the base commit
    # (commit0-style): reading that history is no leak there (grading.grader.prescreen, Task.future_history).
    future_history_prefixes = models.JSONField(default=list, blank=True)
    health_thresholds = models.JSONField(
        default=dict, blank=True, help_text="what raises a run's health warnings (grading.health.warnings.Thresholds)"
    )
    # Who last changed them and when, shown on the project's Health warnings page
    # (grading.health.services.set_health_thresholds); empty while they are the defaults as made.
    health_thresholds_updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    health_thresholds_updated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members: models.ManyToManyField[User, Membership] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.project} ({self.role})"

    @property
    def capabilities(self) -> frozenset[Capability]:
        return ROLE_CAPABILITIES.get(self.role, frozenset())


class ServiceAccount(models.Model):
    """An account made for one project's scripts on its Team page: no password, it acts only
    through tokens of that project. What it does is named with the admin who made it
    (grading.projects.accounts.acting_name), so no token speaks for a person."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="service_account")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="service_accounts")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.user} (service account of {self.project})"


class ApiToken(models.Model):
    """A revocable API token. Only a SHA-256 of the secret is stored; the secret is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
    # The project admin who made it on the Team page; empty for the server operator's
    # `create_api_token` command (and for tokens made before this was recorded).
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, db_index=True)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    PREFIX = "gagar_"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}, {self.project})"

    @staticmethod
    def digest_of(secret: str) -> str:
        return hashlib.sha256(secret.encode()).hexdigest()

    @classmethod
    def issue(cls, *, user, project: Project, name: str = "", created_by=None) -> tuple[ApiToken, str]:
        secret = cls.PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user,
            project=project,
            name=name,
            prefix=secret[: len(cls.PREFIX) + 6],
            digest=cls.digest_of(secret),
            created_by=created_by,
        )
        return token, secret
