"""Parquet from PostgreSQL without text: the numbers in binary, decoded by NumPy.

Text is what made the CSV route slow: PostgreSQL spends most of a CSV COPY printing
float8 in shortest round-trip form, and pyarrow then parses it back. Here each step is
read in three statements:

1. the step's constants (run, step, baseline, mapping are the same on every row of a
   step computation);
2. its groups in export order with their row counts (uid and instance_id repeat on
   every rollout of a group, so they become dictionary columns);
3. one row holding every per-rollout column as an array in PostgreSQL's binary form
   (array_send), NULLs replaced by sentinels in SQL, so each column decodes with one
   np.frombuffer and no Python loop over rows.

Rows come out in the order of the other formats (step number, uid, index). Anything
this path does not expect (a status, tier or cheat source outside the model's choices,
a step whose rows disagree on a constant) returns None and the caller takes the CSV path.
"""

from __future__ import annotations

import struct

import numpy as np
import psycopg
import pyarrow as pa
from django.db import connection, transaction

from grading.models import AdvantageResult, CheatDecision, FactorMapping, Step

TIERS = ["T1", "T2", "T3"]
STATUSES = ["graded", "fallback", "filtered"]
CHEAT_SOURCES = list(CheatDecision.Source.values)


def _code(column: str, values: list[str], *, empty_is_null: bool) -> str:
    cases = " ".join(f"WHEN '{v}' THEN {i}" for i, v in enumerate(values))  # values are our own constants
    empty = "WHEN '' THEN -1 " if empty_is_null else ""
    return f"(CASE {column} {empty}{cases} ELSE -2 END)::int2"


# (name, SQL, big-endian dtype). Sentinels: NaN reward, -1 passed/rank/codes mean NULL.
FIELDS = [
    ("index", '"index"', ">i4"),
    ("reward", "COALESCE(reward, 'NaN'::float8)", ">f8"),
    ("passed", "COALESCE(passed::int4, -1)::int2", ">i2"),
    ("cheat", "cheat::int4::int2", ">i2"),
    ("cheat_source", _code("cheat_source", CHEAT_SOURCES, empty_is_null=True), ">i2"),
    ("advantage", "advantage", ">f8"),
    ("tier", _code("tier", TIERS, empty_is_null=True), ">i2"),
    ("rank", 'COALESCE("rank", -1)', ">i4"),
    ("factor", "factor", ">f8"),
    ("lambda", '"lambda"', ">f8"),
    ("redistributed_advantage", "redistributed_advantage", ">f8"),
    ("discount_only_advantage", "discount_only_advantage", ">f8"),
    ("status", _code("status", STATUSES, empty_is_null=False), ">i2"),
]
def _dictionary(codes: np.ndarray, values: list[str]) -> pa.Array:
    indices = pa.array(codes.astype(np.int32), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, pa.array(values, pa.string())).cast(pa.string())


def _column(value: bytes | None, dtype: str, n: int) -> np.ndarray | None:
    """Decode array_send() of a 1-D array without NULLs: a 20-byte header, then (int32 length, value)."""
    if value is None:
        return np.empty(0, dtype=dtype) if n == 0 else None
    ndim, has_null = struct.unpack(">ii", value[:8])
    (length,) = struct.unpack(">i", value[12:16])
    element = np.dtype([("len", ">i4"), ("v", dtype)])
    if ndim != 1 or has_null or length != n or len(value) - 20 != n * element.itemsize:
        return None
    return np.frombuffer(value, dtype=element, offset=20, count=n)["v"]


CONSTANTS = ("run_name", "step_number", "baseline", "mapping_label")


def _fetch_step(table: str, where: str, params: list):
    """The whole step in one statement and one result row, or None if anything is unexpected.

    Every per-rollout column comes as one array in PostgreSQL's binary form (array_send):
    a million rows arrive as a few dozen values instead of a million COPY messages, each
    of which costs psycopg a Python-level turn of its wait loop. One sort (the window)
    gives the export order; `rn` carries it, so the result does not depend on the order
    in which the aggregates happen to see rows. Groups are where uid changes; the
    per-step constants come as MIN/MAX pairs that must agree.
    """
    inner = ", ".join(f"{sql} AS {name}" for name, sql, _ in FIELDS)
    outer = ", ".join(f"array_send(array_agg({name}))" for name, _, _ in FIELDS)
    constants = ", ".join(f"MIN({c}), MAX({c})" for c in CONSTANTS)
    sql = (
        f"SELECT COUNT(*), {constants}, "
        "array_agg(uid ORDER BY rn) FILTER (WHERE first_of_group), "
        "array_agg(instance_id ORDER BY rn) FILTER (WHERE first_of_group), "
        "COUNT(*) FILTER (WHERE first_of_pair) - COUNT(*) FILTER (WHERE first_of_group), "
        f"array_send(array_agg(rn)), array_send(array_agg(first_of_group::int4::int2)), {outer} FROM ("
        f"  SELECT row_number() OVER w AS rn, uid IS DISTINCT FROM lag(uid) OVER w AS first_of_group,"
        f"  (uid, instance_id) IS DISTINCT FROM lag((uid, instance_id)) OVER w AS first_of_pair,"
        f"  uid, instance_id, {', '.join(CONSTANTS)}, {inner}"
        f'  FROM {table} WHERE {where} WINDOW w AS (ORDER BY uid, "index")'
        ") AS ordered"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        # One in-memory sort of the step instead of an external merge on disk.
        cursor.execute("SET LOCAL work_mem = '128MB'")
        # Django's PostgreSQL cursors bind on the client, which cannot ask for binary results.
        with psycopg.Cursor(cursor.connection) as raw:
            raw.execute(sql, params, binary=True)
            packed = list(raw.fetchone())
    n = int(packed.pop(0))
    pairs = [(packed.pop(0), packed.pop(0)) for _ in CONSTANTS]
    uids, instance_ids, split_groups = packed.pop(0), packed.pop(0), packed.pop(0)
    if n == 0:
        return 0, None, None, None, None
    if any(low != high for low, high in pairs) or split_groups:
        return None  # rows of one step computation that disagree, or a uid with two tasks
    order = _column(packed.pop(0), ">i8", n)
    first = _column(packed.pop(0), ">i2", n)
    values = [_column(v, dtype, n) for v, (_, _, dtype) in zip(packed, FIELDS)]
    if order is None or first is None or any(v is None for v in values):
        return None
    columns = {name: v for (name, _, _), v in zip(FIELDS, values)}
    columns["first_of_group"] = first
    if not (np.diff(order) == 1).all():
        position = np.argsort(order)
        columns = {name: v[position] for name, v in columns.items()}
    return n, [low for low, _ in pairs], uids, instance_ids, columns


def step_table(step: Step, mapping: FactorMapping, schema: pa.Schema) -> pa.Table | None:
    """One step's export rows as an Arrow table with `schema`, or None to use the CSV path."""
    fetched = _fetch_step(AdvantageResult._meta.db_table, "step_id = %s AND mapping_id = %s", [step.pk, mapping.pk])
    if fetched is None:
        return None
    n, constants, uids, instance_ids, rows = fetched
    if n == 0:
        return schema.empty_table()
    for name in ("tier", "status", "cheat_source"):
        if (rows[name] < -1).any():
            return None  # a value outside the model's choices
    run_name, step_number, baseline, mapping_label = constants
    group_of_row = np.cumsum(rows["first_of_group"], dtype=np.int64) - 1
    if len(uids) != group_of_row[-1] + 1:
        return None
    constant = np.zeros(n, dtype=np.int32)
    reward = rows["reward"].astype(np.float64)
    passed, rank = rows["passed"], rows["rank"]
    columns = {
        "run": _dictionary(constant, [run_name]),
        "step": pa.array(np.full(n, step_number, dtype=np.int64)),
        "uid": _dictionary(group_of_row, uids),
        "index": pa.array(rows["index"].astype(np.int64)),
        "instance_id": _dictionary(group_of_row, instance_ids),
        "reward": pa.array(reward, mask=np.isnan(reward)),
        "passed": pa.array(passed == 1, mask=passed < 0),
        "cheat": pa.array(rows["cheat"] == 1),
        "cheat_source": _dictionary(rows["cheat_source"], CHEAT_SOURCES),
        "baseline": _dictionary(constant, [baseline]),
        "advantage": pa.array(rows["advantage"].astype(np.float64)),
        "tier": _dictionary(rows["tier"], TIERS),
        "rank": pa.array(rank.astype(np.int64), mask=rank < 0),
        "factor": pa.array(rows["factor"].astype(np.float64)),
        "lambda": pa.array(rows["lambda"].astype(np.float64)),
        "redistributed_advantage": pa.array(rows["redistributed_advantage"].astype(np.float64)),
        "discount_only_advantage": pa.array(rows["discount_only_advantage"].astype(np.float64)),
        "mapping": _dictionary(constant, [mapping_label]),
        "status": _dictionary(rows["status"], STATUSES),
    }
    return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)
