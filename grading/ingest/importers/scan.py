"""Find what a set of PATHs holds and turn it into attempts, one instance at a time. No Django.

Two passes, so memory stays at one group however many trajectories there are:

1. `RunFinder.scan()` walks every PATH, sorts files by name (`*.traj.json`, `*.traj`,
   `*.pred`, `report.json`, `*.jsonl`, `*.jsonl.gz`, other `*.json`, `test_output.txt`), reads the small
   ones (reports, run summaries, predictions) and only notes where the trajectories are.
   `gagar-group/1` JSON Lines (gzip or not) are already group lines: they are only noted
   (`group_files`) and the import service streams them into ingest as they are.
2. `RunFinder.attempts(instance_id)` reads that instance's trajectories, detects their
   format from the content, and gives each attempt its verdict.

**Run roots.** A verdict belongs to the run it was made for. Files are placed in a run
root: `R/trajs/<id>/<id>.traj.json`, `R/<id>/<id>.traj.json`, `R/<id>.traj.json` (and the
same for `.traj`) all belong to R; `R/logs/.../report.json` to R; a run summary, a
predictions file or `preds.json` to its folder. Verdicts apply to trajectories of the
same root; when a PATH holds a single run, all its verdicts apply to it. So one PATH (or
archive) may hold several run folders, and several PATHs may be runs of the same tasks.

**Which verdict.** A per-instance report.json beats a run summary. A verdict holds for
the patch that was evaluated: when the run says which (a `preds.json` beside the
trajectories, or the chosen attempt of a SWE-agent retry loop), an attempt whose patch
differs gets no verdict. No verdict -> reward unknown, except an empty patch, which the
harness always fails.
"""

from __future__ import annotations

import os
import stat
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from grading.formats.groupline import FORMAT as GROUP_FORMAT
from grading.formats.linereader import BodyError, iter_lines, open_body
from grading.ingest.importers import mini_swe_agent, openhands, swe_agent, swebench, verl
from grading.ingest.importers.common import (
    MAX_JSON_BYTES,
    RESOLVED,
    UNRESOLVED,
    Attempt,
    ImportedVerdict,
    SourceError,
    is_bare_report,
    is_empty_patch,
    is_old_report,
    is_run_summary,
    jsonl_lines,
    load_json,
    read_line_at,
    read_lines_at,
    repo_of,
    safe_text,
    same_patch,
    text_of,
    verdicts_from_report_file,
    verdicts_from_summary,
)

FORMATS = ("auto", "gagar-group", "mini-swe-agent", "swe-agent", "swebench", "openhands", "verl")
MAX_TEST_LOG = 2 * 1024 * 1024  # characters of test_output.txt kept (the tail: failures are at the end)
_IDS_SHOWN = 5

SKIPPED = "skipped"  # the file (or attempt) was read and refused: not imported
IGNORED = "ignored"  # not a file the importers read (hidden, a log, JSON of no known kind): not imported, by design
UNKNOWN = "unknown_reward"  # imported, reward unknown
NOTICE = "notice"  # imported, worth knowing


class _Ignored(SourceError):
    """Not a file any importer reads: named in the summary as ignored, not as refused."""


@dataclass(frozen=True)
class Source:
    """One PATH. `label` prefixes its refs; None -> the folder's name (a file PATH: none).

    `shown` is how findings name the PATH itself (None: as given). An upload's PATH lives
    under the server's media folder; it is shown relative to the upload's folder, so no
    finding carries an absolute server path.
    """

    path: Path
    label: str | None = None
    shown: str | None = None

    @property
    def name(self) -> str:
        return str(self.path) if self.shown is None else self.shown


@dataclass(frozen=True)
class Finding:
    ref: str
    reason: str
    kind: str = SKIPPED

    def as_dict(self) -> dict[str, Any]:
        return {"ref": self.ref, "reason": self.reason}


@dataclass
class _Candidate:
    instance_id: str
    kind: str  # "trajectory", "prediction", "openhands" (one output.jsonl line) or "verl" (dump rows of one group)
    path: Path
    ref: str
    root: tuple[int, str]
    order: tuple[Any, ...]
    prediction: dict[str, Any] | None = None
    sidecar: Path | None = None
    lines: list[tuple[int, int]] = field(default_factory=list)  # (line number, byte offset) in `path`
    step: int | None = None  # verl: the group's step
    file_ref: str = ""  # the file's ref when `ref` names one entry of it ("<file>#<instance>"); "": `ref`


@dataclass(frozen=True)
class GroupFile:
    """A `gagar-group/1` JSON Lines file (gzip or not): `lines` non-blank lines, ingested as they are."""

    path: Path
    ref: str
    lines: int


@dataclass
class _OldReport:
    """A pre-2024 harness report (`final_report.json`, `results.json`): ids resolved, and optionally generated / applied."""

    root: tuple[int, str]
    ref: str
    resolved: set[str]
    generated: set[str] | None
    applied: set[str] | None


@dataclass
class FoundAttempt:
    attempt: Attempt
    rollout: dict[str, Any]  # gagar-group/1 rollout without "index"
    file_ref: str = ""  # the file it was read from, without the attempt's "#..." (the attempt's ref has it)
    line: int | None = None  # its line in that file, when one line holds it (OpenHands output.jsonl, verl dumps)


@dataclass
class _PredictionFile:
    root: tuple[int, str]
    rel: str
    ref: str
    predictions: list[dict[str, Any]]


def _join(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def _trajectory_root(parts: list[str], instance_id: str) -> str:
    base = parts[:-1]
    if base and base[-1] == instance_id:
        base = base[:-1]
    if base and base[-1] == "trajs":
        base = base[:-1]
    return "/".join(base)


def _report_root(parts: list[str], instance_ids: Iterable[str]) -> str:
    """`R/logs/.../report.json` -> R; `R/<id>/report.json` -> R; otherwise the report's folder."""
    dirs = parts[:-1]
    if "logs" in dirs:
        return "/".join(dirs[: len(dirs) - 1 - dirs[::-1].index("logs")])
    if dirs and dirs[-1] in set(instance_ids):
        dirs = dirs[:-1]
    return "/".join(dirs)


def _ids(ids: Iterable[str]) -> str:
    ids = sorted(ids)
    shown = ", ".join(ids[:_IDS_SHOWN])
    return shown + (f", … ({len(ids) - _IDS_SHOWN} more)" if len(ids) > _IDS_SHOWN else "")


def _id_set(value: object) -> set[str] | None:
    return {i for i in value if isinstance(i, str)} if isinstance(value, list) else None


def _parse_line(number: int, raw: bytes | None) -> Any:
    if raw is None:
        raise SourceError(f"line {number}: longer than the {MAX_JSON_BYTES // (1024 * 1024)} MB limit of one line")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SourceError(f"line {number}: truncated or invalid JSON ({exc})") from None


def _is_group_line(obj: object) -> bool:
    return isinstance(obj, dict) and obj.get("format") == GROUP_FORMAT


def _jsonl_kind(path: Path) -> str:
    """What a .jsonl holds, from its first line that parses: "gagar-group", "openhands", "verl" or "predictions"."""
    for number, _, raw in jsonl_lines(path):
        try:
            obj = _parse_line(number, raw)
        except SourceError:
            continue
        if _is_group_line(obj):
            return "gagar-group"
        if openhands.is_output_line(obj):
            return "openhands"
        if verl.is_row(obj):
            return "verl"
        return "predictions"
    return "predictions"


def _compressed_kind(path: Path) -> tuple[str, int]:
    """A `.jsonl.gz`: ("gagar-group" when its first line that parses is a group line, else "other"; its non-blank lines).

    Only group lines are read compressed. The stream is decompressed one line at a time, to
    count a group file's lines for the job's progress. Raises SourceError on a corrupt stream.
    """
    kind, count = "", 0
    try:
        with path.open("rb") as handle:
            for _, raw in iter_lines(open_body(handle), max_line_bytes=MAX_JSON_BYTES):
                count += 1
                if kind or not isinstance(raw, bytes):
                    continue
                try:
                    kind = "gagar-group" if _is_group_line(orjson.loads(raw)) else "other"
                except orjson.JSONDecodeError:
                    continue
                if kind == "other":
                    break
    except (OSError, BodyError) as exc:
        raise SourceError(f"unreadable compressed file: {getattr(exc, 'strerror', None) or exc}") from None
    return kind or "other", count


def _read_tail(path: Path) -> str:
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            if size > MAX_TEST_LOG:
                handle.seek(size - MAX_TEST_LOG)
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    return (f"[… first {size - MAX_TEST_LOG:,} bytes left out …]\n" + text) if size > MAX_TEST_LOG else text


class RunFinder:
    """`reward_threshold`: a verl score >= it passes (None: scores must be 0 or 1). `step`: the
    import's step, for verl rows that name none (neither a `step` field nor a `<n>.jsonl` name)."""

    def __init__(
        self, sources: list[Source], *, fmt: str = "auto", reward_threshold: float | None = None, step: int | None = None
    ):
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
        self.sources = sources
        self.fmt = fmt
        self.reward_threshold = reward_threshold
        self.step = step
        # group key -> (instance id, step or None for the import's, uid without "@step"); keys not here are instance ids
        self._groups: dict[str, tuple[str, int | None, str]] = {}
        self._old_reports: list[_OldReport] = []
        self.findings: list[Finding] = []
        self.files_seen = 0
        self.bytes_seen = 0
        self._candidates: dict[str, list[_Candidate]] = defaultdict(list)
        self._verdicts: dict[tuple[int, str], dict[str, list[ImportedVerdict]]] = defaultdict(lambda: defaultdict(list))
        self._evaluated: dict[tuple[int, str], dict[str, str]] = defaultdict(dict)
        self._prediction_files: list[_PredictionFile] = []
        self._report_refs: list[tuple[tuple[int, str], str, str]] = []  # (root, instance, ref) of report.json files
        self._summary_refs: list[tuple[tuple[int, str], str, set[str]]] = []
        self.group_files: list[GroupFile] = []  # gagar-group/1 JSON Lines, in the order of the PATHs and their files

    # -- pass 1 -----------------------------------------------------------------
    def scan(self) -> RunFinder:
        prefixes: dict[str, int] = {}
        for position, source in enumerate(self.sources):
            path = Path(source.path)
            if not path.exists():
                self._skip(source.name, "no such file or folder")
                continue
            if path.is_dir():
                prefix = path.resolve().name if source.label is None else source.label
            else:
                prefix = source.label or ""
            key = prefix if path.is_dir() else _join(prefix, path.name)
            if key in prefixes:
                self._skip(source.name, f"another PATH of this import is also named {key!r}; refs would collide (rename one)")
                continue
            prefixes[key] = position
            if path.is_dir():
                for dirpath, dirnames, filenames in os.walk(path):
                    dirnames.sort()
                    here = Path(dirpath)
                    rel_dir = here.relative_to(path).as_posix()
                    self._scan_folder(position, path, prefix, "" if rel_dir == "." else rel_dir, sorted(filenames))
            else:
                self._scan_folder(position, path.parent, prefix, "", [path.name])
        self._settle()
        return self

    def _skip(self, ref: str, reason: str, kind: str = SKIPPED) -> None:
        self.findings.append(Finding(ref, reason, kind))

    def _scan_folder(self, position: int, base: Path, prefix: str, rel_dir: str, names: list[str]) -> None:
        present = set(names)
        for name in names:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            path = base / rel
            ref = _join(prefix, rel)
            parts = rel.split("/")
            try:
                st = path.stat()
            except OSError:
                st = None
            self.files_seen += 1
            self.bytes_seen += st.st_size if st is not None else 0
            if st is not None and not stat.S_ISREG(st.st_mode):
                # a named pipe would block the read forever; a device or socket is never a run's file
                self._skip(safe_text(ref), "not a regular file (a named pipe, a device or a socket)")
                continue
            if name.startswith(".") or "__MACOSX" in parts:
                self._skip(safe_text(ref), "hidden file", IGNORED)
                continue
            if safe_text(ref) != ref:
                # Bytes that are not UTF-8 (an archive member's raw name, os.fsdecode's surrogate escapes):
                # no instance id, uid or ref can hold them. Only this file is left out.
                self._skip(safe_text(ref), "file name is not valid UTF-8 (or holds NUL); rename it to import it")
                continue
            try:
                self._classify(position, path, name, rel, ref, parts, present)
            except _Ignored as exc:
                self._skip(ref, str(exc), IGNORED)
            except SourceError as exc:
                self._skip(ref, str(exc))

    def _classify(self, position: int, path: Path, name: str, rel: str, ref: str, parts: list[str], present: set[str]) -> None:
        order = (position, rel)
        for suffix in (".traj.json", ".traj"):
            if name.endswith(suffix) and len(name) > len(suffix):
                instance_id = name[: -len(suffix)]
                if self.fmt == "swebench":
                    raise SourceError("a trajectory, but --format swebench reads predictions only")
                sidecar = (
                    path.with_name(f"{instance_id}.pred") if suffix == ".traj" and f"{instance_id}.pred" in present else None
                )
                root = (position, _trajectory_root(parts, instance_id))
                self._candidates[instance_id].append(
                    _Candidate(instance_id, "trajectory", path, ref, root, order, sidecar=sidecar)
                )
                return
        if name.endswith(".pred"):
            if self.fmt != "swebench" and f"{name[:-5]}.traj" in present:
                return  # read with its .traj
            obj = load_json(path)
            if not swebench.is_prediction(obj):
                raise SourceError("not a prediction (needs instance_id and model_patch)")
            self._prediction_files.append(_PredictionFile((position, "/".join(parts[:-1])), rel, ref, [obj]))
            return
        if name == "test_output.txt" and "report.json" in present:
            return  # read with its report.json
        if name == "report.json":
            obj = load_json(path)
            if is_old_report(obj) or is_run_summary(obj):
                self._classify_json(position, obj, rel, ref, parts)
                return
            hint = parts[-2] if len(parts) >= 2 else None
            verdicts = verdicts_from_report_file(obj, instance_hint=hint, ref=ref)
            log = _read_tail(path.with_name("test_output.txt")) if "test_output.txt" in present and len(verdicts) == 1 else ""
            root = (position, _report_root(parts, verdicts))
            for instance_id, verdict in verdicts.items():
                if log:
                    verdict = ImportedVerdict(verdict.status, verdict.source, verdict.ref, verdict.tests, log)
                self._verdicts[root][instance_id].append(verdict)
                self._report_refs.append((root, instance_id, ref))
            return
        if name.endswith(".jsonl.gz"):
            kind, count = _compressed_kind(path)
            if kind != "gagar-group":
                raise SourceError("compressed JSON Lines that are not gagar-group/1 group lines (only those are read compressed)")
            self._group_file(path, ref, count)
            return
        if name.endswith(".jsonl"):
            kind = _jsonl_kind(path)
            if kind == "gagar-group" or self.fmt == "gagar-group":
                self._group_file(path, ref, sum(1 for _ in jsonl_lines(path)))
                return
            if (
                kind == "openhands"
                and name.endswith(".swebench_eval.jsonl")
                and f"{name[: -len('.swebench_eval.jsonl')]}.jsonl" in present
            ):
                self._openhands_verdicts(position, path, ref, parts)  # the evaluated copy of output.jsonl: verdicts only
                return
            if kind == "openhands" or self.fmt == "openhands":
                if self.fmt not in ("auto", "openhands"):
                    raise SourceError(f"an OpenHands output.jsonl, but --format {self.fmt} was asked for")
                self._openhands_file(position, path, ref, rel, parts)
                return
            if kind == "verl" or self.fmt == "verl":
                if self.fmt not in ("auto", "verl"):
                    raise SourceError(f"a verl rollout dump, but --format {self.fmt} was asked for")
                self._verl_file(position, path, name, ref, rel)
                return
            predictions, problems = swebench.predictions_from_jsonl(path)
            for problem in problems:
                self._skip(ref, problem)
            self._prediction_files.append(_PredictionFile((position, "/".join(parts[:-1])), rel, ref, predictions))
            return
        if name.endswith(".json"):
            self._classify_json(position, load_json(path), rel, ref, parts)
            return
        raise _Ignored(
            "unrelated file (not group lines, a trajectory, predictions, output.jsonl, rollout dump, report or run summary)"
        )

    def _group_file(self, path: Path, ref: str, lines: int) -> None:
        if self.fmt not in ("auto", "gagar-group"):
            raise SourceError(f"gagar-group/1 group lines, but --format {self.fmt} was asked for")
        self.group_files.append(GroupFile(path, ref, lines))

    def _classify_json(self, position: int, obj: Any, rel: str, ref: str, parts: list[str]) -> None:
        root = (position, "/".join(parts[:-1]))
        if _is_group_line(obj):
            raise SourceError(
                "a gagar-group/1 group as a .json file: group lines are read from .jsonl (or .jsonl.gz), one group a line"
            )
        if is_old_report(obj):
            self._old_reports.append(
                _OldReport(
                    root, ref, _id_set(obj["resolved"]) or set(), _id_set(obj.get("generated")), _id_set(obj.get("applied"))
                )
            )
            return
        if is_run_summary(obj):
            verdicts = verdicts_from_summary(obj, ref=ref)
            for instance_id, verdict in verdicts.items():
                self._verdicts[root][instance_id].append(verdict)
            self._summary_refs.append((root, ref, set(verdicts)))
            return
        if swebench.is_predictions(obj):
            self._prediction_files.append(_PredictionFile(root, rel, ref, swebench.predictions_of(obj)))
            return
        if isinstance(obj, dict) and obj and all(is_bare_report(v) for v in obj.values()):
            verdicts = verdicts_from_report_file(obj, instance_hint=None, ref=ref)
            root = (position, _report_root(parts, verdicts))
            for instance_id, verdict in verdicts.items():
                self._verdicts[root][instance_id].append(verdict)
                self._report_refs.append((root, instance_id, ref))
            return
        raise _Ignored("unrelated JSON (not a trajectory, predictions, report.json or run summary)")

    # -- JSON Lines of one instance (OpenHands) or one sample (verl) per line ---------------
    def _lines_or_skip(self, path: Path, ref: str) -> Iterator[tuple[int, int, Any]]:
        """(number, offset, parsed line) of a JSON Lines file; a line too long or not JSON is
        noted as skipped (naming it) and the rest go on."""
        for number, offset, raw in jsonl_lines(path):
            try:
                yield number, offset, _parse_line(number, raw)
            except SourceError as exc:
                self._skip(ref, str(exc))

    def _openhands_file(self, position: int, path: Path, ref: str, rel: str, parts: list[str]) -> None:
        root = (position, "/".join(parts[:-1]))
        seen: dict[str, int] = defaultdict(int)
        found = 0
        for number, offset, line in self._lines_or_skip(path, ref):
            if not openhands.is_output_line(line):
                self._skip(ref, f"line {number}: not an OpenHands output line (needs instance_id and history or test_result)")
                continue
            instance_id = line["instance_id"]
            seen[instance_id] += 1
            suffix = "" if seen[instance_id] == 1 else f"~{seen[instance_id]}"
            self._candidates[instance_id].append(
                _Candidate(
                    instance_id,
                    "openhands",
                    path,
                    f"{ref}#{instance_id}{suffix}",
                    root,
                    (position, rel, number),
                    lines=[(number, offset)],
                    file_ref=ref,
                )
            )
            found += 1
        if not found:
            raise SourceError("no OpenHands output lines (instance_id with history or test_result)")

    def _openhands_verdicts(self, position: int, path: Path, ref: str, parts: list[str]) -> None:
        root = (position, "/".join(parts[:-1]))
        for _, _, line in self._lines_or_skip(path, ref):
            verdict = openhands.verdict_of(line, ref=ref) if openhands.is_output_line(line) else None
            if verdict is not None:
                self._verdicts[root][line["instance_id"]].append(verdict)
                self._report_refs.append((root, line["instance_id"], ref))

    def _verl_file(self, position: int, path: Path, name: str, ref: str, rel: str) -> None:
        """All rows of the file or none: one score that cannot be a reward refuses the file, naming its line."""
        file_step = verl.step_of_name(name)
        groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
        info: dict[str, tuple[str, int | None, str]] = {}
        for number, offset, raw in jsonl_lines(path):
            row = _parse_line(number, raw)  # a broken line refuses the file: a group missing a sample is not the group
            if not verl.is_row(row):
                raise SourceError(f"line {number}: not a verl rollout row (needs input, output and score)")
            problem = verl.check_score(row, self.reward_threshold)
            if problem:
                raise SourceError(f"line {number}: {problem}")
            step = row.get("step")
            step = step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else file_step
            if step is None:
                step = self.step
            stem = verl.group_stem(row)
            key = f"verl:{step if step is not None else ''}:{stem}"
            groups[key].append((number, offset))
            info[key] = (verl.prompt_id(text_of(row.get("input"))), step, stem)
        if not groups:
            raise SourceError("no rows (a verl dump has one JSON object per line)")
        for key, lines in groups.items():
            self._groups[key] = info[key]
            self._candidates[key].append(
                _Candidate(
                    info[key][0], "verl", path, ref, (position, rel), (position, rel, lines[0][0]), lines=lines, step=info[key][1]
                )
            )
        steps = sorted({s for _, s, _ in info.values() if s is not None})
        self._skip(
            ref,
            f"verl dump: {sum(len(v) for v in groups.values())} rows in {len(groups)} group(s)"
            + (f" at step {', '.join(map(str, steps))} (the dump's own step)" if steps else ""),
            NOTICE,
        )

    def _settle(self) -> None:
        """Decide what predictions are, and which run each verdict belongs to."""
        trajectory_roots = {c.root for cs in self._candidates.values() for c in cs}
        for file in self._prediction_files:
            if file.root in trajectory_roots:
                # preds.json beside trajectories: the patches the harness evaluated, not extra rollouts.
                known = {c.instance_id for cs in self._candidates.values() for c in cs if c.root == file.root}
                for p in file.predictions:
                    patch = p.get("model_patch")
                    self._evaluated[file.root][p["instance_id"]] = patch if isinstance(patch, str) else ""
                orphans = {p["instance_id"] for p in file.predictions} - known
                if orphans:
                    self._skip(file.ref, f"{len(orphans)} prediction(s) with no trajectory beside them: {_ids(orphans)}", NOTICE)
            elif self.fmt in ("auto", "swebench"):
                seen: dict[str, int] = defaultdict(int)
                for p in file.predictions:
                    instance_id = p["instance_id"]
                    seen[instance_id] += 1
                    suffix = "" if seen[instance_id] == 1 else f"~{seen[instance_id]}"
                    ref = file.ref if file.rel.endswith(".pred") else f"{file.ref}#{instance_id}{suffix}"
                    self._candidates[instance_id].append(
                        _Candidate(
                            instance_id,
                            "prediction",
                            Path(),
                            ref,
                            file.root,
                            (file.root[0], file.rel, seen[instance_id]),
                            prediction=p,
                            file_ref=file.ref,
                        )
                    )
            else:
                self._skip(file.ref, f"SWE-bench predictions, but --format {self.fmt} was asked for")

        candidate_roots = {c.root for cs in self._candidates.values() for c in cs if c.kind != "verl"}
        by_source: dict[int, set[str]] = defaultdict(set)
        for position, root_dir in candidate_roots:
            by_source[position].add(root_dir)
        moved: dict[tuple[int, str], tuple[int, str]] = {}
        for root in list(self._verdicts):
            if root not in candidate_roots and len(by_source.get(root[0], ())) == 1:
                target = (root[0], next(iter(by_source[root[0]])))
                moved[root] = target
                for instance_id, verdicts in self._verdicts.pop(root).items():
                    self._verdicts[target][instance_id].extend(verdicts)
        for report in self._old_reports:
            root = report.root
            if root not in candidate_roots and len(by_source.get(root[0], ())) == 1:
                root = (root[0], next(iter(by_source[root[0]])))
            self._apply_old_report(report, root)
        have = {(c.root, c.instance_id) for cs in self._candidates.values() for c in cs}
        for root, instance_id, ref in self._report_refs:
            if (moved.get(root, root), instance_id) not in have:
                self._skip(ref, f"report for {instance_id}, which has no trajectory or prediction in this run")
        for root, ref, ids in self._summary_refs:
            missing = {i for i in ids if (moved.get(root, root), i) not in have}
            if missing and missing == ids:
                self._skip(ref, f"run summary whose {len(ids)} instance(s) have no trajectory or prediction in this run")
            elif missing:
                self._skip(
                    ref,
                    f"{len(missing)} instance(s) in this run summary have no trajectory or prediction: {_ids(missing)}",
                    NOTICE,
                )

    def _apply_old_report(self, report: _OldReport, root: tuple[int, str]) -> None:
        """Resolved ids pass; an instance with a prediction (trajectory or predictions entry) in the run and
        not resolved fails; when the report lists `generated`, an instance it does not list gets no verdict."""
        ids = {c.instance_id for cs in self._candidates.values() for c in cs if c.root == root and c.kind != "verl"}
        passed, failed, uncovered = set(), set(), set()
        for instance_id in ids:
            if instance_id in report.resolved:
                passed.add(instance_id)
                verdict = ImportedVerdict(
                    RESOLVED, "old-report", report.ref, rule="listed in 'resolved' of the older harness report"
                )
            elif report.generated is not None and instance_id not in report.generated:
                uncovered.add(instance_id)
                continue
            else:
                failed.add(instance_id)
                why = (
                    " (not in 'applied': the patch did not apply)"
                    if report.applied is not None and instance_id not in report.applied
                    else ""
                )
                verdict = ImportedVerdict(
                    UNRESOLVED,
                    "old-report",
                    report.ref,
                    rule=f"a prediction in this run and not in 'resolved' of the older harness report{why}",
                )
            self._verdicts[root][instance_id].append(verdict)
        if not ids:
            self._skip(
                report.ref,
                f"older SWE-bench harness report whose {len(report.resolved)} resolved id(s) have no "
                "trajectory or prediction in this run",
            )
            return
        note = (
            f"older SWE-bench harness report: {len(passed)} instance(s) pass (listed in 'resolved'), {len(failed)} fail "
            "(a prediction in this run, not in 'resolved')"
        )
        if uncovered:
            note += f"; {len(uncovered)} not in its 'generated' list get no verdict from it: {_ids(uncovered)}"
        missing = report.resolved - ids
        if missing:
            note += f"; {len(missing)} resolved id(s) have no trajectory or prediction here: {_ids(missing)}"
        self._skip(report.ref, note, NOTICE)

    # -- pass 2 -----------------------------------------------------------------
    @property
    def instance_ids(self) -> list[str]:
        """The group keys, sorted: an instance id (one group at the import's step) or a verl group's key."""
        return sorted(self._candidates)

    def group_of(self, key: str) -> tuple[str, int | None, str]:
        """(instance id of the task, step or None for the import's, the group's uid before "@<step>")."""
        return self._groups.get(key, (key, None, key))

    def attempts(self, instance_id: str) -> list[FoundAttempt]:
        found: list[FoundAttempt] = []
        for candidate in sorted(self._candidates.get(instance_id, []), key=lambda c: c.order):
            try:
                attempts = self._read(candidate)
            except SourceError as exc:
                self._skip(candidate.ref, str(exc))
                continue
            # verl gives one attempt per row and OpenHands one per line, in the order of `lines`
            numbers = [number for number, _ in candidate.lines] if candidate.kind in ("verl", "openhands") else []
            for position, attempt in enumerate(attempts):
                if attempt.unfinished:
                    self._skip(attempt.ref, "no submission and no exit status: the agent did not finish this run")
                    continue
                line = numbers[position] if position < len(numbers) else None
                found.append(FoundAttempt(attempt, self._rollout(candidate, attempt), candidate.file_ref or candidate.ref, line))
        return found

    def _read(self, candidate: _Candidate) -> list[Attempt]:
        if candidate.kind == "prediction":
            assert candidate.prediction is not None  # every prediction candidate holds its line
            return [swebench.attempt_from_prediction(candidate.prediction, ref=candidate.ref)]
        if candidate.kind == "openhands":
            number, offset = candidate.lines[0]
            attempt = openhands.attempt_from_line(_parse_line(number, read_line_at(candidate.path, offset)), ref=candidate.ref)
            unknown = attempt.metadata.get("unknown_events")
            if unknown:
                kinds = ", ".join(f"{label} ×{count}" for label, count in unknown.items())
                self._skip(
                    candidate.ref,
                    f"line {number}: event types OpenHands does not define, kept as plain messages: {kinds}",
                    NOTICE,
                )
            return [attempt]
        if candidate.kind == "verl":
            raws = read_lines_at(candidate.path, [offset for _, offset in candidate.lines])
            return [
                verl.attempt_from_row(
                    _parse_line(number, raw),
                    ref=f"{candidate.ref}#line-{number}",
                    threshold=self.reward_threshold,
                    default_step=candidate.step,
                )
                for (number, _), raw in zip(candidate.lines, raws, strict=True)
            ]
        obj = load_json(candidate.path)
        named = obj.get("instance_id") if isinstance(obj, dict) else None
        if isinstance(named, str) and named and named != candidate.instance_id:
            raise SourceError(f"instance_id {named!r} in the file does not match its name ({candidate.instance_id!r})")
        if self.fmt in ("auto", "mini-swe-agent") and mini_swe_agent.is_trajectory(obj):
            return [mini_swe_agent.attempt_from_trajectory(obj, ref=candidate.ref, instance_id=candidate.instance_id)]
        if self.fmt in ("auto", "swe-agent") and swe_agent.is_trajectory(obj):
            pred_patch = None
            if candidate.sidecar is not None:
                pred = load_json(candidate.sidecar)
                patch = pred.get("model_patch") if isinstance(pred, dict) else None
                pred_patch = patch if isinstance(patch, str) else None
            return swe_agent.attempts_from_traj(obj, ref=candidate.ref, instance_id=candidate.instance_id, pred_patch=pred_patch)
        if self.fmt == "auto":
            raise SourceError("not a trajectory this importer knows (neither mini-swe-agent nor SWE-agent)")
        raise SourceError(f"not a {self.fmt} trajectory (--format {self.fmt})")

    def _verdict(self, candidate: _Candidate, attempt: Attempt) -> tuple[ImportedVerdict | None, str]:
        verdicts = self._verdicts.get(candidate.root, {}).get(candidate.instance_id, [])
        if attempt.own_verdict is not None:
            verdicts = [attempt.own_verdict, *verdicts]
        reports = [v for v in verdicts if v.source == "report"] or verdicts
        if not reports:
            if attempt.format == openhands.FORMAT:
                return None, "no test_result.report in the output line and no report or run summary beside it"
            return None, "no report.json or run-summary entry for this instance"
        if len({v.status for v in reports}) > 1:
            return None, "conflicting verdicts: " + "; ".join(f"{v.ref} says {v.status}" for v in reports)
        return reports[0], ""

    def _rollout(self, candidate: _Candidate, attempt: Attempt) -> dict[str, Any]:
        verdict, why = self._verdict(candidate, attempt)
        evaluated = attempt.evaluated_patch
        if evaluated is None:
            evaluated = self._evaluated.get(candidate.root, {}).get(candidate.instance_id)
        if verdict is not None and attempt.verdict_ambiguous:
            verdict, why = None, "several attempts and no record of which one was evaluated"
        elif verdict is not None and evaluated is not None and not same_patch(attempt.patch, evaluated):
            verdict, why = None, "the evaluated patch is not this attempt's patch"
        rollout = attempt.rollout(verdict=verdict, reward_note=why)
        if rollout["reward"] is None:
            self._skip(attempt.ref, f"no verdict ({why}): reward unknown", UNKNOWN)
        elif verdict is None and is_empty_patch(attempt.patch):
            status = f" (exit status {attempt.exit_status})" if attempt.exit_status else ""
            if attempt.format == openhands.FORMAT:
                self._skip(
                    attempt.ref,
                    f"a history without a patch (test_result.git_patch empty or missing){status}: "
                    "counted as failing (empty patch)",
                    NOTICE,
                )
            else:
                self._skip(attempt.ref, f"no submission{status}: counted as failing (empty patch)", NOTICE)
        return rollout

    @staticmethod
    def problem_statement(found: list[FoundAttempt]) -> str:
        return next((f.attempt.problem_statement for f in found if f.attempt.problem_statement), "")

    @staticmethod
    def task_fields(instance_id: str, found: list[FoundAttempt]) -> dict[str, Any]:
        """What the files state of the instance's task: the attempts' own task fields, the
        repository a SWE-bench id names, and the test lists the harness's report names
        (`tests_status` of report.json: FAIL_TO_PASS and PASS_TO_PASS, each the tests it ran
        under that list, passed or failed) where the trajectories leave them out; the scanners
        need them to tell a tampering that scored from one that did not."""
        stated: dict[str, Any] = {}
        for item in found:
            for key, value in item.attempt.task.items():
                stated.setdefault(key, value)
        if repo_of(instance_id):
            stated.setdefault("repo", repo_of(instance_id))
        for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            if stated.get(key):
                continue
            named: dict[str, None] = {}
            for item in found:
                outcome = (item.rollout.get("tests") or {}).get(key)
                if isinstance(outcome, dict):
                    for test in (*outcome.get("success", ()), *outcome.get("failure", ())):
                        named.setdefault(str(test), None)
            if named:
                stated[key] = list(named)
        return stated
