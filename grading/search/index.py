"""Keeping the search index current: the rows written for each stored rollout, when, and
the PostgreSQL- and SQLite-only parts.

A rollout is indexed as one RolloutSearch row (its scope fields; on PostgreSQL the tsvector
of its tokens) and its SearchChunk rows (every field, whole: grading.search.text.chunks).
When: `index_or_queue`, called by ingest in the transaction that stores the rollouts, either
indexes them there ("inline": searchable the moment they are stored) or records them in
SearchBacklog and queues `index_backlog` for a worker once the transaction commits ("task":
trigram indexing costs several times the COPY of the bodies, benchmarks/search.py). The
setting GAGAR_SEARCH_INDEX chooses; unset, "inline" when Celery runs tasks eagerly.

The backlog yields to ingest. On PostgreSQL one task at a time builds the index (an advisory
lock; the others leave the backlog to it): writers of one GIN index contend with each other,
and several at once took both of a small database host's cores from the trainers posting. And
while posts keep arriving (a rollout queued in the last INGEST_QUIET_S seconds), the indexer
spends at most GAGAR_SEARCH_INDEX_SHARE percent of its time indexing and waits out the rest,
as autovacuum's cost delay does; between posts it runs flat out. Ingest is on the training
loop's path, the index only on a reviewer's; a search says how many of its rollouts still wait.

PostgreSQL: `vector` and its GIN index serve words and prefixes; a pg_trgm GIN index on the
chunks' text serves literal substrings (LIKE) and phrases (a case-insensitive regex); rows
are written by COPY. SQLite: an FTS5 trigram table over the chunks, kept by triggers, serves
the same by LIKE; rows by bulk_create.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from grading.models import Rollout, RolloutContent, RolloutSearch, SearchBacklog, SearchChunk
from grading.models.bulk import copy_rows
from grading.queueing import queue_on_commit
from grading.search.text import chunks, fields, lexemes

POSTGRES_SQL = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    # lz4, where the server has it: a candidate chunk is decompressed to check it, and lz4 does
    # that several times faster than the default pglz (benchmarks/search.py).
    "DO $$ BEGIN ALTER TABLE grading_searchchunk ALTER COLUMN text SET COMPRESSION lz4; "
    "EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL; END $$",
    # A pending list of 16 MB (default 4 MB): new entries are merged into the index in larger,
    # rarer batches (benchmarks/search.py).
    "CREATE INDEX searchchunk_trgm ON grading_searchchunk USING gin (text gin_trgm_ops) WITH (gin_pending_list_limit = 16384)",
]
POSTGRES_REVERSE_SQL = ["DROP INDEX IF EXISTS searchchunk_trgm"]
SQLITE_SQL = [
    "CREATE VIRTUAL TABLE grading_searchchunk_fts USING fts5(text, content='grading_searchchunk', content_rowid='id', "
    "tokenize='trigram case_sensitive 0')",
    "CREATE TRIGGER grading_searchchunk_fts_insert AFTER INSERT ON grading_searchchunk BEGIN "
    "INSERT INTO grading_searchchunk_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER grading_searchchunk_fts_delete AFTER DELETE ON grading_searchchunk BEGIN "
    "INSERT INTO grading_searchchunk_fts(grading_searchchunk_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER grading_searchchunk_fts_update AFTER UPDATE ON grading_searchchunk BEGIN "
    "INSERT INTO grading_searchchunk_fts(grading_searchchunk_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO grading_searchchunk_fts(rowid, text) VALUES (new.id, new.text); END",
]
SQLITE_REVERSE_SQL = [
    "DROP TRIGGER IF EXISTS grading_searchchunk_fts_insert",
    "DROP TRIGGER IF EXISTS grading_searchchunk_fts_delete",
    "DROP TRIGGER IF EXISTS grading_searchchunk_fts_update",
    "DROP TABLE IF EXISTS grading_searchchunk_fts",
]
FTS_TABLE = "grading_searchchunk_fts"
BATCH = 200  # rollouts a task indexes per transaction
INDEXER_LOCK = 0x6761676172_5331  # pg advisory lock key held by the one task building the index
INGEST_QUIET_S = 5.0  # no rollout queued for this long: ingest is idle and the index runs flat out


def has_index(using=None) -> bool:
    """Whether the database has PostgreSQL's indexes (words by tsvector); SQLite has its
    trigram table for literals but reads rows for words."""
    return (using or connection).vendor == "postgresql"


def indexes_inline() -> bool:
    mode = settings.GAGAR_SEARCH_INDEX
    if not mode:
        return bool(current_app.conf.task_always_eager)
    return mode == "inline"


def write_index(apps_models, items: Iterable[tuple], using=None) -> int:
    """Index `items`, (rollout id, run id, step number, passed, messages, patch, tests), with
    `apps_models` = (RolloutSearch, SearchChunk) or their historical models. The count."""
    RolloutSearch, SearchChunk = apps_models
    conn = using or connection
    search_rows: list[tuple[Any, ...]] = []
    chunk_rows: list[tuple[Any, ...]] = []
    for rollout_id, run_id, step, passed, messages, patch, tests in items:
        texts = list(fields(messages, patch, tests))
        search_rows.append((rollout_id, run_id, step, passed, lexemes(texts)))
        chunk_rows.extend((rollout_id, seq, text) for seq, text in enumerate(chunks(texts)))
    if not search_rows:
        return 0
    if has_index(conn):
        copy_rows(conn, SearchChunk._meta.db_table, ("rollout_id", "seq", "text"), chunk_rows)
        copy_rows(conn, RolloutSearch._meta.db_table, ("rollout_id", "run_id", "step_number", "passed", "vector"), search_rows)
    else:
        SearchChunk.objects.using(conn.alias).bulk_create(
            [SearchChunk(rollout_id=r, seq=s, text=t) for r, s, t in chunk_rows], batch_size=200
        )
        RolloutSearch.objects.using(conn.alias).bulk_create(
            [RolloutSearch(rollout_id=r, run_id=run, step_number=step, passed=p) for r, run, step, p, _ in search_rows],
            batch_size=500,
        )
    return len(search_rows)


def index_or_queue(items: list[tuple]) -> None:
    """Ingest's call, in its transaction: `items` are (Rollout row, Group, ParsedRollout) just
    written. Indexed now, or queued for `index_backlog` after the commit (module docstring)."""
    if not items:
        return
    if indexes_inline():
        write_index(
            (RolloutSearch, SearchChunk),
            (
                (row.pk, group.run_id, group.step_number, row.passed, parsed.messages, parsed.patch, parsed.tests)
                for row, group, parsed in items
            ),
        )
        return
    SearchBacklog.objects.bulk_create(
        [SearchBacklog(rollout_id=row.pk, run_id=group.run_id) for row, group, _ in items], batch_size=1000
    )
    queue_on_commit("grading.search_index_backlog", robust=True)


def index_backlog(
    *, batch: int = BATCH, limit: int | None = None, share: int | None = None, sleep: Callable[[float], None] = time.sleep
) -> int:
    """Index waiting rollouts, `batch` per transaction, until none waits (or `limit` are done):
    on PostgreSQL only while holding the indexer's lock, paced to `share` percent of the time
    while ingest is busy (module docstring; default GAGAR_SEARCH_INDEX_SHARE). A task that
    finds the lock held returns 0 at once: the holder takes its rows. The count indexed."""
    share = settings.GAGAR_SEARCH_INDEX_SHARE if share is None else share
    if not has_index():  # SQLite: one process, nothing to share
        return _drain(batch=batch, limit=limit, share=100, sleep=sleep)
    done = 0
    while limit is None or done < limit:
        if not _try_lock():
            return done
        try:
            done += _drain(batch=batch, limit=None if limit is None else limit - done, share=share, sleep=sleep)
        finally:
            _unlock()
        # Rows whose own task found the lock held while it was being released are this task's.
        if not SearchBacklog.objects.exists():
            return done
    return done


def _try_lock() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [INDEXER_LOCK])
        return bool(cursor.fetchone()[0])


def _unlock() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_unlock(%s)", [INDEXER_LOCK])


def _drain(*, batch: int, limit: int | None, share: int, sleep: Callable[[float], None]) -> int:
    done = 0
    while limit is None or done < limit:
        started = time.monotonic()
        with transaction.atomic():
            waiting = list(
                SearchBacklog.objects.select_for_update(skip_locked=True)
                .order_by("pk")
                .values_list("rollout_id", flat=True)[: batch if limit is None else min(batch, limit - done)]
            )
            if not waiting:
                return done
            fresh = set(waiting) - set(RolloutSearch.objects.filter(pk__in=waiting).values_list("pk", flat=True))
            rollouts = (
                Rollout.objects.filter(pk__in=fresh)
                .select_related("group")
                .only("pk", "passed", "group__run_id", "group__step_number")
            )
            done += write_index((RolloutSearch, SearchChunk), _items(RolloutContent, list(rollouts)))
            SearchBacklog.objects.filter(pk__in=waiting).delete()
        if share < 100 and ingest_busy():
            sleep((time.monotonic() - started) * (100 - share) / share)
    return done


def ingest_busy() -> bool:
    """Whether trainers are posting: a rollout still waiting was queued in the last INGEST_QUIET_S seconds."""
    return SearchBacklog.objects.filter(queued_at__gte=timezone.now() - timedelta(seconds=INGEST_QUIET_S)).exists()


def _items(RolloutContent, rollouts: list) -> list[tuple]:
    """`write_index`'s items for stored `rollouts` (with their group), their bodies read in one query."""
    contents = {
        c.rollout_id: c
        for c in RolloutContent.objects.filter(rollout_id__in=[r.pk for r in rollouts]).only(
            "rollout_id", "messages", "patch", "tests"
        )
    }
    items = []
    for r in rollouts:
        c = contents.get(r.pk)
        items.append(
            (
                r.pk,
                r.group.run_id,
                r.group.step_number,
                r.passed,
                c.messages if c else [],
                c.patch if c else "",
                c.tests if c else {},
            )
        )
    return items


def backfill(apps, *, batch: int = 500, using=None) -> int:
    """Index every rollout that has no row yet, `batch` at a time (a data migration's body). The count indexed."""
    Rollout = apps.get_model("grading", "Rollout")
    RolloutContent = apps.get_model("grading", "RolloutContent")
    models = (apps.get_model("grading", "RolloutSearch"), apps.get_model("grading", "SearchChunk"))
    done, last = 0, 0
    while True:
        rollouts = list(Rollout.objects.filter(pk__gt=last, search__isnull=True).select_related("group").order_by("pk")[:batch])
        if not rollouts:
            return done
        items = _items(RolloutContent, rollouts)
        # Chunks left by an index row deleted on its own are rewritten with it.
        models[1].objects.using(using.alias if using else "default").filter(rollout_id__in=[r.pk for r in rollouts]).delete()
        done += write_index(models, items, using=using)
        last = rollouts[-1].pk
