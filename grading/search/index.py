"""Keeping the search index current: the rows ingest writes, and the PostgreSQL-only parts.

Ingest calls `index_rollouts` in the transaction that stores the rollouts, so a rollout is
searchable exactly when it is stored (a re-import stores nothing new and so indexes nothing;
an extended group indexes its new rollouts). Migration 0015 runs POSTGRES_SQL on PostgreSQL
and fills the index for rollouts stored before it (`backfill`).

On PostgreSQL each row also carries `vector`, a tsvector of its text's tokens built in
Python (grading.search.text.vector_literal: the same tokens the query parser and the
highlighter use, so the database and the page agree on what matches) and written with the
row by COPY; a GIN index on it serves words, phrases, prefixes and the literal mode's
pre-filter. Building the vector in Python, rather than by to_tsvector over a
regexp_replace in a generated column, and leaving out a trigram index, made indexing
about three times cheaper (benchmarks/search.py and docs/benchmarks.md have the figures).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from grading.models.bulk import copy_rows
from grading.search.text import search_text, vector_literal

POSTGRES_SQL = [
    "ALTER TABLE grading_rolloutsearch ADD COLUMN vector tsvector NOT NULL DEFAULT ''",
    # A pending list of 16 MB (default 4 MB): new rows' entries are merged into the index in
    # larger, rarer batches, which made indexing 2.4x faster (benchmarks/search.py).
    "CREATE INDEX rolloutsearch_vector ON grading_rolloutsearch USING gin (vector) WITH (gin_pending_list_limit = 16384)",
]
POSTGRES_REVERSE_SQL = [
    "DROP INDEX IF EXISTS rolloutsearch_vector",
    "ALTER TABLE grading_rolloutsearch DROP COLUMN IF EXISTS vector",
]
COLUMNS = ("rollout_id", "run_id", "step_number", "passed", "text", "vector")


def has_index(using=None) -> bool:
    """Whether searches are served by an index (PostgreSQL) or by reading the rows (SQLite)."""
    return (using or connection).vendor == "postgresql"


def search_row(model, *, rollout, group, messages, patch: str, tests):
    """One unsaved index row (`model` is RolloutSearch, or its historical model in a migration)."""
    return model(rollout_id=rollout.pk, run_id=group.run_id, step_number=group.step_number, passed=rollout.passed,
                 text=search_text(messages, patch, tests))


def write_rows(model, rows: list, using=None) -> None:
    """Store index rows: COPY with their vectors on PostgreSQL (in the caller's transaction),
    bulk_create elsewhere."""
    conn = using or connection
    if not has_index(conn):
        model.objects.bulk_create(rows, batch_size=500)
        return
    copy_rows(conn, model._meta.db_table, COLUMNS,
              ((row.rollout_id, row.run_id, row.step_number, row.passed, row.text, vector_literal(row.text)) for row in rows))


def index_rollouts(items: Iterable[tuple]) -> None:
    """Index stored rollouts: `items` are (Rollout row, Group, ParsedRollout) just written."""
    from grading.models import RolloutSearch

    write_rows(RolloutSearch, [search_row(RolloutSearch, rollout=row, group=group, messages=parsed.messages,
                                          patch=parsed.patch, tests=parsed.tests) for row, group, parsed in items])


def backfill(apps, *, batch: int = 500, using=None) -> int:
    """Index every rollout that has no row yet, `batch` at a time (a data migration's body). The count indexed."""
    Rollout = apps.get_model("grading", "Rollout")
    RolloutContent = apps.get_model("grading", "RolloutContent")
    RolloutSearch = apps.get_model("grading", "RolloutSearch")
    done, last = 0, 0
    while True:
        rollouts = list(Rollout.objects.filter(pk__gt=last, search__isnull=True).select_related("group").order_by("pk")[:batch])
        if not rollouts:
            return done
        contents = {c.rollout_id: c for c in RolloutContent.objects.filter(rollout_id__in=[r.pk for r in rollouts])
                    .only("rollout_id", "messages", "patch", "tests")}
        rows = []
        for rollout in rollouts:
            content = contents.get(rollout.pk)
            rows.append(search_row(RolloutSearch, rollout=rollout, group=rollout.group,
                                   messages=content.messages if content else [], patch=content.patch if content else "",
                                   tests=content.tests if content else {}))
        write_rows(RolloutSearch, rows, using=using)
        done += len(rows)
        last = rollouts[-1].pk
