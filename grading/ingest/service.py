"""Store `gagar-group/1` lines: the one ingest path behind the CLI, REST and importers.

Unit of storage is the line (one group): all of it lands or none of it. Lines are
validated in Python first, then written in batches — one transaction and a handful of
bulk statements per batch — because a step is tens of thousands of rollouts. If a batch
hits a uniqueness race with a concurrent writer, it is rolled back and replayed one
line per transaction, so the loser of the race sees the winner's rows and reports them
as unchanged (or as a conflict), never as a duplicate. A value the database itself
refuses (DataError: a value PostgreSQL cannot hold that validation did not foresee) is
handled the same way, so only its own line is refused and the stream goes on. A lost
connection (OperationalError) is not caught: the caller answers 503 and the sender
resends, which is safe because every line is idempotent.

What a committed batch queues after its commit (grading jobs, the search index, patch
highlights, recomputations: `on_commit(..., robust=True)`) cannot undo it: a hook that fails
(the broker gone, or with eager Celery the task's own database work) is logged and the
report still counts the batch, as it is stored. The sweeps and pages pick up what was not
sent: a queued job is re-sent, a stale step is computed when read, a patch is highlighted
when shown, a waiting rollout is indexed with the next post's task.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import DataError, IntegrityError, connection, transaction

from grading.formats.groupline import LineError, ParsedGroup, ParsedRollout, canonical_hash, parse_group_line
from grading.formats.linereader import OversizeLine
from grading.highlights.service import queue_highlights
from grading.ingest.cluster_storage import clusters_to_store, recluster
from grading.jobs.grade import queue_new_groups
from grading.jobs.scans import queue_scans
from grading.models import Group, Project, Rollout, RolloutContent, Run, Step, Task
from grading.models.bulk import copy_rows, jsonb
from grading.registry.backends import GraderUnavailable
from grading.registry.juries import member_backends
from grading.search.index import index_or_queue
from grading.selectors.lines import rollout_as_line

logger = logging.getLogger(__name__)

MAX_REPORTED_ERRORS = 1000
BATCH_LINES = 64
BATCH_BYTES = 24 * 1024 * 1024
_EMPTY: tuple[object, ...] = (None, "", [], {})
_TASK_FIELDS = ("repo", "base_commit", "problem_statement", "gold_patch", "test_patch", "fail_to_pass", "pass_to_pass", "extra")


@dataclass
class LineRefusal:
    line: int
    error: str
    uid: str | None = None

    def as_dict(self) -> dict:
        out = {"line": self.line, "error": self.error}
        if self.uid:
            out["uid"] = self.uid
        return out


@dataclass
class IngestReport:
    lines: int = 0
    bytes: int = 0
    groups_created: int = 0
    groups_extended: int = 0  # existing group, new rollout indexes added
    groups_unchanged: int = 0
    rollouts_created: int = 0
    rollouts_unchanged: int = 0
    refused: int = 0
    errors: list[LineRefusal] = field(default_factory=list)
    aborted: str | None = None  # set when the stream itself broke mid-way
    grading_queued: int = 0  # mixed groups sent to the run's auto-grader
    grading_refused: str | None = None  # why the auto-grader could not be asked (the groups fall back at the deadline)

    def refuse(self, line: int, error: str, uid: str | None = None) -> None:
        self.refused += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(LineRefusal(line, error, uid))

    @property
    def accepted(self) -> int:
        return self.groups_created + self.groups_extended + self.groups_unchanged

    def as_dict(self) -> dict:
        return {
            "lines": self.lines,
            "bytes": self.bytes,
            "groups": {"created": self.groups_created, "extended": self.groups_extended, "unchanged": self.groups_unchanged},
            "rollouts": {"created": self.rollouts_created, "unchanged": self.rollouts_unchanged},
            "refused": self.refused,
            "errors": [e.as_dict() for e in self.errors],
            "errors_truncated": self.refused > len(self.errors),
            "aborted": self.aborted,
            "grading": {"queued": self.grading_queued, "refused": self.grading_refused},
        }


@dataclass
class _Pending:
    line: int
    group: ParsedGroup


# What storing one line came to: (line, status, rollouts created, rollouts unchanged, error).
_Outcome = tuple[_Pending, str, int, int, str | None]


class _Conflict(Exception):
    pass


def ingest_group_lines(
    *,
    project: Project,
    lines: Iterable[tuple[int, bytes | OversizeLine]],
    on_line: Callable[[int, int], None] | None = None,
    report: IngestReport | None = None,
    allow_unknown_reward: bool = False,
    check: Callable[[ParsedGroup], str | None] | None = None,
) -> IngestReport:
    """Validate and store every line; refusals are collected per line, never raised.

    `lines` yields (line number, raw bytes) — see grading.formats.linereader.iter_lines.
    `on_line(line_number, byte_count)` is called after each line is read (progress bars).
    `allow_unknown_reward` accepts `"reward": null` (importers of runs that carry no verdict).
    `check(parsed)` may refuse a valid line by returning why (an upload into one run refuses
    lines that name another).
    """
    report = report or IngestReport()
    writer = _BatchWriter(project, report)
    batch: list[_Pending] = []
    batch_bytes = 0
    batch_keys: set[tuple[str, str]] = set()
    for line_no, raw in lines:
        report.lines += 1
        size = raw.size if isinstance(raw, OversizeLine) else len(raw)
        report.bytes += size
        if isinstance(raw, OversizeLine):
            report.refuse(line_no, str(raw))
        else:
            try:
                parsed = parse_group_line(raw, allow_unknown_reward=allow_unknown_reward)
            except LineError as exc:
                report.refuse(line_no, str(exc))
            else:
                problem = check(parsed) if check else None
                if problem:
                    report.refuse(line_no, problem, parsed.uid)
                else:
                    key = (parsed.run, parsed.uid)
                    if key in batch_keys:  # a later line must see the earlier one stored
                        writer.write(batch)
                        batch, batch_bytes, batch_keys = [], 0, set()
                    batch.append(_Pending(line_no, parsed))
                    batch_keys.add(key)
                    batch_bytes += size
                    if len(batch) >= BATCH_LINES or batch_bytes >= BATCH_BYTES:
                        writer.write(batch)
                        batch, batch_bytes, batch_keys = [], 0, set()
        if on_line:
            on_line(line_no, size)
    if batch:
        writer.write(batch)
    return report


class _BatchWriter:
    def __init__(self, project: Project, report: IngestReport):
        self.project = project
        self.report = report
        self._runs: dict[str, Run] = {}
        self._steps: dict[tuple[int, int], Step] = {}

    # -- lookups cached for the whole ingest (runs and steps are few) --------------
    def _run(self, name: str) -> Run:
        run = self._runs.get(name)
        if run is None:
            run, _ = Run.objects.get_or_create(project=self.project, name=name)
            self._runs[name] = run
        return run

    def _step(self, run: Run, number: int) -> Step:
        key = (run.pk, number)
        step = self._steps.get(key)
        if step is None:
            step, _ = Step.objects.get_or_create(run=run, number=number)
            self._steps[key] = step
        return step

    def write(self, batch: list[_Pending]) -> None:
        try:
            with transaction.atomic():
                outcome = self._store(batch)
        except (IntegrityError, DataError, OverflowError) as exc:
            # IntegrityError: a concurrent writer stored some of these identities first;
            # replayed line by line, each now sees the other writer's rows. DataError /
            # OverflowError: one line holds a value the database refuses; replayed singly,
            # only that line is refused.
            logger.info("ingest batch of %d lines replayed singly after %s", len(batch), exc.__class__.__name__)
            self._forget_cache()
            for pending in batch:
                self._write_single(pending)
            return
        self._apply(outcome)

    def _write_single(self, pending: _Pending, attempts: int = 3) -> None:
        for attempt in range(attempts):
            try:
                with transaction.atomic():
                    outcome = self._store([pending])
            except (DataError, OverflowError) as exc:
                self._forget_cache()
                reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else exc.__class__.__name__
                self.report.refuse(
                    pending.line, f"could not be stored: the database refused a value ({reason})", pending.group.uid
                )
                return
            except IntegrityError:
                self._forget_cache()
                if attempt == attempts - 1:
                    self.report.refuse(
                        pending.line, "could not be stored: concurrent writers kept colliding; resend it", pending.group.uid
                    )
                continue
            self._apply(outcome)
            return

    def _forget_cache(self) -> None:
        # Cached rows may belong to a rolled-back transaction.
        self._runs.clear()
        self._steps.clear()

    def _apply(self, outcome: list[_Outcome]) -> None:
        for pending, status, created, unchanged, error in outcome:
            if error:
                self.report.refuse(pending.line, error, pending.group.uid)
                continue
            self.report.rollouts_created += created
            self.report.rollouts_unchanged += unchanged
            if status == "created":
                self.report.groups_created += 1
            elif status == "extended":
                self.report.groups_extended += 1
            else:
                self.report.groups_unchanged += 1

    def _store(self, batch: list[_Pending]) -> list[_Outcome]:
        """Write the batch inside the caller's transaction; returns per-line outcomes."""
        by_run: dict[str, list[_Pending]] = {}
        for pending in batch:
            by_run.setdefault(pending.group.run, []).append(pending)
        outcome = []
        for run_name, items in by_run.items():
            outcome.extend(self._store_run(self._run(run_name), items))
        return outcome

    def _store_run(self, run: Run, items: list[_Pending]) -> list[_Outcome]:
        uids = [p.group.uid for p in items]
        existing_groups = {
            g.uid: g
            for g in Group.objects.filter(run=run, uid__in=uids).select_related("step", "task").select_for_update(of=("self",))
        }
        existing_rollouts: dict[int, dict[int, tuple[str, bool | None]]] = {}
        if existing_groups:
            for group_id, index, digest, passed in Rollout.objects.filter(group__in=existing_groups.values()).values_list(
                "group_id", "index", "content_hash", "passed"
            ):
                existing_rollouts.setdefault(group_id, {})[index] = (digest, passed)

        tasks, task_conflicts = self._tasks(run, items)
        outcome: list[_Outcome] = []
        new_groups: list[tuple[_Pending, Group]] = []
        extended: list[tuple[_Pending, Group, list]] = []
        for pending in items:
            parsed = pending.group
            if pending.line in task_conflicts:
                outcome.append((pending, "", 0, 0, task_conflicts[pending.line]))
                continue
            task = tasks[parsed.task.instance_id]
            group = existing_groups.get(parsed.uid)
            if group is None:
                group = Group(run=run, step=self._step(run, parsed.step), step_number=parsed.step, task=task, uid=parsed.uid)
                new_groups.append((pending, group))
                continue
            try:
                new_rollouts, unchanged = self._diff_existing(group, parsed, existing_rollouts.get(group.pk, {}))
            except _Conflict as exc:
                outcome.append((pending, "", 0, 0, str(exc)))
                continue
            if new_rollouts:
                extended.append((pending, group, new_rollouts))
                outcome.append((pending, "extended", len(new_rollouts), unchanged, None))
            else:
                outcome.append((pending, "unchanged", 0, unchanged, None))

        if new_groups:
            clusters = {}
            for pending, group in new_groups:
                _set_counts(group, [(r.passed) for r in pending.group.rollouts])
                clusters[id(group)], group.distinct_solutions = clusters_to_store(
                    group.task, [(r.index, r.changes, r.passed) for r in pending.group.rollouts]
                )
            Group.objects.bulk_create([g for _, g in new_groups])
            self._insert_rollouts([(g, p.group.rollouts) for p, g in new_groups], clusters)
            outcome.extend((p, "created", len(p.group.rollouts), 0, None) for p, _ in new_groups)
        if extended:
            self._insert_rollouts([(g, rollouts) for _, g, rollouts in extended], {})
            for _, group, rollouts in extended:
                known = [passed for _, passed in existing_rollouts.get(group.pk, {}).values()]
                _set_counts(group, known + [r.passed for r in rollouts])
            Group.objects.bulk_update(
                [g for _, g, _ in extended], ["n_rollouts", "n_passed", "n_unknown", "is_mixed", "updated_at"]
            )
            recluster([g for _, g, _ in extended])  # a new rollout can change the others' clusters
        self._auto_grade(run, [g.pk for _, g in new_groups if g.is_mixed] + [g.pk for _, g, _ in extended if g.is_mixed])
        queue_scans(group_ids=[g.pk for _, g in new_groups if g.n_passed] + [g.pk for _, g, _ in extended if g.n_passed])
        return outcome

    def _auto_grade(self, run: Run, group_ids: list[int]) -> None:
        """The run's grading policy: its grader is asked to tier every mixed group once,
        in the transaction that stores the group (the tasks are sent after the commit)."""
        if run.jury is not None and group_ids:  # a jury: every member this desk runs grades them
            for backend in member_backends(run.jury):
                self.report.grading_queued += len(queue_new_groups(group_ids=group_ids, backend=backend))
            return
        if run.auto_grade == Run.AutoGrade.NONE or not group_ids:
            return
        try:
            jobs = queue_new_groups(group_ids=group_ids, backend=run.auto_grade)
        except GraderUnavailable as exc:  # configuration changed since the policy was set
            logger.warning("run %s: auto-grading with %s refused: %s", run, run.auto_grade, exc)
            self.report.grading_refused = str(exc)
            return
        self.report.grading_queued += len(jobs)

    def _diff_existing(self, group: Group, parsed: ParsedGroup, stored: dict[int, tuple[str, bool | None]]):
        if group.step.number != parsed.step:
            raise _Conflict(f"conflict: group {parsed.uid!r} is already stored at step {group.step.number}, not {parsed.step}")
        if group.task.instance_id != parsed.task.instance_id:
            raise _Conflict(
                f"conflict: group {parsed.uid!r} is already stored for task {group.task.instance_id!r}, not "
                f"{parsed.task.instance_id!r}"
            )
        new, unchanged = [], 0
        for rollout in parsed.rollouts:
            known = stored.get(rollout.index)
            if known is None:
                new.append(rollout)
            elif known[0] == rollout.content_hash or _same_as_stored(group, rollout):
                unchanged += 1
            else:
                raise _Conflict(
                    f"conflict: rollout {rollout.index} of group {parsed.uid!r} is already stored with different content; "
                    "identities are immutable (send it under a new uid or index)"
                )
        return new, unchanged

    def _tasks(self, run: Run, items: list[_Pending]) -> tuple[dict[str, Task], dict[int, str]]:
        """Task rows for the batch, created or filled in, and a conflict message per refused line.

        A field present on both sides must agree; a field one side lacks is filled in.
        Lines are checked in order, so two lines of one batch are held to each other too.
        """
        stored = {
            t.instance_id: t for t in Task.objects.filter(run=run, instance_id__in={p.group.task.instance_id for p in items})
        }
        known: dict[str, dict] = {
            instance_id: {name: value for name in _TASK_FIELDS if (value := getattr(row, name)) not in _EMPTY}
            for instance_id, row in stored.items()
        }
        conflicts: dict[int, str] = {}
        for pending in items:
            task = pending.group.task
            current = known.setdefault(task.instance_id, {})
            clashes = task.conflicts_with(current)
            if clashes:
                conflicts[pending.line] = (
                    f"conflict: task {task.instance_id!r} is already stored with a different {', '.join(clashes)}"
                )
                continue
            for name, value in task.fields.items():
                if value not in _EMPTY:
                    current.setdefault(name, value)
        tasks: dict[str, Task] = {}
        to_create = []
        for instance_id, fields in known.items():
            row = stored.get(instance_id)
            if row is None:
                if all(conflicts.get(p.line) for p in items if p.group.task.instance_id == instance_id):
                    continue
                row = Task(run=run, instance_id=instance_id, **fields)
                to_create.append(row)
            else:
                missing = [name for name, value in fields.items() if getattr(row, name) in _EMPTY]
                for name in missing:
                    setattr(row, name, fields[name])
                if missing:
                    row.save(update_fields=missing)
            tasks[instance_id] = row
        if to_create:
            Task.objects.bulk_create(to_create)
        return tasks, conflicts

    def _insert_rollouts(self, pairs: list[tuple[Group, list]], clusters: dict) -> None:
        """`clusters`: id(group) -> index -> StoredCluster for groups clustered before insert."""
        rows = []
        for group, rollouts in pairs:
            stored = clusters.get(id(group), {})
            for r in rollouts:
                c = stored.get(r.index)
                rows.append(
                    Rollout(
                        group=group,
                        index=r.index,
                        reward=r.reward,
                        passed=r.passed,
                        exit_status=r.exit_status,
                        dropped=r.dropped,
                        n_messages=r.n_messages,
                        tokens=r.tokens,
                        cost_usd=r.cost_usd,
                        stats=r.stats,
                        patch_files=r.patch_files,
                        patch_added=r.patch_added,
                        patch_removed=r.patch_removed,
                        patch_parses=r.patch_parses,
                        tests_passed=r.tests_passed,
                        tests_failed=r.tests_failed,
                        cluster=c.cluster if c else None,
                        extra_files=c.extra_files if c else [],
                        cluster_label=c.label if c else "",
                        source_format=r.source_format,
                        source_ref=r.source_ref,
                        content_hash=r.content_hash,
                    )
                )
        Rollout.objects.bulk_create(rows, batch_size=500)
        parsed = [r for _, rollouts in pairs for r in rollouts]
        _insert_contents(rows, parsed)
        # Indexed in this transaction, or queued for a worker right after it (grading.search.index).
        index_or_queue(list(zip(rows, (g for g, rollouts in pairs for _ in rollouts), parsed)))
        queue_highlights([row.pk for row in rows])  # patches highlighted after the commit (grading.highlights)


_CONTENT_COLUMNS = ("rollout_id", "messages", "patch", "tests", "test_log", "metadata")


def _insert_contents(rows: list[Rollout], parsed: list[ParsedRollout]) -> None:
    """The rollouts' bodies: COPY on PostgreSQL (grading.models.bulk), bulk_create elsewhere."""
    if connection.vendor == "postgresql":
        copy_rows(
            connection,
            RolloutContent._meta.db_table,
            _CONTENT_COLUMNS,
            ((row.pk, jsonb(r.messages), r.patch, jsonb(r.tests), r.test_log, jsonb(r.metadata)) for row, r in zip(rows, parsed)),
        )
        return
    RolloutContent.objects.bulk_create(
        [
            RolloutContent(
                rollout=row, messages=r.messages, patch=r.patch, tests=r.tests, test_log=r.test_log, metadata=r.metadata
            )
            for row, r in zip(rows, parsed)
        ],
        batch_size=100,
    )


def _same_as_stored(group: Group, rollout: ParsedRollout) -> bool:
    """Whether a rollout whose hash differs from the stored one is the stored content after
    all. Rows stored before the hash covered exactly the stored fields (formats.groupline.
    stored_rollout) carry a hash of the line as sent; such a row is compared field by field
    and, if it is the same, its hash is brought up to date."""
    row = Rollout.objects.select_related("content").filter(group=group, index=rollout.index).first()
    if row is None or canonical_hash(rollout_as_line(row)) != rollout.content_hash:
        return False
    Rollout.objects.filter(pk=row.pk).update(content_hash=rollout.content_hash)
    return True


def _set_counts(group: Group, passed: list[bool | None]) -> None:
    group.n_rollouts = len(passed)
    group.n_passed = sum(1 for p in passed if p is True)
    group.n_unknown = sum(1 for p in passed if p is None)
    n_failed = group.n_rollouts - group.n_passed - group.n_unknown
    group.is_mixed = group.n_passed > 0 and n_failed > 0
