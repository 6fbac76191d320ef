"""How PostgreSQL stores the bulky columns: rollout bodies and highlighted patches are
compressed with lz4 (migration 0036), which stores a post about twice as fast as pglz; a
stored body reads back whole."""

from __future__ import annotations

import pytest
from django.db import connection

from grading.models import RolloutContent
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

BULKY = {
    "grading_rolloutcontent": {"messages", "patch", "tests", "test_log", "metadata"},
    "grading_patchhighlight": {"hunks"},
}


def compression(table: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0",
            [table],
        )
        return dict(cursor.fetchall())


def test_bulky_columns_are_lz4_and_a_long_body_reads_back_whole(acme):
    for table, columns in BULKY.items():
        assert {c: m for c, m in compression(table).items() if c in columns} == dict.fromkeys(columns, "l"), table
    group = small_group("long@1", rewards=(1,))
    observation = "".join(f"line {n}: {'ab' * (n % 37)}\n" for n in range(20_000))  # ~900 kB, TOASTed
    group["rollouts"][0]["messages"].append({"role": "user", "content": observation})
    ingest_groups(acme, group)
    content = RolloutContent.objects.get()
    assert content.messages[-1]["content"] == observation
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(messages) FROM grading_rolloutcontent")
        assert cursor.fetchone() == ("lz4",)
