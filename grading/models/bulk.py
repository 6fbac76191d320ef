"""Writing many rows at once on PostgreSQL: COPY, and jsonb encoded by orjson.

Ingest stores a step's rollout bodies (megabytes each) and their search rows. COPY hands
them to the server as one stream, with no SQL to build, quote or parse per row: for the
bodies of benchmarks/ingest.py's 170 kB rollouts that was 25% cheaper than bulk_create's
INSERTs, whose every value psycopg quotes in Python under Django's client-side binding.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

import orjson
from psycopg.types.json import Jsonb


def jsonb_dumps(value) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # what orjson refuses (ints over 64 bits, lone surrogates) gets the stdlib's answer
        return json.dumps(value).encode()


def jsonb(value) -> Jsonb:
    """`value` as a jsonb parameter or COPY field, encoded by orjson."""
    return Jsonb(value, dumps=jsonb_dumps)


def copy_rows(connection, table: str, columns: Sequence[str], rows: Iterable[tuple]) -> None:
    """COPY `rows` (tuples in `columns`' order) into `table` in the caller's transaction.

    PostgreSQL only. A value the server refuses raises Django's DataError or IntegrityError,
    as an INSERT would, so callers handle both the same way (ingest replays the batch line by line).
    """
    sql = f"COPY {table} ({', '.join(columns)}) FROM STDIN"
    with connection.wrap_database_errors, connection.cursor() as cursor, cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)
