"""Stream `gagar-advantage/1` rows (docs/formats.md) as JSON Lines, CSV or Parquet.

On PostgreSQL the rows leave the database through COPY: JSON Lines are built by
`json_build_object` (PostgreSQL prints float8 in shortest round-trip form, as Python
does), CSV is COPY's own CSV, and Parquet is COPY CSV parsed by pyarrow's C++ reader.
Other databases (SQLite in development) go through a Python path with the same columns
and values. Rows of one group come together, ordered by index.

`turn_weights=True` (the API's `?turn_weights=1`, for a run that gives per-token advantages,
docs/method.md §9) adds one last column, TURN_WEIGHTS: a rollout's turn weights as a JSON
object `{"<message index>": weight}`, nested in JSON Lines, as JSON text in CSV and Parquet.
Without it the rows are byte for byte what they were.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from django.db import connection

from grading.models import AdvantageResult, FactorMapping, Step, StepComputation

COLUMNS = [
    "run",
    "step",
    "uid",
    "index",
    "instance_id",
    "reward",
    "passed",
    "cheat",
    "cheat_source",
    "baseline",
    "advantage",
    "tier",
    "rank",
    "factor",
    "lambda",
    "redistributed_advantage",
    "discount_only_advantage",
    "mapping",
    "status",
    "dropped",
    "drop_mode",
]
TURN_WEIGHTS = "turn_weights"  # the optional last column (method §9)
FORMATS = ("jsonl", "csv", "parquet")
CONTENT_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}

# Export column -> SQL expression over grading_advantageresult.
_SQL = {
    "run": "run_name",
    "step": "step_number",
    "uid": "uid",
    "index": '"index"',
    "instance_id": "instance_id",
    "reward": "reward",
    "passed": "passed",
    "cheat": "cheat",
    "cheat_source": "NULLIF(cheat_source, '')",
    "baseline": "baseline",
    "advantage": "advantage",
    "tier": "NULLIF(tier, '')",
    "rank": '"rank"',
    "factor": "factor",
    "lambda": '"lambda"',
    "redistributed_advantage": "redistributed_advantage",
    "discount_only_advantage": "discount_only_advantage",
    "mapping": "mapping_label",
    "status": "status",
    "dropped": "NULLIF(dropped, '')",
    "drop_mode": "NULLIF(drop_mode, '')",
    TURN_WEIGHTS: "turn_weights",
}
_ORM = {
    "run": "run_name",
    "step": "step_number",
    "uid": "uid",
    "index": "index",
    "instance_id": "instance_id",
    "reward": "reward",
    "passed": "passed",
    "cheat": "cheat",
    "cheat_source": "cheat_source",
    "baseline": "baseline",
    "advantage": "advantage",
    "tier": "tier",
    "rank": "rank",
    "factor": "factor",
    "lambda": "lambda_value",
    "redistributed_advantage": "redistributed_advantage",
    "discount_only_advantage": "discount_only_advantage",
    "mapping": "mapping_label",
    "status": "status",
    "dropped": "dropped",
    "drop_mode": "drop_mode",
    TURN_WEIGHTS: "turn_weights",
}
_ARROW_FIELDS: list[tuple[str, pa.DataType]] = [
    ("run", pa.string()),
    ("step", pa.int64()),
    ("uid", pa.string()),
    ("index", pa.int64()),
    ("instance_id", pa.string()),
    ("reward", pa.float64()),
    ("passed", pa.bool_()),
    ("cheat", pa.bool_()),
    ("cheat_source", pa.string()),
    ("baseline", pa.string()),
    ("advantage", pa.float64()),
    ("tier", pa.string()),
    ("rank", pa.int64()),
    ("factor", pa.float64()),
    ("lambda", pa.float64()),
    ("redistributed_advantage", pa.float64()),
    ("discount_only_advantage", pa.float64()),
    ("mapping", pa.string()),
    ("status", pa.string()),
    ("dropped", pa.string()),
    ("drop_mode", pa.string()),
]
ARROW_SCHEMA = pa.schema(_ARROW_FIELDS)
WEIGHTED_SCHEMA = ARROW_SCHEMA.append(pa.field(TURN_WEIGHTS, pa.string()))
CHUNK_ROWS = 20_000
COPY_BLOCK = 256 * 1024  # bytes per chunk of a streamed PostgreSQL export
ROW_GROUP_ROWS = 256 * 1024  # rows per Parquet row group on the PostgreSQL path
PARSE_BLOCK = 4 * 1024 * 1024  # bytes of COPY CSV parsed by pyarrow at a time


def _columns(turn_weights: bool) -> list[str]:
    return [*COLUMNS, TURN_WEIGHTS] if turn_weights else COLUMNS


def _schema(turn_weights: bool) -> pa.Schema:
    return WEIGHTED_SCHEMA if turn_weights else ARROW_SCHEMA


def _where(steps: list[Step], mapping: FactorMapping) -> tuple[str, list]:
    marks = ", ".join(["%s"] * len(steps))
    return f"step_id IN ({marks}) AND mapping_id = %s", [s.pk for s in steps] + [mapping.pk]


def _on_postgres() -> bool:
    return connection.vendor == "postgresql"


def _copy(sql: str, params: list) -> Iterator[bytes]:
    """COPY ... TO STDOUT in blocks of about COPY_BLOCK bytes.

    psycopg hands COPY data over one row at a time; passing a million small pieces on
    (through a generator, Django's streaming response and the server's socket writes)
    cost more than producing them, so rows are joined into blocks first.
    """
    with connection.cursor() as cursor:
        with cursor.connection.cursor() as raw:
            with raw.copy(sql, params) as copy:
                block = bytearray()
                for row in copy:
                    block += row
                    if len(block) >= COPY_BLOCK:
                        yield bytes(block)
                        block.clear()
                if block:
                    yield bytes(block)


def _select(columns_sql: str, steps, mapping) -> tuple[str, list]:
    where, params = _where(steps, mapping)
    table = AdvantageResult._meta.db_table
    return f'SELECT {columns_sql} FROM {table} WHERE {where} ORDER BY step_number, uid, "index"', params


def _orm_rows(steps, mapping, *, turn_weights: bool = False, weights_as_text: bool = False) -> Iterator[tuple]:
    """The rows as tuples in column order; with `weights_as_text` the turn weights as the JSON
    text PostgreSQL prints for jsonb (`{"3": 0.5}`), as CSV and Parquet carry them."""
    rows = (
        AdvantageResult.objects.filter(step__in=steps, mapping=mapping)
        .order_by("step_number", "uid", "index")
        .values_list(*[_ORM[c] for c in _columns(turn_weights)])
        .iterator(chunk_size=CHUNK_ROWS)
    )
    blank_is_null = [COLUMNS.index(c) for c in ("tier", "cheat_source", "dropped", "drop_mode")]
    weights_at = len(COLUMNS) if turn_weights and weights_as_text else None
    for row in rows:
        row = list(row)
        for at in blank_is_null:
            row[at] = row[at] or None
        if weights_at is not None and row[weights_at] is not None:
            row[weights_at] = json.dumps(row[weights_at])
        yield tuple(row)


# Export columns whose text (int4out; bool::text gives true/false) is already their JSON.
_JSON_AS_TEXT = {"step", "index", "rank", "passed", "cheat"}


def _json_object_sql(turn_weights: bool = False) -> str:
    """SQL for one row as the JSON text json_build_object(...)::text prints, byte for byte.

    Same key order and `"key" : value, ` spacing, values through to_json (the same
    escaping, and non-finite floats quoted as json_build_object quotes them), NULL as
    null, in less than half the time (1M rows: 3.0 s instead of 7.1 s, benchmarks/export.py):
    json_build_object works out the type of each of its 38 arguments on every row.
    """
    parts = []
    for i, name in enumerate(_columns(turn_weights)):
        value = f"({_SQL[name]})::text" if name in _JSON_AS_TEXT else f"to_json({_SQL[name]})::text"
        parts.append(f"""'{"{" if i == 0 else ", "}"{name}" : '""")
        parts.append(f"COALESCE({value}, 'null')")
    parts.append("'}'")
    return " || ".join(parts)


def jsonl_stream(steps: list[Step], mapping: FactorMapping, *, turn_weights: bool = False) -> Iterator[bytes]:
    if _on_postgres():
        select, params = _select(_json_object_sql(turn_weights), steps, mapping)
        # CSV with quote/delimiter bytes that JSON text never holds raw: COPY passes each
        # JSON object through untouched, one per line.
        yield from _copy(f"COPY ({select}) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01')", params)
        return
    buffer = []
    columns = _columns(turn_weights)
    for row in _orm_rows(steps, mapping, turn_weights=turn_weights):
        buffer.append(orjson.dumps(dict(zip(columns, row))))
        if len(buffer) >= 2000:
            yield b"\n".join(buffer) + b"\n"
            buffer = []
    if buffer:
        yield b"\n".join(buffer) + b"\n"


# Text cells a spreadsheet would run as a formula (CSV injection) start with one of these;
# such a cell gets a leading single quote. Numbers (a negative advantage) are left alone.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_TEXT_COLUMNS = {"run", "uid", "instance_id", "cheat_source", "baseline", "tier", "mapping", "status", "dropped", "drop_mode"}
# The same test in SQL for the COPY path: chr(9) is a tab, chr(13) a carriage return.
_FORMULA_STARTS_SQL = "'=', '+', '-', '@', chr(9), chr(13)"


def neutralise_cell(value: str) -> str:
    """A text cell as a spreadsheet shows it, never as a formula: `=1+1` becomes `'=1+1`."""
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def _csv_value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return neutralise_cell(value)
    return repr(value) if isinstance(value, float) else str(value)


def _raw_csv_value(value) -> str:
    return value if isinstance(value, str) else _csv_value(value)


def _neutralised_sql(expression: str) -> str:
    return f"CASE WHEN left({expression}, 1) IN ({_FORMULA_STARTS_SQL}) THEN chr(39) || {expression} ELSE {expression} END"


def csv_stream(
    steps: list[Step], mapping: FactorMapping, *, neutralise: bool = True, turn_weights: bool = False
) -> Iterator[bytes]:
    """CSV rows. A text cell that would start a formula gets a leading quote, unless
    `neutralise` is off (only where pyarrow reads the CSV back into Parquet). Turn weights
    are JSON text starting with `{`, never a formula."""
    if _on_postgres():
        yield (",".join(_columns(turn_weights)) + "\n").encode()
        yield from _copy_csv(steps, mapping, neutralise=neutralise, turn_weights=turn_weights)
        return
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_columns(turn_weights))
    cell = _csv_value if neutralise else _raw_csv_value
    for n, row in enumerate(_orm_rows(steps, mapping, turn_weights=turn_weights, weights_as_text=True), start=1):
        writer.writerow([cell(v) for v in row])
        if n % 2000 == 0:
            yield out.getvalue().encode()
            out.seek(0)
            out.truncate()
    yield out.getvalue().encode()


def _copy_csv(steps: list[Step], mapping: FactorMapping, *, neutralise: bool, turn_weights: bool = False) -> Iterator[bytes]:
    """The rows as PostgreSQL's COPY CSV, without a header, in blocks that end at a row's end."""
    # Booleans as true/false (COPY would print t/f), like the Python path; jsonb as its text.
    cols = ", ".join(
        f"{_SQL[c]}::text"
        if c in ("passed", "cheat", TURN_WEIGHTS)
        else _neutralised_sql(_SQL[c])
        if neutralise and c in _TEXT_COLUMNS
        else _SQL[c]
        for c in _columns(turn_weights)
    )
    select, params = _select(cols, steps, mapping)
    return _copy(f"COPY ({select}) TO STDOUT WITH (FORMAT csv)", params)


def parquet_file(steps: list[Step], mapping: FactorMapping, *, use_snapshots: bool = True, turn_weights: bool = False):
    """A temporary file (spills to disk past 64 MB) holding the Parquet export, rewound.

    Steps whose computation is current are copied from the Parquet snapshot stored with
    it (see step_snapshot); any other step, or every step with use_snapshots=False, is
    read from its rows. Snapshots hold the default columns: with `turn_weights` every step
    is read from its rows.
    """
    snapshots = (
        dict(
            StepComputation.objects.filter(step__in=steps, mapping=mapping, stale=False, parquet__isnull=False).values_list(
                "step_id", "parquet"
            )
        )
        if use_snapshots and not turn_weights
        else {}
    )
    spool = tempfile.SpooledTemporaryFile(max_size=64 * 1024 * 1024)
    with pq.ParquetWriter(spool, _schema(turn_weights), compression="zstd") as writer:
        gathered = _Gathered(writer)
        for step in sorted(steps, key=lambda s: s.number):
            blob = snapshots.get(step.pk)
            if blob is not None:
                gathered.add(_read_snapshot(blob))
            else:
                gathered.flush()  # steps stay in order
                _write_step_from_rows(writer, step, mapping, turn_weights=turn_weights)
        gathered.flush()
    spool.seek(0)
    return spool


def _read_snapshot(blob: bytes | memoryview) -> pa.Table:
    """A stored step snapshot as a table in ARROW_SCHEMA. ParquetFile.read, not read_table:
    read_table goes through the datasets layer, about 3 ms a call, which was most of a
    200-step run's export (benchmarks/export.py --steps 200). A step is small: one thread
    reads it. The blob is copied into Arrow's memory first (see _arrow_owned)."""
    table = pq.ParquetFile(pa.BufferReader(_arrow_owned(blob))).read(use_threads=False)
    return table if table.schema.equals(ARROW_SCHEMA) else table.cast(ARROW_SCHEMA)


class _Gathered:
    """Step snapshots held until they fill a row group (ROW_GROUP_ROWS), then written as one:
    a row group per step (4,096 rows at 256 groups of 16) compressed worse and cost more to
    write than the few large ones; memory stays at one row group."""

    def __init__(self, writer: pq.ParquetWriter):
        self.writer = writer
        self.tables: list[pa.Table] = []
        self.rows = 0

    def add(self, table: pa.Table) -> None:
        self.tables.append(table)
        self.rows += table.num_rows
        if self.rows >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.tables:
            self.writer.write_table(pa.concat_tables(self.tables), row_group_size=ROW_GROUP_ROWS)
            self.tables, self.rows = [], 0


def step_snapshot(step: Step, mapping: FactorMapping) -> bytes:
    """The stored rows of one step under one mapping as a Parquet file (zstd)."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, ARROW_SCHEMA, compression="zstd") as writer:
        _write_step_from_rows(writer, step, mapping)
    return sink.getvalue().to_pybytes()


def _write_step_from_rows(writer: pq.ParquetWriter, step: Step, mapping: FactorMapping, *, turn_weights: bool = False) -> None:
    if _on_postgres():
        _write_postgres_parquet(writer, [step], mapping, turn_weights=turn_weights)
        return
    batch: list[tuple] = []
    for row in _orm_rows([step], mapping, turn_weights=turn_weights, weights_as_text=True):
        batch.append(row)
        if len(batch) >= CHUNK_ROWS:
            writer.write_table(_arrow_table(batch, _schema(turn_weights)))
            batch = []
    if batch:
        writer.write_table(_arrow_table(batch, _schema(turn_weights)))


def _write_postgres_parquet(
    writer: pq.ParquetWriter, steps: list[Step], mapping: FactorMapping, *, turn_weights: bool = False
) -> None:
    """COPY's CSV (as csv_stream sends it) parsed by pyarrow block by block.

    Every block `_copy` yields ends at the end of a row (PostgreSQL sends one CopyData
    message per row), so each block is a CSV file of its own; blocks are gathered to
    about PARSE_BLOCK bytes in memory Arrow owns and parsed there. Nothing Arrow reads
    belongs to Python (see _arrow_owned): an earlier version streamed the COPY through a pipe into pyarrow's streaming CSV reader,
    whose read-ahead could drop the last reference to the Python pipe on one of Arrow's
    I/O threads during interpreter shutdown; that destructor needs the GIL, and taking it
    at shutdown ended the thread inside a C++ destructor and aborted the process
    ("terminate called without an active exception", exit status 134, about 1 export in 80).
    """
    read_options = pa_csv.ReadOptions(column_names=_columns(turn_weights))
    convert_options = pa_csv.ConvertOptions(
        column_types=_schema(turn_weights), strings_can_be_null=True, true_values=["true"], false_values=["false"]
    )
    pending: list[pa.Table] = []
    rows = 0
    text = pa.BufferOutputStream()

    def parse() -> None:
        nonlocal rows, pending, text
        # pyarrow-stubs accept a path or a Python file here, though read_csv takes any NativeFile.
        table = pa_csv.read_csv(
            pa.BufferReader(text.getvalue()),  # type: ignore[arg-type]
            read_options=read_options,
            convert_options=convert_options,
        )
        text = pa.BufferOutputStream()
        pending.append(table)
        rows += table.num_rows
        if rows >= ROW_GROUP_ROWS:
            writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)
            pending, rows = [], 0

    for block in _copy_csv(steps, mapping, neutralise=False, turn_weights=turn_weights):  # the values as stored, for pyarrow
        text.write(block)
        if text.tell() >= PARSE_BLOCK:
            parse()
    if text.tell():
        parse()
    if pending:
        writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP_ROWS)


def _arrow_owned(data: bytes | memoryview) -> pa.Buffer:
    """`data` copied into memory Arrow owns. A buffer that wraps a Python object must take
    the GIL when Arrow frees it, and Arrow may free it on one of its own threads after the
    call that used it has returned; at interpreter shutdown that aborts the process."""
    stream = pa.BufferOutputStream()
    stream.write(data)
    return stream.getvalue()


def _arrow_table(rows: list[tuple], schema: pa.Schema = ARROW_SCHEMA) -> pa.Table:
    columns: list[Sequence[Any]] = list(zip(*rows)) if rows else [[] for _ in schema]
    return pa.Table.from_arrays([pa.array(col, type=schema.field(i).type) for i, col in enumerate(columns)], schema=schema)


def step_bytes(step: Step, mapping: FactorMapping, fmt: str, *, turn_weights: bool = False) -> bytes:
    """One step's export in `fmt`, whole (a step is at most a few tens of thousands of rows)."""
    if fmt == "parquet":
        with parquet_file([step], mapping, turn_weights=turn_weights) as spool:
            return spool.read()
    stream = (
        jsonl_stream([step], mapping, turn_weights=turn_weights)
        if fmt == "jsonl"
        else csv_stream([step], mapping, turn_weights=turn_weights)
    )
    return b"".join(stream)
