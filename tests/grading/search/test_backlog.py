"""The search backlog yields to ingest (grading.search.index.index_backlog), on PostgreSQL.

One task at a time builds the index: while another holds the indexer's lock, a task leaves
the backlog as it is and the holder takes those rows. While trainers are posting (a rollout
queued in the last few seconds) the indexer waits between batches for (100 - share) / share of
each batch's time; once posts have stopped it runs without waiting. Whatever the pacing,
every waiting rollout ends up indexed exactly once.
"""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.utils import timezone

from grading.models import Rollout, RolloutSearch, SearchBacklog, SearchChunk
from grading.search.index import INDEXER_LOCK, index_backlog, ingest_busy
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.workers import worker_database_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


@pytest.fixture
def waiting(acme, settings):
    """Six rollouts (three groups) stored and queued for the index, none indexed."""
    settings.GAGAR_SEARCH_INDEX = "task"
    ingest_groups(acme, *(small_group(f"g{n}@1", instance_id=f"t-{n}", rewards=(1, 0)) for n in range(3)))
    assert SearchBacklog.objects.count() == Rollout.objects.count() == 6 and not RolloutSearch.objects.exists()


def indexed_once() -> bool:
    rollouts = set(Rollout.objects.values_list("pk", flat=True))
    chunked = set(SearchChunk.objects.values_list("rollout_id", flat=True))
    return set(RolloutSearch.objects.values_list("pk", flat=True)) == rollouts == chunked and not SearchBacklog.objects.exists()


def test_while_another_task_builds_the_index_a_task_leaves_the_backlog_to_it(waiting):
    with psycopg.connect(worker_database_url(), autocommit=True) as other:
        assert other.execute("SELECT pg_try_advisory_lock(%s)", [INDEXER_LOCK]).fetchone() == (True,)
        assert index_backlog(share=100) == 0
        assert SearchBacklog.objects.count() == 6 and not RolloutSearch.objects.exists()
        other.execute("SELECT pg_advisory_unlock(%s)", [INDEXER_LOCK])
    assert index_backlog(share=100, batch=4) == 6
    assert indexed_once()
    # and the lock is free again for the next task
    with psycopg.connect(worker_database_url(), autocommit=True) as other:
        assert other.execute("SELECT pg_try_advisory_lock(%s)", [INDEXER_LOCK]).fetchone() == (True,)


def test_while_posts_arrive_the_indexer_waits_its_share_between_batches(waiting):
    waits: list[float] = []
    assert ingest_busy()
    assert index_backlog(share=25, batch=2, sleep=waits.append) == 6
    assert len(waits) == 2 and all(w > 0 for w in waits)  # after each batch but the last, which emptied the backlog
    assert indexed_once()


def test_once_posts_have_stopped_the_indexer_does_not_wait(waiting):
    SearchBacklog.objects.update(queued_at=timezone.now() - timedelta(minutes=1))
    assert not ingest_busy()
    waits: list[float] = []
    assert index_backlog(share=25, batch=2, sleep=waits.append) == 6
    assert waits == [] and indexed_once()


def test_share_100_never_waits(waiting):
    waits: list[float] = []
    assert index_backlog(share=100, batch=1, sleep=waits.append) == 6
    assert waits == [] and indexed_once()
