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

Upload jobs: `store_upload` stores an API upload under MEDIA_ROOT/imports (nothing is
unpacked in the web request), `create_import_job` records it and queues `run_import_job`
(Celery) after the commit; the worker unpacks the archives (`unpack_upload`, one budget for
the whole upload), removes each archive once unpacked, imports, and removes the upload's
folder when the job ends, whatever its status: the groups are in the database, nothing
reads the files again. What a project's jobs keep on disk meanwhile (`ImportJob.disk_bytes`)
is held to GAGAR_IMPORT_QUOTA_BYTES: an upload that would pass it is refused before it is
written, and unpacking stops where it would. `remove_orphan_uploads` (Celery beat, hourly)
removes folders a day old that no queued or running job owns (a web process or worker
killed between writing and cleaning up).
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from math import isfinite
from pathlib import Path

import orjson
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Length
from django.utils import timezone

from grading.formats.groupline import FORMAT, MAX_INT, MAX_NAME, LineError, ParsedGroup, check_name, find_nul
from grading.formats.linereader import BodyError, iter_lines, open_body
from grading.ingest.importers import archives
from grading.ingest.importers.archives import UnsafeArchive, archive_stem, extract_archive, is_archive_name, is_readable_archive
from grading.ingest.importers.common import safe_text
from grading.ingest.importers.scan import FORMATS, IGNORED, NOTICE, SKIPPED, UNKNOWN, Finding, GroupFile, RunFinder, Source
from grading.ingest.service import IngestReport, ingest_group_lines
from grading.models import Group, ImportJob, Project, Rollout, Run, Task
from grading.queueing import queue_on_commit
from grading.selectors.imports import disk_kept

logger = logging.getLogger(__name__)

MAX_LISTED = 1000  # findings kept per kind in a summary
_NAMED = 5  # refusals named in a failed import's one-line error (all of them are in its summary)
_LOOKUP_CHUNK = 400
_PROGRESS_EVERY = 0.5  # seconds between progress writes of a job


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


# gagar-group/1 task fields an import states; one the stored task already has is left out of the line
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


# -- upload jobs (API) -----------------------------------------------------------------

MAX_ATTEMPTS = 3  # deliveries of one job's task before it is failed instead of run again
MAX_ERROR = 4000  # characters of an error kept on a job
_PACKED = "uploads"  # <upload folder>/uploads/<name>: archives as uploaded, removed when the job ends
_LOOSE = "files"


class UploadRefused(ValueError):
    """The upload cannot be imported; the message says why (HTTP 400, or the failed job's error)."""


def _uploads_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "imports"


def _safe(value):
    """A summary as any database stores it: lone surrogates and NUL made visible (see safe_text)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, list):
        return [_safe(v) for v in value]
    if isinstance(value, dict):
        return {_safe(k): _safe(v) for k, v in value.items()}
    return value


def _quota_left(project: Project, *, besides: ImportJob | None = None) -> int:
    return settings.GAGAR_IMPORT_QUOTA_BYTES - disk_kept(project, besides=besides)


def _check_quota(project: Project, size: int) -> None:
    kept = disk_kept(project)
    quota = settings.GAGAR_IMPORT_QUOTA_BYTES
    if kept + size > quota:
        raise UploadRefused(
            f"upload refused: it is {size:,} bytes and project {project.name!r} keeps {kept:,} of its {quota:,}-byte import "
            f"quota on disk (imports queued or running); wait for them to finish, upload smaller parts, or ask the server's "
            f"operator to raise GAGAR_IMPORT_QUOTA_BYTES"
        )


def store_upload(*, project: Project, files) -> tuple[str, list[dict], list[dict]]:
    """Store the uploaded files under MEDIA_ROOT/imports/<new folder>; nothing is unpacked here.

    Archives are kept as uploaded (`uploads/<name>`) and unpacked by the worker
    (`unpack_upload`), within one member and size budget for the whole upload. Each archive
    becomes one PATH named after it (`run-2.tar.gz` -> refs `run-2/...`; an archive holding
    a single folder is that folder, so refs match a command-line import of it); the other
    files together form one PATH whose refs are their names. Only cheap checks happen here
    (names, a readable archive header). Returns (folder relative to MEDIA_ROOT, sources,
    uploaded file names and sizes). Raises UploadRefused; then nothing is kept. An upload the
    project's disk quota cannot hold is refused before a byte of it is written.
    """
    if not files:
        raise UploadRefused("no files: send an archive (.tar.gz, .zip) or files as multipart field 'file'")
    if len(files) > archives.MAX_MEMBERS:
        raise UploadRefused(f"more than {archives.MAX_MEMBERS:,} files in one upload")
    _check_quota(project, sum(upload.size or 0 for upload in files))
    folder = _uploads_root() / uuid.uuid4().hex
    folder.mkdir(parents=True)
    sources: list[dict] = []
    uploaded: list[dict] = []
    loose = folder / _LOOSE
    seen_names: set[str] = set()
    try:
        for upload in files:
            name = Path(upload.name or "").name
            if not name or name in (".", "..") or name.startswith(".") or safe_text(name) != name:
                raise UploadRefused(f"{safe_text(upload.name or '')!r}: not a usable file name")
            if name in seen_names:
                raise UploadRefused(f"{name!r} was uploaded twice")
            seen_names.add(name)
            uploaded.append({"name": name, "size": upload.size})
            if is_archive_name(name):
                stem = archive_stem(name)
                if not stem or stem in (_LOOSE, _PACKED) or any(s["label"] == stem for s in sources):
                    raise UploadRefused(f"{name!r}: another upload unpacks to the same name {stem!r}")
                packed = folder / _PACKED / name
                packed.parent.mkdir(exist_ok=True)
                _save(upload, packed)
                if not is_readable_archive(packed):
                    raise UploadRefused(f"archive {name!r} refused: not a readable .tar(.gz/.bz2/.xz) or .zip archive")
                sources.append({"archive": packed.relative_to(settings.MEDIA_ROOT).as_posix(), "label": stem})
            else:
                loose.mkdir(exist_ok=True)
                _save(upload, loose / name)
        if loose.exists():
            sources.append({"path": loose.relative_to(settings.MEDIA_ROOT).as_posix(), "label": ""})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder.relative_to(settings.MEDIA_ROOT).as_posix(), sources, uploaded


def _save(upload, target: Path) -> None:
    with target.open("xb") as out:
        for chunk in upload.chunks():
            out.write(chunk)


def _shown(relative: str) -> str:
    """How findings name an upload's PATH: relative to the upload's folder (`files`, `run-2/run-2`), never absolute."""
    parts = Path(relative).parts
    return "/".join(parts[2:]) if len(parts) > 2 and parts[0] == _uploads_root().name else relative


def _upload_folder(sources: list[dict]) -> Path | None:
    """The upload's own folder (MEDIA_ROOT/imports/<hex>), or None when the sources name no such folder."""
    root = _uploads_root().resolve()
    for source in sources:
        relative = source.get("archive") or source.get("path") or ""
        parts = Path(relative).parts
        if len(parts) < 2:
            continue
        folder = (Path(settings.MEDIA_ROOT) / parts[0] / parts[1]).resolve()
        if folder.parent == root and folder.is_dir():
            return folder
    return None


def unpack_upload(sources: list[dict], *, quota_left: int | None = None) -> tuple[list[dict], int]:
    """In the worker: unpack the upload's archives next to them (the caller removes them once the sources are saved).

    Returns the sources as PATHs to import and the bytes they hold on disk. One `UnpackBudget`
    holds for the whole upload: its loose files and every member of every archive count
    against the same member and byte limits, and against `quota_left` (what the project's
    disk quota leaves beside its other jobs), counted as bytes are written. Unpacking again
    (a redelivered task) starts from a clean folder. Raises UploadRefused naming the archive.
    """
    media = Path(settings.MEDIA_ROOT)
    budget = archives.UnpackBudget()
    packed_bytes = sum((media / s["archive"]).stat().st_size for s in sources if "archive" in s)
    if quota_left is not None and quota_left - packed_bytes < budget.max_bytes:
        budget.max_bytes = max(0, quota_left - packed_bytes)
        budget.bytes_limit_is = (
            f"what the project's {settings.GAGAR_IMPORT_QUOTA_BYTES:,}-byte import quota, "
            "GAGAR_IMPORT_QUOTA_BYTES, leaves beside its other imports on disk"
        )
    for source in sources:
        if "archive" not in source and source.get("path"):
            for path in (media / source["path"]).rglob("*"):
                if path.is_file():
                    budget.member()
                    budget.add(path.stat().st_size)
    resolved: list[dict] = []
    labels: set[str] = set()
    for source in sources:
        if "archive" not in source:
            resolved.append(source)
            continue
        packed = media / source["archive"]
        name = packed.name
        stem = archive_stem(name)
        dest = packed.parent.parent / stem
        shutil.rmtree(dest, ignore_errors=True)  # what an earlier, interrupted attempt left
        try:
            extract_archive(packed, dest, budget=budget)
        except UnsafeArchive as exc:
            raise UploadRefused(f"archive {name!r} refused: {exc}") from None
        root = dest
        entries = list(root.iterdir())
        if len(entries) == 1 and entries[0].is_dir() and entries[0].name not in labels:
            # `tar czf run-3.tar.gz run-3/`: refs start at run-3/, as `import_runs run-3/` gives them.
            root = entries[0]
        labels.add(root.name)
        resolved.append({"path": root.relative_to(media).as_posix(), "label": root.name, "unpacked_from": source["archive"]})
    return resolved, budget.bytes


def create_import_job(
    *,
    project: Project,
    user,
    run: str,
    step: int,
    fmt: str,
    sources: list[dict],
    uploaded: list[dict],
    reward_threshold: float | None = None,
) -> ImportJob:
    """Record the job and queue it once the row is committed (the worker must be able to read it).

    The project's disk quota is checked again under a lock of the project's row, so two
    uploads that each fitted when they were stored cannot together pass it: the second is
    refused (UploadRefused) and its files removed.
    """
    size = sum(item.get("size") or 0 for item in uploaded)
    try:
        with transaction.atomic():
            Project.objects.select_for_update().filter(pk=project.pk).first()
            _check_quota(project, size)
            run_obj, _ = Run.objects.get_or_create(project=project, name=run)
            job = ImportJob.objects.create(
                project=project,
                run=run_obj,
                step=step,
                format=fmt,
                sources=sources,
                uploaded_files=uploaded,
                created_by=user,
                reward_threshold=reward_threshold,
                disk_bytes=size,
            )
            queue_on_commit("grading.import_job", robust=False, job_id=job.pk)
    except UploadRefused:
        folder = _upload_folder(sources)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    return job


def _fail(job: ImportJob, error: str) -> None:
    """Mark the job failed with `error` (made storable), touching no other field (the summary may be what failed)."""
    job.status, job.error, job.finished_at = ImportJob.Status.FAILED, safe_text(error)[:MAX_ERROR], timezone.now()
    ImportJob.objects.filter(pk=job.pk).update(status=job.status, error=job.error, finished_at=job.finished_at)


def _clean_up(job: ImportJob) -> None:
    """Remove the upload's folder (the archives as uploaded and all they unpacked), whatever the job's status."""
    folder = _upload_folder(job.sources)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
    job.disk_bytes = 0
    ImportJob.objects.filter(pk=job.pk).update(disk_bytes=0)


def run_import_job(*, job_id: int) -> ImportJob:
    """Run one queued job: status running -> done (with its summary) or failed (with the error).

    Whatever goes wrong ends as `failed` with the error kept, never `running`. Each delivery
    of the task counts an attempt first: a worker killed while importing (out of memory,
    time limit) leaves the job running and its message is delivered again, so past
    MAX_ATTEMPTS the job is failed instead of imported once more. A job already done or
    failed is not run again. Temporary files are removed on every path.
    """
    job = ImportJob.objects.select_related("project", "run").get(pk=job_id)
    if job.status in (ImportJob.Status.DONE, ImportJob.Status.FAILED):
        return job  # a redelivered message: the work is over (and importing again would change nothing)
    ImportJob.objects.filter(pk=job.pk).update(attempts=F("attempts") + 1)
    job.refresh_from_db(fields=["attempts"])
    if job.attempts > MAX_ATTEMPTS:
        logger.error("import job %s: attempt %s, past the limit of %s; failed", job.pk, job.attempts, MAX_ATTEMPTS)
        _fail(
            job,
            f"stopped after {MAX_ATTEMPTS} attempts: the worker was stopped each time while importing "
            "(out of memory or past the time limit?); the files are left out, upload smaller parts",
        )
        _clean_up(job)
        return job
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if done == total or now - last_write >= _PROGRESS_EVERY:
            last_write = now
            ImportJob.objects.filter(pk=job.pk).update(progress_done=done, progress_total=total)

    try:
        job.status, job.started_at, job.error = ImportJob.Status.RUNNING, timezone.now(), ""
        job.save(update_fields=["status", "started_at", "error"])
        if any("archive" in s for s in job.sources):
            job.sources, job.disk_bytes = unpack_upload(job.sources, quota_left=_quota_left(job.project, besides=job))
            job.save(update_fields=["sources", "disk_bytes"])
            # Read once: from here a redelivered task imports what was unpacked (its sources name no archive).
            folder = _upload_folder(job.sources)
            if folder is not None:
                shutil.rmtree(folder / _PACKED, ignore_errors=True)
        media = Path(settings.MEDIA_ROOT)
        sources = [Source(media / s["path"], label=s.get("label", ""), shown=_shown(s["path"])) for s in job.sources]
        summary = import_runs(
            project=job.project,
            run=job.run.name,
            step=job.step,
            sources=sources,
            fmt=job.format,
            reward_threshold=job.reward_threshold,
            on_progress=progress,
        )
        job.refresh_from_db(fields=["progress_done", "progress_total"])
        job.summary = _safe(summary.as_dict())
        problem = summary.aborted or summary.nothing_imported()
        job.status = ImportJob.Status.DONE if problem is None else ImportJob.Status.FAILED
        job.error = safe_text(problem or "")[:MAX_ERROR]
        job.progress_done = job.progress_total = summary.instances
        job.finished_at = timezone.now()
        job.save(update_fields=["summary", "status", "error", "progress_done", "progress_total", "finished_at"])
    except UploadRefused as exc:
        _fail(job, str(exc))
    except Exception as exc:  # recorded on the job for the run page; the worker stays up
        logger.exception("import job %s failed", job.pk)
        _fail(job, f"{exc.__class__.__name__}: {exc}")
    finally:
        _clean_up(job)
    return job


ORPHAN_AGE = timedelta(days=1)


def remove_orphan_uploads(*, older_than: timedelta = ORPHAN_AGE) -> list[str]:
    """Remove upload folders older than `older_than` that no queued or running job owns; returns their names.

    A folder is left behind when its web process dies between storing an upload and
    recording its job, or a worker dies before cleaning up; a job that ended keeps no files,
    so any that remain go too, and its `disk_bytes` is set to 0. A queued job keeps its
    files however long it waits.
    """
    root = _uploads_root()
    active = ImportJob.objects.filter(status__in=[ImportJob.Status.QUEUED, ImportJob.Status.RUNNING])
    owned = {
        folder.name for folder in (_upload_folder(sources) for sources in active.values_list("sources", flat=True)) if folder
    }
    cutoff = time.time() - older_than.total_seconds()
    removed = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.name in owned or folder.stat().st_mtime > cutoff:
            continue
        shutil.rmtree(folder, ignore_errors=True) if folder.is_dir() else folder.unlink(missing_ok=True)
        removed.append(folder.name)
    ended = timezone.now() - older_than
    ImportJob.objects.filter(
        status__in=[ImportJob.Status.DONE, ImportJob.Status.FAILED], disk_bytes__gt=0, finished_at__lt=ended
    ).update(disk_bytes=0)
    if removed:
        logger.info("removed %s orphaned upload folder(s): %s", len(removed), ", ".join(removed[:20]))
    return removed
