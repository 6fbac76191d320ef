"""What a trainer takes: a step's export at an inputs version, kept byte for byte (services).

`take_step` computes the step if needed, and stores the bytes served for its inputs
version the first time they are asked for; `taken_step` gives them back later, so a
trainer (or anyone auditing a training run) can fetch exactly the rows a policy update
used, even after a late verdict changed the current numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from grading.method import export
from grading.method.services.computation import refresh_stale_step
from grading.models import FactorMapping, Step, StepExport


@dataclass(frozen=True)
class Taken:
    body: bytes
    inputs_version: int
    first_served_final: bool


def take_step(*, step: Step, mapping: FactorMapping, fmt: str, final: bool, turn_weights: bool = False) -> Taken:
    """The step's current rows under `mapping` in `fmt` (with the turn_weights column when
    asked), stored under their inputs version."""
    computation = refresh_stale_step(step=step, mapping=mapping)
    version = computation.inputs_version
    kind = {"step": step, "mapping": mapping, "inputs_version": version, "format": fmt, "turn_weights": turn_weights}
    stored = _stored(kind)
    if stored is not None:
        return Taken(stored[0], version, stored[1])
    body = export.step_bytes(step, mapping, fmt, turn_weights=turn_weights)
    try:
        with transaction.atomic():
            _store(kind, final=final, body=body)
    except IntegrityError:  # another request stored this version first: serve what it stored
        stored = _stored(kind)
        assert stored is not None  # it is there: it refused ours
        return Taken(stored[0], version, stored[1])
    return Taken(body, version, final)


def taken_step(*, step: Step, mapping: FactorMapping, fmt: str, inputs_version: int, turn_weights: bool = False) -> Taken | None:
    """The bytes served earlier for this inputs version, or None if that version was never served."""
    kind = {"step": step, "mapping": mapping, "inputs_version": inputs_version, "format": fmt, "turn_weights": turn_weights}
    stored = _stored(kind)
    return Taken(stored[0], inputs_version, stored[1]) if stored else None


# A step's body is a few MB (25,088 rows: 10 MB). Django's psycopg cursors bind parameters on
# the client and read results as text, so a bytea goes both ways as hex: storing one built a
# query of twice its size, reading one took twice its size in hex, then the bytes, then their
# copy (a web worker's peak grew by ~6x the body, benchmarks/web_memory.py). On PostgreSQL the
# body is sent and read in binary instead: once its size on the way out, twice on the way in.
_COLUMNS = ("step_id", "mapping_id", "inputs_version", "format", "turn_weights")


def _key(kind: dict) -> list:
    return [kind["step"].pk, kind["mapping"].pk, kind["inputs_version"], kind["format"], kind["turn_weights"]]


def _binary_cursor():
    """A Django cursor (counted, logged, errors wrapped, execute wrappers applied) over a psycopg
    cursor that binds on the server and reads results in binary, whatever Django's cursor_factory."""
    connection.ensure_connection()
    raw = psycopg.Cursor(connection.connection)
    raw.format = psycopg.pq.Format.BINARY
    return connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)


def _stored(kind: dict) -> tuple[bytes, bool] | None:
    """(body, final) of the stored export of `kind`, or None; one query."""
    if connection.vendor != "postgresql":
        row = StepExport.objects.filter(**kind).values_list("body", "final").first()
        return (bytes(row[0]), row[1]) if row else None
    where = " AND ".join(f"{c} = %s" for c in _COLUMNS)
    with _binary_cursor() as cursor:
        cursor.execute(f"SELECT body, final FROM {StepExport._meta.db_table} WHERE {where}", _key(kind))
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def _store(kind: dict, *, final: bool, body: bytes) -> None:
    if connection.vendor != "postgresql":
        StepExport.objects.create(**kind, final=final, body=body)
        return
    columns = ", ".join([*_COLUMNS, "final", "body", "created_at"])
    with _binary_cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {StepExport._meta.db_table} ({columns}) VALUES (%s, %s, %s, %s, %s, %s, %b, %s)",
            [*_key(kind), final, body, timezone.now()],
        )
