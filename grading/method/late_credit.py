"""What a cheat confirmed too late cost: the credit a trainer already took for it (pure).

A trainer trains on a step as an export served it (grading.method.releases keeps those bytes
per inputs version, `StepExport`). When a rollout is confirmed as a cheat after that — by an
auditor, or by a scanner version that ran later — its reward is zeroed in the current
numbers, but the gradient the trainer took from the served rows already carried the
rollout's positive credit. This module reads those rows back out of the served body
(`served_rows`), sums the positive credit of the late cheats (`step_credit`), and says which
scanner would have caught each at the time (`scanner_call`).

>>> body = (
...     b'{"uid":"g@1","index":0,"cheat":false,"advantage":0.5,"redistributed_advantage":0.638298}\\n'
...     b'{"uid":"g@1","index":2,"cheat":false,"advantage":0.5,"redistributed_advantage":0.319149}\\n'
... )
>>> served = served_rows(body, "jsonl", {("g@1", 2): 7})
>>> served
{7: Served(cheat=False, advantage=0.5, redistributed=0.319149)}
>>> from datetime import UTC, datetime
>>> exported = datetime(2025, 1, 1, 12, tzinfo=UTC)
>>> later = datetime(2025, 1, 2, tzinfo=UTC)
>>> call = scanner_call([Finding("project_fetch@1", stored_at=later, version_since=later)], exported)
>>> call.label
'caught later by project_fetch@1'
>>> late = LateRollout(7, "g@1", 2, served[7], confirmed_by="project_fetch@1", confirmed_at=later, scanner=call)
>>> credit = step_credit(1, exported, [late])
>>> (round(credit.redistributed, 6), credit.baseline, credit.n_rollouts)
(0.319149, 0.5, 1)
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# The served columns this module reads (docs/formats.md, gagar-advantage/1).
READ_COLUMNS = ("uid", "index", "cheat", "advantage", "redistributed_advantage")
MAX_CSV_FIELD = 64 * 1024 * 1024  # a turn_weights cell may pass csv's 128 KiB default; a body is one step
# Rollouts a link to the cheat audit names at most (the audit reads no more from a link).
MAX_LINKED = 500


class Unreadable(ValueError):
    """A served body that is not the export it claims to be."""


@dataclass(frozen=True)
class Served:
    """A rollout's row as the trainer received it."""

    cheat: bool
    advantage: float  # A, the baseline advantage
    redistributed: float  # A*


def served_rows(body: bytes, fmt: str, wanted: Mapping[tuple[str, int], int]) -> dict[int, Served]:
    """The served rows of the rollouts `wanted` names, by its value (a rollout id). Keys are
    (uid, index) as the body carries them: in CSV a uid that would start a formula carries a
    leading quote (grading.method.export.neutralise_cell), and the caller names it so.
    Rollouts the body does not hold (a group stored after it was served) are left out.
    Raises Unreadable when the body does not parse as `fmt`."""
    if not wanted:
        return {}
    readers = {"jsonl": _jsonl_rows, "csv": _csv_rows, "parquet": _parquet_rows}
    if fmt not in readers:
        raise Unreadable(f"no reader for format {fmt!r}")
    uids = {uid for uid, _ in wanted}
    found: dict[int, Served] = {}
    try:
        for row in readers[fmt](body, uids):
            uid, index = row["uid"], row["index"]
            if not isinstance(uid, str) or isinstance(index, bool) or not isinstance(index, (int, str)):
                raise ValueError("a row without a uid and an index")
            rollout = wanted.get((uid, int(index)))
            if rollout is not None and rollout not in found:
                found[rollout] = Served(_flag(row["cheat"]), _number(row["advantage"]), _number(row["redistributed_advantage"]))
    except (ValueError, KeyError, TypeError, csv.Error, pa.ArrowException) as exc:
        raise Unreadable(f"the served {fmt} body does not parse: {exc}") from exc
    return found


def _number(value: object) -> float:
    """A served advantage as a float; a non-finite or missing one counts as no credit."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return 0.0
    try:
        number = float(value)
    except ValueError:
        return 0.0
    return number if math.isfinite(number) else 0.0


def _flag(value: object) -> bool:
    return value is True or value == "true"


# Each reader yields the rows whose uid is among `uids` (others may come too), as mappings of
# at least READ_COLUMNS: a step's body is parsed whole, its few wanted rows built.
def _jsonl_rows(body: bytes, uids: Collection[str]) -> Iterator[Mapping[str, object]]:
    for line in body.splitlines():
        if not line.strip():
            continue
        row = orjson.loads(line)
        if not isinstance(row, dict):
            raise ValueError("a line is not a JSON object")
        if row["uid"] in uids:
            yield row


def _csv_rows(body: bytes, uids: Collection[str]) -> Iterator[Mapping[str, object]]:
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, MAX_CSV_FIELD))
    try:
        reader = csv.reader(io.StringIO(body.decode("utf-8")))
        header = next(reader, None)
        if header is None:
            return
        at = {name: header.index(name) for name in READ_COLUMNS}
        uid_at = at["uid"]
        for cells in reader:
            if cells and cells[uid_at] in uids:
                yield {name: cells[i] for name, i in at.items()}
    finally:
        csv.field_size_limit(limit)


def _parquet_rows(body: bytes, uids: Collection[str]) -> Iterator[Mapping[str, object]]:
    # Copied into memory Arrow owns, read on this thread (see grading.method.export._arrow_owned).
    stream = pa.BufferOutputStream()
    stream.write(body)
    table = pq.ParquetFile(pa.BufferReader(stream.getvalue())).read(columns=list(READ_COLUMNS), use_threads=False)
    wanted = pc.is_in(table.column("uid"), value_set=pa.array(list(uids), type=pa.string()))
    yield from table.filter(wanted).to_pylist()


@dataclass(frozen=True)
class Finding:
    """A scanner's finding on a rollout: its versioned name (`history_search@1`), when it was
    stored, and when that version stored its first finding anywhere (None: not known)."""

    scanner: str
    stored_at: datetime
    version_since: datetime | None = None


@dataclass(frozen=True)
class ScannerCall:
    """Which scanner version catches a late cheat, and whether it existed when the step was
    served: it had stored a finding on this rollout, or any finding, by then. One that did
    could have caught the cheat before the trainer took the step (the scan ran after the
    export); one that did not is a newer detector."""

    scanner: str
    at_the_time: bool
    found_before: bool = False  # its finding on this rollout was stored before the export

    @property
    def label(self) -> str:
        return f"a scanner at the time: {self.scanner}" if self.at_the_time else f"caught later by {self.scanner}"


def scanner_call(findings: Iterable[Finding], exported_at: datetime) -> ScannerCall | None:
    """The scanner to name for a rollout served at `exported_at`: one whose version existed
    then (its finding here first, the earliest stored), else the first to find it later;
    None without any scanner finding."""
    ordered = sorted(findings, key=lambda f: (f.stored_at, f.scanner))
    before = [f for f in ordered if f.stored_at <= exported_at]
    if before:
        return ScannerCall(before[0].scanner, at_the_time=True, found_before=True)
    existed = [f for f in ordered if f.version_since is not None and f.version_since <= exported_at]
    if existed:
        return ScannerCall(existed[0].scanner, at_the_time=True)
    return ScannerCall(ordered[0].scanner, at_the_time=False) if ordered else None


@dataclass(frozen=True)
class LateRollout:
    """A rollout served as no cheat with positive credit, confirmed as a cheat afterwards."""

    rollout_id: int
    uid: str
    index: int
    served: Served
    confirmed_by: str  # the auditor's username, or the scanner version that confirmed it
    confirmed_at: datetime
    scanner: ScannerCall | None

    @property
    def redistributed(self) -> float:
        return max(self.served.redistributed, 0.0)

    @property
    def baseline(self) -> float:
        return max(self.served.advantage, 0.0)


def took_credit(served: Served) -> bool:
    """Whether the served row gave the rollout credit as no cheat (positive A* or A)."""
    return not served.cheat and (served.redistributed > 0 or served.advantage > 0)


@dataclass(frozen=True)
class StepCredit:
    """One step's positive credit served to rollouts confirmed as cheats afterwards."""

    number: int
    exported_at: datetime
    rollouts: tuple[LateRollout, ...]
    redistributed: float = field(init=False)  # Σ max(A*, 0) as served
    baseline: float = field(init=False)  # Σ max(A, 0) as served

    def __post_init__(self) -> None:
        object.__setattr__(self, "redistributed", math.fsum(r.redistributed for r in self.rollouts))
        object.__setattr__(self, "baseline", math.fsum(r.baseline for r in self.rollouts))

    @property
    def n_rollouts(self) -> int:
        return len(self.rollouts)

    @property
    def rollout_ids(self) -> list[int]:
        return [r.rollout_id for r in self.rollouts]

    @property
    def linked_ids(self) -> str:
        """The first MAX_LINKED rollout ids, as the cheat audit's `rollouts` parameter."""
        return ",".join(map(str, self.rollout_ids[:MAX_LINKED]))

    @property
    def scanner_notes(self) -> list[tuple[str, int]]:
        """(label, rollouts) per scanner call, those at the time first; "no scanner finding"
        for rollouts only people flagged."""
        counts = Counter(r.scanner.label if r.scanner else "no scanner finding" for r in self.rollouts)
        return sorted(counts.items(), key=lambda kv: (not kv[0].startswith("a scanner"), kv[0]))


def step_credit(number: int, exported_at: datetime, rollouts: Sequence[LateRollout]) -> StepCredit:
    """The step's figure over the late rollouts that took credit, by (uid, index)."""
    kept = sorted((r for r in rollouts if took_credit(r.served)), key=lambda r: (r.uid, r.index))
    return StepCredit(number, exported_at, tuple(kept))


@dataclass(frozen=True)
class LateCredit:
    """A run's steps with credit served to late cheats (step order), and the steps whose
    served body could not be read or was left unread (past the read budget)."""

    steps: tuple[StepCredit, ...] = ()
    unread_steps: tuple[int, ...] = ()

    @property
    def redistributed(self) -> float:
        return math.fsum(s.redistributed for s in self.steps)

    @property
    def baseline(self) -> float:
        return math.fsum(s.baseline for s in self.steps)

    @property
    def n_rollouts(self) -> int:
        return sum(s.n_rollouts for s in self.steps)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def rollout_ids(self) -> list[int]:
        return [pk for s in self.steps for pk in s.rollout_ids]

    @property
    def linked_ids(self) -> str:
        """The first MAX_LINKED rollout ids, as the cheat audit's `rollouts` parameter."""
        return ",".join(map(str, self.rollout_ids[:MAX_LINKED]))

    def for_steps(self, numbers: Iterable[int]) -> list[StepCredit | None]:
        """The figure of each step number (None: nothing served to a late cheat)."""
        by_number = {s.number: s for s in self.steps}
        return [by_number.get(n) for n in numbers]
