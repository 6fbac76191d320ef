"""What the grader said: verdicts, per-rollout grades, the checks it ran, cheat decisions, the
grading jobs that produce them, and each project's policy for checks."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from grading.method.tiers import TIER_CHOICES


class VerdictQuerySet(models.QuerySet):
    def by_graders(self) -> VerdictQuerySet:
        """Verdicts a grader made: none that was settled otherwise. Not those a person settled
        (a jury that waited for a person takes their judgment as its verdict,
        grading.verdicts.deliberation.settle_with_person): they move credit like any verdict of the
        run's jury, but are the people's own. Nor those settled without a model call because
        the passing patches were byte-identical (grading.verdicts.identical): no grader read
        those rollouts, and one might still have told them apart by their trajectories. Neither
        is ever a grader's word to show, to compare with people or to calibrate on."""
        return self.filter(settled_by=Verdict.SettledBy.GRADER)

    def on_record(self) -> VerdictQuerySet:
        """The verdicts an export of the record lists, each with its `settled_by`: the graders'
        and those settled without a model call; not a person's (theirs are in the judgments)."""
        return self.exclude(settled_by=Verdict.SettledBy.PERSON)


class Verdict(models.Model):
    """A grader's judgment of one mixed group. One per group per grader version."""

    class Status(models.TextChoices):
        VALID = "valid", "Valid"
        INVALID = "invalid", "Invalid (falls back)"
        TIMEOUT = "timeout", "Timed out (falls back)"

    class SettledBy(models.TextChoices):
        GRADER = "", "The grader"
        PERSON = "person", "A person's judgment (a jury waited for one)"
        IDENTICAL_PATCHES = "identical-patches", "No model call: the passing patches are byte-identical (falls back)"

    group = models.ForeignKey("grading.Group", on_delete=models.CASCADE, related_name="verdicts")
    grader = models.CharField(max_length=100, help_text="grader name and version, e.g. heuristic@1 or gpt-x@2026-11")
    status = models.CharField(max_length=10, choices=Status.choices)
    errors = models.JSONField(default=list, blank=True)
    raw = models.JSONField(default=dict, blank=True)
    n_checks = models.PositiveIntegerField(default=0, help_text="commands the grader ran in its sandbox (VerdictCheck rows)")
    settled_by = models.CharField(max_length=20, choices=SettledBy.choices, default=SettledBy.GRADER, blank=True)
    # A campaign's verdict by a grader the run's policy does not use (grading.jobs.campaigns):
    # on the bench and in calibration like any other, never in the method's numbers.
    bench_only = models.BooleanField(
        default=False, help_text="made by a campaign of a grader the run's policy does not use: never in the advantages"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = VerdictQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["group", "grader"], name="one_verdict_per_group_per_grader")]

    def __str__(self) -> str:
        return f"{self.grader} on {self.group_id} ({self.status})"


class CheckPolicy(models.Model):
    """Whether the grader may run checks in a sandbox on this project's groups, and how many and
    how long (grading.registry.checks). No row means checks are off."""

    project = models.OneToOneField("grading.Project", on_delete=models.CASCADE, related_name="check_policy")
    enabled = models.BooleanField(default=False)
    max_checks = models.PositiveIntegerField(default=8, help_text="checks per group")
    seconds = models.PositiveIntegerField(default=60, help_text="wall-clock and CPU seconds per check")
    memory_mb = models.PositiveIntegerField(default=2048, help_text="address space per process, MiB")
    updated_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"check policy of {self.project}"


class VerdictCheck(models.Model):
    """A command the grader ran in a sandbox on one rollout's state while grading: evidence of
    kind "check", cited as check:<number> (grading.grader.evidence). Shown to reviewers after
    the reveal and exported with the labeled group."""

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="checks")
    number = models.PositiveIntegerField(help_text="1-based, in the order the grader ran them")
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="checks")
    command = models.TextField()
    exit_status = models.IntegerField(null=True, blank=True, help_text="empty when the sandbox stopped it")
    seconds = models.FloatField()
    output = models.TextField(blank=True, help_text="stdout and stderr, capped by the sandbox")
    truncated = models.BooleanField(default=False)
    killed = models.CharField(max_length=40, blank=True, help_text="why the sandbox stopped it, if it did")
    sandbox = models.CharField(max_length=40, blank=True)

    class Meta:
        ordering = ["verdict_id", "number"]
        constraints = [models.UniqueConstraint(fields=["verdict", "number"], name="one_check_per_number_per_verdict")]

    def __str__(self) -> str:
        return f"check {self.number} of verdict {self.verdict_id}"


class RolloutGrade(models.Model):
    """The verdict's judgment of one passing rollout."""

    # T1, T2, T3 (grading.method.tiers). The Enum functional API, which django-stubs types only as a class.
    Tier = models.TextChoices("Tier", TIER_CHOICES)  # type: ignore[call-overload]

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="grades")
    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="grades")
    tier = models.CharField(max_length=2, choices=Tier.choices)
    rank = models.PositiveIntegerField()
    scores = models.JSONField(default=dict, blank=True)
    cheat = models.BooleanField(default=False)
    evidence = models.JSONField(default=list, blank=True)
    # A judgment that speaks against its rollout and cites nothing (grading.grader.evidence.is_uncited):
    # only a grader that runs elsewhere may post one (grading.verdicts.external); shown as such
    # and counted apart on the bench.
    uncited = models.BooleanField(
        default=False, db_default=False, help_text="a tier below T1, a low score or a cheat flag given without a citation"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verdict", "rollout"], name="one_grade_per_rollout_per_verdict")]


class CheatDecision(models.Model):
    """A cheat signal and its audit. Only a confirmed one zeroes the reward (docs/method.md §1)."""

    class Source(models.TextChoices):
        GRADER = "grader", "Grader flag"
        PRESCREEN = "prescreen", "Deterministic prescreen"
        REVIEWER = "reviewer", "Reviewer"
        SEARCH = "search", "Search (an auditor's query)"

    rollout = models.ForeignKey("grading.Rollout", on_delete=models.CASCADE, related_name="cheat_decisions")
    source = models.CharField(max_length=10, choices=Source.choices)
    confirmed = models.BooleanField(null=True, help_text="empty until audited; true = confirmed cheat; false = overturned")
    reason = models.TextField(blank=True)
    # Who raised it, as the audit names them: the grader's name, "prescreen", the reviewer
    # or the auditor whose search it was; and what it cites (grader evidence items).
    author = models.CharField(max_length=150, blank=True)
    evidence = models.JSONField(default=list, blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class GradingJob(models.Model):
    """One group queued for one grader: what the grader-run page shows. The verdict itself is
    unique per (group, grader), so a redelivered task finds it and makes no second call.

    `retries` counts the task's retries after an infrastructure error (grading.jobs.recovery),
    `resends` the times the sweep sent it again after no worker took it or finished it;
    `due_at` is when its latest retry or resend was due to start. A job `failed` with no
    verdict gave up: its group falls back at once (grading.waits.progress). `claimed_by`
    names the task grading it (grading.jobs.scheduling)."""

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
    started_at = models.DateTimeField(null=True, blank=True, db_index=True)  # the sweep asks for recent starts
    finished_at = models.DateTimeField(null=True, blank=True)
    retries = models.PositiveSmallIntegerField(default=0)
    resends = models.PositiveSmallIntegerField(default=0)
    due_at = models.DateTimeField(null=True, blank=True)
    # The id of the grading task that claimed it (grading.jobs.scheduling): a task grades
    # the best job its run still has queued, not the one its message names; "" while unclaimed.
    claimed_by = models.CharField(max_length=64, blank=True, default="", db_index=True)

    class Meta:
        ordering = ["group_id"]
        constraints = [models.UniqueConstraint(fields=["group", "grader"], name="one_grading_job_per_group_per_grader")]


class Jury(models.Model):
    """A project's jury: grader versions (names as Verdict.grader stores them) whose verdicts
    are combined by a rule (grading.grader.combine) into one, stored as the verdict of
    ``jury:<name>@<version>`` (grading.verdicts.deliberation). Editing a jury makes a new version."""

    class Rule(models.TextChoices):
        MAJORITY = "majority", "per-rollout majority tier (ties to the better median tier)"
        MEAN_RANK = "mean_rank", "majority tier, mean of ranks"
        AGREE_OR_ABSTAIN = "agree_or_abstain", "agree or abstain"

    class OnAbstain(models.TextChoices):
        FALLBACK = "fallback", "fall back at once"
        WAIT = "wait", "wait for a person until the step's deadline, then fall back"

    project = models.ForeignKey("grading.Project", on_delete=models.CASCADE, related_name="juries")
    name = models.CharField(max_length=60)
    version = models.PositiveIntegerField()
    members = models.JSONField(help_text="grader names, e.g. heuristic@1")
    rule = models.CharField(max_length=20, choices=Rule.choices)
    max_gap = models.PositiveIntegerField(default=1, help_text="agree or abstain: tiers further apart than this abstain")
    on_abstain = models.CharField(max_length=10, choices=OnAbstain.choices, default=OnAbstain.FALLBACK)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name", "-version"]
        constraints = [models.UniqueConstraint(fields=["project", "name", "version"], name="jury_version_unique_in_project")]

    def __str__(self) -> str:
        return self.grader

    @property
    def grader(self) -> str:
        """The name its verdicts are stored under."""
        return f"jury:{self.name}@{self.version}"
