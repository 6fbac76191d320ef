"""Import agent runs (mini-swe-agent, SWE-agent, SWE-bench predictions) and group lines through the one ingest path.

`import_runs` finds the attempts in a set of PATHs (grading.ingest.importers.scan), builds one
`gagar-group/1` line per instance — uid `<instance_id>@<step>`, one rollout per attempt —
and streams the lines into `ingest_group_lines`, which stores them idempotently.
`gagar-group/1` files among the PATHs are streamed into it as they are: each line keeps its
step, and a line naming another run than the import's is refused.

**Nothing stored is not done.** An import that accepted no group (every file refused or not
read, every group refused) fails, saying why (`ImportSummary.nothing_imported`); one that
stored some but refused files or groups lists each in `warnings`.

**Indexes are stable.** A rollout is known by its source ref (`<PATH name>/<path inside>`,
plus `#attempt-n` or `#<instance>` where one file holds several). An attempt whose ref is
already stored in the group keeps that index; new attempts take the next free indexes in
the order of the PATHs, then of the paths inside each PATH, then of the attempts. So
importing the same files again (in any order) changes nothing, and importing a fourth
run later extends each group with index 3.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from math import isfinite

import orjson
from django.conf import settings
from django.db.models.functions import Length

from grading.formats.groupline import FORMAT, MAX_INT, MAX_NAME, LineError, ParsedGroup, check_name, find_nul
from grading.formats.linereader import BodyError, iter_lines, open_body
from grading.ingest.importers.scan import FORMATS, IGNORED, NOTICE, SKIPPED, UNKNOWN, Finding, GroupFile, RunFinder, Source
from grading.ingest.service import IngestReport, ingest_group_lines
from grading.models import Group, Project, Rollout, Task

MAX_LISTED = 1000  # findings kept per kind in a summary


_NAMED = 5  # refusals named in a failed import's one-line error (all of them are in its summary)


_LOOKUP_CHUNK = 400


@dataclass
class ImportSummary:
    files: int = 0
    bytes: int = 0
    instances: int = 0
    groups_created: int = 0
    groups_extended: int = 0
    groups_unchanged: int = 0
    groups_mixed: int = 0
    rollouts_created: int = 0
    rollouts_unchanged: int = 0
    rollouts_passed: int = 0
    rollouts_failed: int = 0
    rollouts_unknown: int = 0
    findings: list[Finding] = field(default_factory=list)
    refused: list[dict] = field(default_factory=list)
    aborted: str | None = None

    @property
    def groups(self) -> int:
        return self.groups_created + self.groups_extended + self.groups_unchanged

    @property
    def rollouts(self) -> int:
        return self.rollouts_passed + self.rollouts_failed + self.rollouts_unknown

    def of_kind(self, kind: str) -> list[Finding]:
        return [f for f in self.findings if f.kind == kind]

    def warnings(self) -> list[dict]:
        """What was meant to be imported and was not: each refused file or attempt and each refused group, with why."""
        out = [{"ref": f.ref, "reason": f.reason} for f in self.of_kind(SKIPPED)]
        out += [{"ref": r["uid"], "reason": r["error"]} for r in self.refused]
        if self.aborted:
            out.append({"ref": "", "reason": f"aborted: {self.aborted}"})
        return out

    def nothing_imported(self) -> str | None:
        """Why no group was stored (not even one unchanged), or None when some were."""
        if self.groups:
            return None
        parts = []
        for items, what in ((self.of_kind(SKIPPED), "refused"), (self.of_kind(IGNORED), "not read")):
            if items:
                named = "; ".join(f"{f.ref}: {f.reason}" for f in items[:_NAMED])
                parts.append(f"{len(items)} file(s) {what} ({named}{' …' if len(items) > _NAMED else ''})")
        if self.refused:
            named = "; ".join(f"{r['uid']}: {r['error']}" for r in self.refused[:_NAMED])
            parts.append(f"{len(self.refused)} group(s) refused ({named}{' …' if len(self.refused) > _NAMED else ''})")
        if not parts:
            parts.append("no group lines, trajectories or predictions found" if self.files else "no files")
        return "nothing imported: " + "; ".join(parts)

    def as_dict(self) -> dict:
        out = {
            "files": self.files,
            "bytes": self.bytes,
            "groups": {
                "total": self.groups,
                "created": self.groups_created,
                "extended": self.groups_extended,
                "unchanged": self.groups_unchanged,
                "mixed": self.groups_mixed,
            },
            "rollouts": {
                "total": self.rollouts,
                "created": self.rollouts_created,
                "unchanged": self.rollouts_unchanged,
                "passed": self.rollouts_passed,
                "failed": self.rollouts_failed,
                "unknown": self.rollouts_unknown,
            },
            "refused": self.refused[:MAX_LISTED],
            "aborted": self.aborted,
        }
        warnings = self.warnings()
        out["warnings"], out["warnings_count"] = warnings[:MAX_LISTED], len(warnings)
        for kind in (SKIPPED, IGNORED, UNKNOWN, NOTICE):
            items = self.of_kind(kind)
            out[kind] = [f.as_dict() for f in items[:MAX_LISTED]]
            out[f"{kind}_count"] = len(items)
        return out


def _sanitize(value):
    """U+0000 cannot be stored (PostgreSQL); in imported text it becomes U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_sanitize(v) for v in value]
    if isinstance(value, dict):
        return {_sanitize(k): _sanitize(v) for k, v in value.items()}
    return value


_TASK_KEYS = ("repo", "base_commit", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS")


class _Stored:
    """What the database already holds for the groups of this import, fetched a chunk at a time."""

    def __init__(self, project: Project, run: str):
        self.project, self.run = project, run
        self.refs: dict[str, dict[str, int]] = {}
        self.max_index: dict[str, int] = {}
        self.task_has: dict[str, set[str]] = {}

    def load(self, uids: list[str], instance_ids: list[str]) -> None:
        rows = Rollout.objects.filter(
            group__run__project=self.project, group__run__name=self.run, group__uid__in=uids
        ).values_list("group__uid", "source_ref", "index")
        for uid, ref, index in rows:
            self.refs.setdefault(uid, {})[ref] = index
            self.max_index[uid] = max(index, self.max_index.get(uid, -1))
        tasks = Task.objects.filter(run__project=self.project, run__name=self.run, instance_id__in=instance_ids).values_list(
            "instance_id", "repo", "base_commit", Length("problem_statement"), "fail_to_pass", "pass_to_pass"
        )
        for instance_id, repo, base_commit, statement_length, f2p, p2p in tasks:
            present = {
                "repo": repo,
                "base_commit": base_commit,
                "problem_statement": statement_length,
                "FAIL_TO_PASS": f2p,
                "PASS_TO_PASS": p2p,
            }
            self.task_has[instance_id] = {key for key, value in present.items() if value}


def _task(instance_id: str, found: list, has: set[str]) -> dict:
    """The group line's task: what the files state, less the fields the stored task already has
    (a missing field is never a conflict)."""
    task: dict = {"instance_id": instance_id}
    stated = RunFinder.task_fields(instance_id, found)
    statement = RunFinder.problem_statement(found)
    if statement:
        stated.setdefault("problem_statement", statement)
    task.update({key: value for key, value in stated.items() if key in _TASK_KEYS and key not in has})
    return task


def import_runs(
    *,
    project: Project,
    run: str,
    step: int,
    sources: list[Source],
    fmt: str = "auto",
    reward_threshold: float | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ImportSummary:
    """Import every attempt found in `sources` into (run, step); refusals and skips are reported, never raised.

    verl dumps name their own steps (grading.ingest.importers.verl): their groups go to those
    steps, everything else to `step`. `reward_threshold` turns verl scores into rewards.
    """
    if not run or len(run) > MAX_NAME:
        raise ValueError(f"run name must be 1..{MAX_NAME} characters")
    try:
        check_name(run, "run", kind="run")
    except LineError as exc:
        raise ValueError(str(exc)) from None
    if not 0 <= step <= MAX_INT:
        raise ValueError(f"step must be between 0 and {MAX_INT:,}")
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    if reward_threshold is not None and not (isfinite(reward_threshold)):
        raise ValueError("reward threshold must be a finite number")
    summary = ImportSummary()
    finder = RunFinder(sources, fmt=fmt, reward_threshold=reward_threshold, step=step).scan()
    keys = finder.instance_ids
    total = len(keys) + sum(f.lines for f in finder.group_files)
    summary.files, summary.bytes, summary.instances = finder.files_seen, finder.bytes_seen, total
    stored = _Stored(project, run)
    uids_by_line: dict[int, str] = {}
    unencodable: list[dict] = []

    def uid_of(key: str) -> tuple[str, int, str]:
        instance_id, group_step, stem = finder.group_of(key)
        group_step = step if group_step is None else group_step
        return instance_id, group_step, f"{stem}@{group_step}"

    def lines() -> Iterator[tuple[int, bytes]]:
        for position, key in enumerate(keys):
            if position % _LOOKUP_CHUNK == 0:
                chunk = [uid_of(k) for k in keys[position : position + _LOOKUP_CHUNK]]
                stored.load([uid for _, _, uid in chunk], sorted({instance_id for instance_id, _, _ in chunk}))
            found = finder.attempts(key)
            if on_progress:
                on_progress(position + 1, total)
            if not found:
                continue
            instance_id, group_step, uid = uid_of(key)
            known = stored.refs.get(uid, {})
            next_index = stored.max_index.get(uid, -1) + 1
            rollouts = []
            for item in found:
                index = known.get(item.attempt.ref)
                if index is None:
                    index, next_index = next_index, next_index + 1
                rollouts.append({"index": index, **item.rollout})
                reward = item.rollout["reward"]
                if reward is None:
                    summary.rollouts_unknown += 1
                elif reward == 1.0:
                    summary.rollouts_passed += 1
                else:
                    summary.rollouts_failed += 1
            task = _task(instance_id, found, stored.task_has.get(instance_id, set()))
            stored.task_has.setdefault(instance_id, set()).update(task)  # the next group of this task (another step) repeats none
            group = {"format": FORMAT, "run": run, "step": group_step, "uid": uid, "task": task, "rollouts": rollouts}
            try:
                line = orjson.dumps(group)
            except orjson.JSONEncodeError as exc:  # e.g. nested deeper than orjson writes (255 levels)
                unencodable.append({"uid": uid, "error": f"could not be written as a gagar-group/1 line: {exc}"})
                continue
            if b"\\u0000" in line and find_nul(group, ""):
                try:
                    line = orjson.dumps(_sanitize(group))
                    summary.findings.append(Finding(uid, "NUL characters (\\u0000) replaced by U+FFFD", NOTICE))
                except RecursionError:
                    pass  # nested far too deep to rewrite; ingest refuses the line for its depth
            uids_by_line[position + 1] = uid
            yield position + 1, line

    report = ingest_group_lines(project=project, lines=lines(), allow_unknown_reward=True, report=IngestReport())
    summary.findings = finder.findings + summary.findings
    summary.groups_created, summary.groups_extended = report.groups_created, report.groups_extended
    summary.groups_unchanged = report.groups_unchanged
    summary.rollouts_created, summary.rollouts_unchanged = report.rollouts_created, report.rollouts_unchanged
    summary.refused = unencodable + [
        {"uid": e.uid or uids_by_line.get(e.line, f"line {e.line}"), "error": e.error} for e in report.errors
    ]
    summary.aborted = report.aborted
    uids = list(uids_by_line.values())
    done = len(keys)
    for file in finder.group_files:
        done = _import_group_file(
            file, project=project, run=run, summary=summary, uids=uids, done=done, total=total, on_progress=on_progress
        )
    for start in range(0, len(uids), _LOOKUP_CHUNK):
        summary.groups_mixed += Group.objects.filter(
            run__project=project, run__name=run, uid__in=uids[start : start + _LOOKUP_CHUNK], is_mixed=True
        ).count()
    return summary


def _import_group_file(
    file: GroupFile,
    *,
    project: Project,
    run: str,
    summary: ImportSummary,
    uids: list[str],
    done: int,
    total: int,
    on_progress: Callable[[int, int], None] | None,
) -> int:
    """Stream one gagar-group/1 file into ingest as it is, into `summary`; returns the lines read so far (progress).

    A line keeps its own step; one that names another run is refused, naming its line and
    field, as is any line ingest refuses. The stored lines stay when the file breaks mid-way.
    """

    def check(parsed: ParsedGroup) -> str | None:
        if parsed.run != run:
            return (
                f"run: {parsed.run!r}, but this import goes into run {run!r} (a group line keeps the run it names: "
                f"import it into run {parsed.run!r})"
            )
        for rollout in parsed.rollouts:
            if rollout.reward is None:
                summary.rollouts_unknown += 1
            elif rollout.reward == 1.0:
                summary.rollouts_passed += 1
            else:
                summary.rollouts_failed += 1
        uids.append(parsed.uid)
        return None

    def progress(_line: int, _size: int) -> None:
        nonlocal done
        done += 1
        if on_progress:
            on_progress(min(done, total), total)

    report = IngestReport()
    try:
        with file.path.open("rb") as handle:
            lines = iter_lines(open_body(handle), max_line_bytes=settings.GAGAR_MAX_LINE_BYTES)
            ingest_group_lines(project=project, lines=lines, report=report, check=check, on_line=progress)
    except BodyError as exc:
        summary.findings.append(Finding(file.ref, f"{exc}; the lines before it were imported"))
    except OSError as exc:
        summary.findings.append(Finding(file.ref, f"unreadable: {exc.strerror or exc}"))
    summary.groups_created += report.groups_created
    summary.groups_extended += report.groups_extended
    summary.groups_unchanged += report.groups_unchanged
    summary.rollouts_created += report.rollouts_created
    summary.rollouts_unchanged += report.rollouts_unchanged
    summary.refused += [
        {"uid": e.uid or f"{file.ref} line {e.line}", "error": f"{file.ref} line {e.line}: {e.error}"} for e in report.errors
    ]
    if report.refused > len(report.errors):
        summary.refused.append({"uid": file.ref, "error": f"… and {report.refused - len(report.errors)} more refused lines"})
    if report.aborted:
        summary.findings.append(Finding(file.ref, f"aborted: {report.aborted}"))
    return done
