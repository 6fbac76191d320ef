"""Keeping the search index current: the rows ingest writes, and the PostgreSQL-only parts.

Ingest calls `index_rollouts` in the transaction that stores the rollouts, so a rollout is
searchable exactly when it is stored (a re-import stores nothing new and so indexes nothing;
an extended group indexes its new rollouts). Migration 0015 fills the index for rollouts
stored before it (`backfill`) and, on PostgreSQL, runs POSTGRES_SQL.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import connection

from grading.search.text import search_text

# The tokens the index holds are the text's runs of letters and digits, lower-cased
# ('simple': no stemming, no stop words: code is not prose) — the same cut as
# grading.search.query.tokens, so what the database matches is what the page highlights.
VECTOR_SQL = "to_tsvector('simple'::regconfig, regexp_replace(text, '[^[:alnum:]]+', ' ', 'g'))"

POSTGRES_SQL = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"ALTER TABLE grading_rolloutsearch ADD COLUMN vector tsvector GENERATED ALWAYS AS ({VECTOR_SQL}) STORED",
    "CREATE INDEX rolloutsearch_vector ON grading_rolloutsearch USING gin (vector)",
    "CREATE INDEX rolloutsearch_text_trgm ON grading_rolloutsearch USING gin (text gin_trgm_ops)",
]
POSTGRES_REVERSE_SQL = [
    "DROP INDEX IF EXISTS rolloutsearch_text_trgm",
    "DROP INDEX IF EXISTS rolloutsearch_vector",
    "ALTER TABLE grading_rolloutsearch DROP COLUMN IF EXISTS vector",
]


def has_index(using=None) -> bool:
    """Whether searches are served by an index (PostgreSQL) or by reading the rows (SQLite)."""
    return (using or connection).vendor == "postgresql"


def search_row(model, *, rollout, group, messages, patch: str, tests):
    """One unsaved index row (`model` is RolloutSearch, or its historical model in a migration)."""
    return model(rollout_id=rollout.pk, run_id=group.run_id, step_number=group.step_number, passed=rollout.passed,
                 text=search_text(messages, patch, tests))


def index_rollouts(items: Iterable[tuple]) -> None:
    """Index stored rollouts: `items` are (Rollout row, Group, ParsedRollout) just written."""
    from grading.models import RolloutSearch

    rows = [search_row(RolloutSearch, rollout=row, group=group, messages=parsed.messages, patch=parsed.patch,
                       tests=parsed.tests) for row, group, parsed in items]
    RolloutSearch.objects.bulk_create(rows, batch_size=500)


def backfill(apps, *, batch: int = 500) -> int:
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
        RolloutSearch.objects.bulk_create(rows)
        done += len(rows)
        last = rollouts[-1].pk
