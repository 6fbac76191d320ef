"""What the product stores: projects and their people, runs, steps, tasks, groups, rollouts.

Scale (METHOD.md): a step holds up to 1568 groups x 16 rollouts and one rollout can carry
100k+ tokens of messages. So every large body (messages, patch, test log) lives in
`RolloutContent`, one row per rollout joined only when a page or export needs it; list
queries touch `Group` and `Rollout`, which hold identities, counts and small stats.
"""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q


class Role(models.TextChoices):
    REVIEWER = "reviewer", "Reviewer"
    AUDITOR = "auditor", "Auditor"
    ADJUDICATOR = "adjudicator", "Adjudicator"
    ADMIN = "admin", "Admin"
    TRAINER = "trainer", "Trainer (read-only API)"


# What each role may do. Views and API permissions ask for a capability, never a role
# name, so adding a role is one line here.
ROLE_CAPABILITIES: dict[str, frozenset[str]] = {
    Role.REVIEWER: frozenset({"view", "review"}),
    Role.AUDITOR: frozenset({"view", "review", "audit"}),
    Role.ADJUDICATOR: frozenset({"view", "review", "adjudicate"}),
    Role.ADMIN: frozenset({"view", "review", "audit", "adjudicate", "ingest", "manage", "export"}),
    Role.TRAINER: frozenset({"export"}),
}


class Project(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="projects")

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
    def capabilities(self) -> frozenset[str]:
        return ROLE_CAPABILITIES.get(self.role, frozenset())


class ApiToken(models.Model):
    """A revocable API token. Only a SHA-256 of the secret is stored; the secret is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_tokens")
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
    def issue(cls, *, user, project: Project, name: str = "") -> tuple[ApiToken, str]:
        secret = cls.PREFIX + secrets.token_urlsafe(32)
        token = cls.objects.create(
            user=user, project=project, name=name, prefix=secret[: len(cls.PREFIX) + 6], digest=cls.digest_of(secret)
        )
        return token, secret


class Run(models.Model):
    """One RL training run; its steps hold the groups. The baseline is chosen per run (METHOD.md §1)."""

    class Baseline(models.TextChoices):
        MEAN = "mean", "mean (Dr. GRPO)"
        LOO = "loo", "leave-one-out (RLOO)"
        GRPO = "grpo", "GRPO (std-normalised)"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=200)
    baseline = models.CharField(max_length=8, choices=Baseline.choices, default=Baseline.MEAN)
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="run_name_unique_in_project")]

    def __str__(self) -> str:
        return f"{self.project}/{self.name}"


class Step(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    number = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="step_number_unique_in_run")]

    def __str__(self) -> str:
        return f"{self.run} step {self.number}"


class Task(models.Model):
    """A coding task (e.g. a SWE-bench instance) as seen by one run; shared by its groups across steps."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tasks")
    instance_id = models.CharField(max_length=300)
    repo = models.CharField(max_length=300, blank=True)
    base_commit = models.CharField(max_length=100, blank=True)
    problem_statement = models.TextField(blank=True)
    gold_patch = models.TextField(blank=True)
    test_patch = models.TextField(blank=True)
    fail_to_pass = models.JSONField(default=list, blank=True)
    pass_to_pass = models.JSONField(default=list, blank=True)
    extra = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["instance_id"]
        constraints = [models.UniqueConstraint(fields=["run", "instance_id"], name="task_unique_in_run")]

    def __str__(self) -> str:
        return self.instance_id


class Group(models.Model):
    """The n rollouts of one task at one step. Identity: (run, uid)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="groups")
    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="groups")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="groups")
    uid = models.CharField(max_length=300)
    # Denormalised from the rollouts so list pages and queues never count rows.
    n_rollouts = models.PositiveIntegerField(default=0)
    n_passed = models.PositiveIntegerField(default=0)
    n_unknown = models.PositiveIntegerField(default=0)
    is_mixed = models.BooleanField(default=False, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["step__number", "uid"]
        constraints = [models.UniqueConstraint(fields=["run", "uid"], name="group_uid_unique_in_run")]
        indexes = [models.Index(fields=["step", "uid"], name="group_step_uid")]

    def __str__(self) -> str:
        return self.uid

    @property
    def n_failed(self) -> int:
        return self.n_rollouts - self.n_passed - self.n_unknown


class Rollout(models.Model):
    """One trajectory of a group: the small, listable part. Bodies are in RolloutContent."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="rollouts")
    index = models.PositiveIntegerField()
    # None when the source carried no test verdict (importers say so instead of guessing).
    reward = models.FloatField(null=True, blank=True)
    passed = models.BooleanField(null=True, blank=True)
    exit_status = models.CharField(max_length=100, blank=True)
    n_messages = models.PositiveIntegerField(default=0)
    tokens = models.BigIntegerField(null=True, blank=True)
    cost_usd = models.FloatField(null=True, blank=True)
    stats = models.JSONField(default=dict, blank=True)
    patch_files = models.PositiveIntegerField(default=0)
    patch_added = models.PositiveIntegerField(default=0)
    patch_removed = models.PositiveIntegerField(default=0)
    patch_parses = models.BooleanField(default=True)
    tests_passed = models.PositiveIntegerField(default=0)
    tests_failed = models.PositiveIntegerField(default=0)
    source_format = models.CharField(max_length=64, blank=True)
    source_ref = models.CharField(max_length=1000, blank=True)
    # SHA-256 of the canonical rollout JSON: same content -> unchanged, other content -> conflict.
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["group", "index"]
        constraints = [
            models.UniqueConstraint(fields=["group", "index"], name="rollout_index_unique_in_group"),
            models.CheckConstraint(
                condition=Q(reward__isnull=True) | (Q(reward__gte=0) & Q(reward__lte=1)), name="reward_in_unit_interval"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group.uid}#{self.index}"

    @property
    def outcome(self) -> str:
        if self.passed is None:
            return "unknown"
        return "pass" if self.passed else "fail"


class RolloutContent(models.Model):
    """The large bodies of a rollout, fetched one rollout at a time."""

    rollout = models.OneToOneField(Rollout, on_delete=models.CASCADE, primary_key=True, related_name="content")
    messages = models.JSONField(default=list, blank=True)
    patch = models.TextField(blank=True)
    tests = models.JSONField(default=dict, blank=True)
    test_log = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"content of rollout {self.rollout_id}"


from grading.models_method import (  # noqa: E402  the method's models live in their own module
    AdvantageResult,
    CheatDecision,
    FactorMapping,
    MappingActivation,
    RolloutGrade,
    StepComputation,
    Verdict,
)

