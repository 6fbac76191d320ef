"""What the product stores of a run: runs, steps, tasks, groups, rollouts, import jobs.

Scale (docs/method.md): a step holds up to 1568 groups x 16 rollouts and one rollout can carry
100k+ tokens of messages. So every large body (messages, patch, test log) lives in
`RolloutContent`, one row per rollout joined only when a page or export needs it; list
queries touch `Group` and `Rollout`, which hold identities, counts and small stats.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import ExpressionWrapper, Q

from grading.models.bulk import jsonb
from grading.models.projects import Project


class BulkJSONField(models.JSONField):
    """A JSONField for megabyte bodies: orjson-encoded, one bind parameter per value on PostgreSQL.

    Django's JSONField encodes with the stdlib json module, and bulk_create on PostgreSQL
    packs each column into one array literal (INSERT ... SELECT * FROM UNNEST(...)) that
    psycopg escapes quote by quote in Python; for rollout bodies that was most of the
    ingest time (benchmarks/ingest.py). Having get_placeholder turns UNNEST off for the
    model's inserts, so every value is escaped by libpq in C. The column is the same jsonb
    and it deconstructs as a plain JSONField, so it needs no migration. SQLite is unchanged.
    Ingest writes new bodies by COPY instead (grading.models.bulk), with the same encoding.
    """

    def get_placeholder(self, value, compiler, connection) -> str:
        return "%s"

    def get_db_prep_value(self, value, connection, prepared=False):
        if connection.vendor != "postgresql" or self.encoder is not None:
            return super().get_db_prep_value(value, connection, prepared)
        if not prepared:
            value = self.get_prep_value(value)
        return jsonb(value)

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


class Run(models.Model):
    """One RL training run; its steps hold the groups. The baseline is chosen per run (docs/method.md §1)."""

    class Baseline(models.TextChoices):
        MEAN = "mean", "mean (Dr. GRPO)"
        LOO = "loo", "leave-one-out (RLOO)"
        GRPO = "grpo", "GRPO (std-normalised)"

    class AutoGrade(models.TextChoices):
        NONE = "none", "none (grade by hand from the step page)"
        HEURISTIC = "heuristic", "heuristic grader"
        LLM = "llm", "LLM grader"

    DEFAULT_DEADLINE_SECONDS = 600
    MAX_DEADLINE_SECONDS = 7 * 24 * 3600

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="runs")
    name = models.CharField(max_length=200)
    baseline = models.CharField(max_length=8, choices=Baseline.choices, default=Baseline.MEAN)
    description = models.TextField(blank=True)
    # The grading policy a trainer relies on: which grader tiers every mixed group as it is
    # stored, and how long a step waits for it before its ungraded groups fall back.
    # A built-in (AutoGrade) or a version of one of the project's defined LLM graders
    # (grading.registry.defined, "<name>@<n>": pinned, so defining it again changes no run).
    auto_grade = models.CharField(
        max_length=100,
        default=AutoGrade.NONE,
        help_text="none, heuristic, llm, or one of the project's defined graders as <name>@<version>",
    )
    # Or a jury (grading.verdicts.deliberation): its members grade every mixed group and its combined
    # verdict is the one the method uses. Set, it takes the place of auto_grade's grader.
    jury = models.ForeignKey("grading.Jury", null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    grading_deadline_seconds = models.PositiveIntegerField(
        default=DEFAULT_DEADLINE_SECONDS,
        help_text="a mixed group still without a verdict this long after it was stored (or queued again) falls back",
    )
    # Partial groups (grading.method.partial): drop reason -> "mask" or "recompute"; a reason
    # not named masks. Part of every step's inputs: a change recomputes the run's steps.
    drop_policy = models.JSONField(default=dict, blank=True)
    # Per-token advantages (grading.method.turn_weights, docs/method.md §9): each step's rows
    # also store the passing rollouts' turn weights from the grader's turn citations, the
    # export gives them with ?turn_weights=1 and the group page shows them. Off by default.
    turn_weights = models.BooleanField(default=False)
    # Identical-patch settling (grading.verdicts.identical): a mixed group whose passing rollouts'
    # patches are byte-identical is settled without a model call, as a fallback. Off by default.
    settle_identical = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="run_name_unique_in_project")]

    def __str__(self) -> str:
        return f"{self.project}/{self.name}"

    def falls_back_at(self, *, stored_at: datetime, queued_at: datetime | None) -> datetime:
        """When a mixed group of this run without a verdict falls back: the grading deadline after
        it was stored, or after it was last queued for grading again."""
        return max(stored_at, queued_at or stored_at) + timedelta(seconds=self.grading_deadline_seconds)

    @property
    def auto_grade_label(self) -> str:
        """How pages name the auto-grader: a built-in's label, else the defined grader's version."""
        try:
            return str(self.AutoGrade(self.auto_grade).label)
        except ValueError:
            return self.auto_grade


class Step(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    number = models.PositiveIntegerField()
    # Bumped whenever the method's inputs of this step change (a verdict, a cheat decision,
    # the active mapping); stored advantages computed from an older version are stale.
    inputs_version = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [models.UniqueConstraint(fields=["run", "number"], name="step_number_unique_in_run")]

    def __str__(self) -> str:
        return f"{self.run} step {self.number}"


class StepMetric(models.Model):
    """A scalar the trainer logged for a step of a run (entropy, response length, clip ratio, an
    eval pass rate…), by name: one value per (run, step, name), a later post of the same name
    replacing it (grading.health.services). Keyed by the step's number, not the Step: a trainer
    logs its metrics whether or not the desk holds the step's groups."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metrics")
    step_number = models.PositiveIntegerField()
    name = models.CharField(max_length=100)
    value = models.FloatField()
    logged_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["run", "name", "step_number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step_number", "name"], name="one_metric_per_name_per_step"),
        ]

    def __str__(self) -> str:
        return f"{self.run} step {self.step_number} {self.name}={self.value}"


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
    # A cross-run group of a blind comparison (grading.comparisons): every rollout passed, and
    # its candidates are judged all the same. Set only by the comparison that built it.
    in_comparison = models.BooleanField(default=False, db_default=False)
    # Whether its passing rollouts are graded and judged: a mixed group, or a comparison's.
    # The queue, the judge's form and the grading jobs ask this, never is_mixed, so a group
    # is judged for what it is, not by pretending it mixes passes and failures. Kept by the
    # database from the two flags it is made of.
    to_judge = models.GeneratedField(
        expression=ExpressionWrapper(Q(is_mixed=True) | Q(in_comparison=True), output_field=models.BooleanField()),
        output_field=models.BooleanField(),
        db_persist=True,
    )
    # The review queue's order, stored so "next group" is one index scan whatever the number
    # of graded groups (reviews.selectors.queue): the step's number (a group never changes
    # step), whether a grader gave a valid verdict (grading.verdicts.store.record_verdict),
    # the credit a verdict moves, Σ|A* − A| under the run's active mapping
    # (grading.method.services.computation.compute_step and activate_mapping), and whether the project's
    # review policy still wants submitted reviews of it (kept by reviews.services.queue).
    step_number = models.PositiveIntegerField(default=0)
    has_valid_verdict = models.BooleanField(default=False)
    credit_moved = models.FloatField(default=0.0)
    awaits_review = models.BooleanField(default=True)
    # How far its graders disagree, for the queue's "disagreements first" order (kept by
    # grading.verdicts.disagreements when a verdict lands): the widest tier gap in levels
    # between two graders' valid verdicts on one rollout (juries left out: they are made of
    # their members), and on how many rollouts; and whether the run's jury abstained and
    # waits for a person, until when (the step's grading deadline; cleared when the jury's
    # verdict lands or the deadline passes).
    # The database holds their defaults too (db_default), so rows written by COPY, which names
    # only the columns it fills (benchmarks/export.py, benchmarks/search.py), stay valid.
    grader_gap = models.PositiveSmallIntegerField(default=0, db_default=0)
    grader_gap_rollouts = models.PositiveSmallIntegerField(default=0, db_default=0)
    awaits_person = models.BooleanField(default=False, db_default=False)
    awaits_person_until = models.DateTimeField(null=True, blank=True)
    # Distinct solutions among the passing rollouts: how many patch clusters they fall in
    # (grading.rollouts.clusters, stored by grading.ingest.cluster_storage); null until clustered.
    distinct_solutions = models.PositiveIntegerField(null=True, blank=True)
    # When the scanners were asked to read the group's passing rollouts and have not yet
    # (grading.jobs.scans.queue_scans / scan_groups): the step is not final meanwhile, until the
    # run's grading deadline after this moment (grading.waits.progress).
    scan_due_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["step__number", "uid"]
        constraints = [models.UniqueConstraint(fields=["run", "uid"], name="group_uid_unique_in_run")]
        indexes = [
            models.Index(fields=["step", "uid"], name="group_step_uid"),
            models.Index(
                fields=["run", "-has_valid_verdict", "-credit_moved", "step_number", "uid"],
                condition=Q(to_judge=True, awaits_review=True),
                name="group_review_queue",
            ),
            models.Index(  # the same queue with the review policy's disagreements first
                fields=["run", "-awaits_person", "-grader_gap", "-has_valid_verdict", "-credit_moved", "step_number", "uid"],
                condition=Q(to_judge=True, awaits_review=True),
                name="group_review_queue_split",
            ),
            models.Index(fields=["awaits_person_until"], condition=Q(awaits_person=True), name="group_awaits_person"),
        ]

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
    # The rollout's patch cluster within its group (grading.rollouts.clusters): the index of
    # the cluster's first member, the files counted apart as extra, and the label the group
    # page shows ("same change as #3, +2 extra files"). Null until clustered; recomputed for
    # the whole group when rollouts are added to it (grading.ingest.cluster_storage).
    cluster = models.PositiveIntegerField(null=True, blank=True)
    extra_files = models.JSONField(default=list, blank=True)
    cluster_label = models.CharField(max_length=200, blank=True)
    # Two graders' valid verdicts differ on its cheat call (grading.verdicts.disagreements):
    # the cheat audit can put such signals first.
    cheat_split = models.BooleanField(default=False, db_default=False)
    source_format = models.CharField(max_length=64, blank=True)
    source_ref = models.CharField(max_length=1000, blank=True)
    # Why the trainer dropped this rollout from its batch ("timeout", "error", ...); "" = kept.
    # The run's drop_policy says what that does to the group's numbers (grading.method.partial).
    dropped = models.CharField(max_length=40, blank=True, default="")
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
    messages = BulkJSONField(default=list, blank=True)
    patch = models.TextField(blank=True)
    tests = BulkJSONField(default=dict, blank=True)
    test_log = models.TextField(blank=True)
    metadata = BulkJSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"content of rollout {self.rollout_id}"


class PatchHighlight(models.Model):
    """A rollout's patch highlighted ahead of the reviewer (grading.highlights, after ingest):
    every hunk as grading.rollouts.diffs.highlight_patch made it, our highlighter's escaped
    HTML, which the group page reads instead of lexing. `digest` is the sha256 of the patch
    text it was made from: a row that does not match the rollout's patch is not used."""

    rollout = models.OneToOneField(Rollout, on_delete=models.CASCADE, primary_key=True, related_name="patch_highlight")
    digest = models.CharField(max_length=64)
    hunks = BulkJSONField(default=list, blank=True)  # [old side's HTML lines, note, new side's HTML lines, note] per hunk
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"highlighted patch of rollout {self.rollout_id}"


class ImportJob(models.Model):
    """One upload of agent runs (mini-swe-agent, SWE-agent, SWE-bench, OpenHands, verl dumps) imported by a Celery task.

    Progress is written with `update_fields` by the task only; the run page polls it.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="import_jobs")
    step = models.PositiveIntegerField()
    format = models.CharField(max_length=20, default="auto")
    # verl dumps: a score >= this passes; None: scores must be 0 or 1 (grading.ingest.importers.verl)
    reward_threshold = models.FloatField(null=True, blank=True)
    # [{"path": folder relative to MEDIA_ROOT, "label": prefix of the rollouts' source refs}]
    sources = models.JSONField(default=list, blank=True)
    uploaded_files = models.JSONField(default=list, blank=True)  # [{"name", "size"}]
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    progress_done = models.PositiveIntegerField(default=0)  # instances read so far
    progress_total = models.PositiveIntegerField(default=0)
    # Deliveries of the task that started this job; past MAX_ATTEMPTS (a worker killed each time,
    # e.g. out of memory) the job is failed instead of run again (grading.ingest.imports.jobs).
    attempts = models.PositiveSmallIntegerField(default=0)
    # Bytes of its files on disk: the upload, then what it unpacked; 0 once the job ended (its
    # files are removed). A project's sum is held to GAGAR_IMPORT_QUOTA_BYTES (grading.ingest.imports.uploads).
    disk_bytes = models.PositiveBigIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["run", "-created_at"], name="importjob_run_recent")]

    def __str__(self) -> str:
        return f"import {self.pk} into {self.run} step {self.step} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def warnings(self) -> list[dict]:
        """Files, attempts and groups this job was given and did not import, each with why (grading.ingest.imports.runs)."""
        warnings = self.summary.get("warnings") if isinstance(self.summary, dict) else None
        return warnings if isinstance(warnings, list) else []

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0


class StepWaiter(models.Model):
    """A trainer's request waiting for a step (`GET /api/v1/advantages/?wait=`), while it waits.

    Counted per holder (`token:<id>`, or `user:<id>` for a session) and per project to cap
    waiters across every web process (grading.waits.waiters); a row outlives a killed
    process only until `expires_at`, so a crash cannot keep a slot forever.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    holder = models.CharField(max_length=40)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [models.Index(fields=["project", "holder"], name="stepwaiter_holder")]
