"""Reading what a trainer was served, and naming the scanner, for cheats confirmed late
(grading.method.late_credit; pure: no database)."""

from __future__ import annotations

import doctest
import io
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from grading.method.late_credit import (
    Finding,
    LateCredit,
    LateRollout,
    Served,
    Unreadable,
    scanner_call,
    served_rows,
    step_credit,
)

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
COLUMNS = ["run", "step", "uid", "index", "cheat", "advantage", "redistributed_advantage", "status"]
ROWS = [
    ["r1", 1, "g@1", 0, False, 0.5, 0.638298, "graded"],
    ["r1", 1, "g@1", 2, False, 0.5, 0.319149, "graded"],
    ["r1", 1, "g@1", 3, False, -0.5, -0.5, "graded"],
    ["r1", 1, "=cmd|' /C calc'!A0@1", 0, True, 0.0, 0.0, "filtered"],
]


def jsonl_body(*, postgres: bool) -> bytes:
    # PostgreSQL's json_build_object text spaces its keys ("uid" : "g@1"); orjson does not.
    sep = '" : ' if postgres else '":'
    lines = []
    for row in ROWS:
        cells = []
        for name, value in zip(COLUMNS, row):
            text = {True: "true", False: "false"}.get(value, None) if isinstance(value, bool) else None
            if text is None:
                text = f'"{value}"' if isinstance(value, str) else repr(value)
            cells.append(f'"{name}{sep}{text}')
        lines.append("{" + ", ".join(cells) + "}")
    return ("\n".join(lines) + "\n").encode()


def csv_body() -> bytes:
    out = io.StringIO()
    out.write(",".join(COLUMNS) + "\n")
    for row in ROWS:
        cells = []
        for value in row:
            if isinstance(value, bool):
                cells.append("true" if value else "false")
            elif isinstance(value, str) and value.startswith("="):
                cells.append('"' + "'" + value.replace('"', '""') + '"')  # neutralised, as the export writes it
            else:
                cells.append(str(value))
        out.write(",".join(cells) + "\n")
    return out.getvalue().encode()


def parquet_body() -> bytes:
    table = pa.table({name: [row[i] for row in ROWS] for i, name in enumerate(COLUMNS)})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("fmt", "body"),
    [
        ("jsonl", jsonl_body(postgres=False)),
        ("jsonl", jsonl_body(postgres=True)),
        ("csv", csv_body()),
        ("parquet", parquet_body()),
    ],
    ids=["jsonl", "jsonl-postgres", "csv", "parquet"],
)
def test_the_named_rows_are_read_back_in_every_format(fmt, body):
    hostile = "=cmd|' /C calc'!A0@1"
    wanted = {("g@1", 2): 12, ("g@1", 3): 13, ("'" + hostile if fmt == "csv" else hostile, 0): 14, ("gone@1", 0): 15}
    assert served_rows(body, fmt, wanted) == {
        12: Served(cheat=False, advantage=0.5, redistributed=0.319149),
        13: Served(cheat=False, advantage=-0.5, redistributed=-0.5),
        14: Served(cheat=True, advantage=0.0, redistributed=0.0),
    }  # a rollout the body does not hold (stored after it was served) is left out


@pytest.mark.parametrize(
    ("fmt", "body"),
    [
        ("jsonl", b"{not json\n"),
        ("jsonl", b"[1, 2]\n"),
        ("jsonl", b'{"uid": "g@1"}\n'),
        ("jsonl", b'{"uid": "g@1", "index": "two", "cheat": false, "advantage": 1, "redistributed_advantage": 1}\n'),
        ("csv", b"uid,index\ng@1,0\n"),
        ("csv", b"\xff\xfe"),
        ("parquet", b"PAR1 not really"),
        ("xml", b"<rows/>"),
    ],
)
def test_a_body_that_is_not_its_format_is_unreadable(fmt, body):
    with pytest.raises(Unreadable):
        served_rows(body, fmt, {("g@1", 0): 1})


def test_non_finite_or_missing_advantages_are_no_credit():
    body = b'{"uid": "g@1", "index": 0, "cheat": false, "advantage": "NaN", "redistributed_advantage": null}\n'
    assert served_rows(body, "jsonl", {("g@1", 0): 1}) == {1: Served(False, 0.0, 0.0)}


def test_a_large_csv_cell_is_read_and_the_csv_limit_restored():
    import csv

    limit = csv.field_size_limit()
    weights = '"{' + ", ".join(f'""{i}"": 0.5' for i in range(40_000)) + '}"'
    body = f"uid,index,cheat,advantage,redistributed_advantage,turn_weights\ng@1,0,false,0.5,0.7,{weights}\n".encode()
    assert served_rows(body, "csv", {("g@1", 0): 1}) == {1: Served(False, 0.5, 0.7)}
    assert csv.field_size_limit() == limit


def found(scanner: str, minutes: float, since: float | None = None) -> Finding:
    at = T0 + timedelta(minutes=minutes)
    return Finding(scanner, stored_at=at, version_since=None if since is None else T0 + timedelta(minutes=since))


def test_a_scanner_at_the_time_is_one_whose_finding_or_version_predates_the_export():
    # stored on this rollout before the export (an open finding, confirmed later by an auditor)
    call = scanner_call([found("test_skip@1", -5), found("history_search@2", 10, since=-60)], T0)
    assert (call.label, call.found_before) == ("a scanner at the time: test_skip@1", True)
    # stored after, but its version stored findings elsewhere before: the scan ran after the export
    call = scanner_call([found("project_fetch@3", 5, since=5), found("history_search@2", 10, since=-60)], T0)
    assert (call.label, call.found_before) == ("a scanner at the time: history_search@2", False)
    # only versions that appeared after the export: the first to find it
    call = scanner_call([found("future_commit@2", 30, since=20), found("project_fetch@3", 5, since=5)], T0)
    assert call.label == "caught later by project_fetch@3"
    assert scanner_call([], T0) is None


def late(pk: int, served: Served, scanner: Finding | None = None, uid: str = "g@1") -> LateRollout:
    call = scanner_call([scanner], T0) if scanner else None
    return LateRollout(pk, uid, pk, served, confirmed_by="erin", confirmed_at=T0 + timedelta(hours=1), scanner=call)


def test_a_step_counts_positive_credit_served_as_no_cheat_only():
    step = step_credit(
        4,
        T0,
        [
            late(1, Served(False, 0.5, 0.638298), found("history_search@2", 9, since=-1)),
            late(2, Served(False, 0.5, 0.319149), found("project_fetch@3", 9, since=9)),
            late(3, Served(True, 0.0, 0.0)),  # served as a cheat already
            late(4, Served(False, -0.5, -0.5)),  # a failing rollout took no credit
            late(5, Served(False, 0.0, 0.0)),  # a filtered group
            late(6, Served(False, 0.25, 0.0)),  # A* 0 (a mapping factor of 0), A positive: counts
        ],
    )
    assert step.rollout_ids == [1, 2, 6] and step.linked_ids == "1,2,6"
    assert round(step.redistributed, 6) == 0.957447 and step.baseline == 1.25
    assert step.scanner_notes == [
        ("a scanner at the time: history_search@2", 1),
        ("caught later by project_fetch@3", 1),
        ("no scanner finding", 1),
    ]
    run = LateCredit((step,), unread_steps=(9,))
    assert (run.n_rollouts, run.n_steps, run.baseline) == (3, 1, 1.25)
    assert run.for_steps([3, 4]) == [None, step]


def test_a_link_names_at_most_500_rollouts():
    step = step_credit(1, T0, [late(pk, Served(False, 0.5, 0.5)) for pk in range(1, 602)])
    assert step.n_rollouts == 601 and len(step.linked_ids.split(",")) == 500


def test_the_module_docstring_example_holds():
    from grading.method import late_credit

    failed, attempted = doctest.testmod(late_credit, raise_on_error=False)
    assert attempted and not failed
