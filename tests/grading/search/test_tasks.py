"""The search index built by a REAL Celery worker (GAGAR_SEARCH_INDEX=task), on PostgreSQL and Redis.

A post of real-length rollouts is stored and answered without indexing them; until a worker
has indexed them the search says how many are pending and does not find them; the worker
(a subprocess, --pool=solo, on its own Redis database and queue) indexes them from the
backlog, and the same search then finds them, exactly. Runs where DATABASE_URL and
CELERY_BROKER_URL are both set (CI); skipped elsewhere, saying why.
"""

from __future__ import annotations

import time

import pytest

from grading.models import Rollout, RolloutSearch, SearchBacklog
from grading.search.text import fields
from tests.helpers.groups import jsonl
from tests.helpers.real_groups import load_real_long_groups
from tests.helpers.workers import worker_on_own_queue

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

BROKER = "redis://127.0.0.1:6379/13"


@pytest.fixture
def worker(tmp_path):
    with worker_on_own_queue("search", tmp_path, BROKER) as w:
        yield w


def search(client, token, q):
    r = client.get("/api/v1/search/", {"project": "acme", "q": q, "mode": "literal"}, HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 200, r.content
    return r.json()


@pytest.mark.slow
def test_a_post_is_searchable_once_a_real_worker_has_indexed_it(client, alice_token, worker, settings, monkeypatch):
    import grading.search.tasks
    from gagar_web.celery import app as current_app

    settings.GAGAR_SEARCH_INDEX = "task"
    current_app.conf.task_always_eager = False  # tests/conftest.py makes tasks eager (and resets it after)
    task = grading.search.tasks.index_backlog_task
    sent = []
    real_delay = task.delay

    def to_test_broker():  # ingest queues on commit; here it goes to the worker's own broker and queue
        with current_app.connection_for_write(BROKER) as conn:
            sent.append(task.apply_async(connection=conn, queue=worker["queue"]))

    groups = load_real_long_groups(size=4)[:1]
    # a command rollout 2 ran late in its trajectory
    command = [m["action"] for m in groups[0]["rollouts"][2]["messages"] if 20 <= len(m.get("action") or "") <= 300][-1]
    # held back until the first search has seen the backlog: the worker may not race it
    monkeypatch.setattr(task, "delay", lambda: sent.append(None))
    r = client.post(
        "/api/v1/groups/?project=acme",
        jsonl(*groups),
        content_type="application/x-ndjson",
        HTTP_AUTHORIZATION=f"Token {alice_token}",
    )
    assert r.status_code in (200, 201), r.content
    n = Rollout.objects.count()
    assert n == len(groups[0]["rollouts"]) and SearchBacklog.objects.count() == n and RolloutSearch.objects.count() == 0
    assert sent == [None]  # the post asked for the worker once, after its commit

    before = search(client, alice_token, command)
    assert (before["indexed"], before["pending"], before["count"]) == (False, n, 0)

    monkeypatch.setattr(task, "delay", real_delay)
    to_test_broker()
    deadline = time.monotonic() + 120
    while SearchBacklog.objects.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not SearchBacklog.objects.exists(), worker["log"].read_text()[-3000:]
    assert RolloutSearch.objects.count() == n

    after = search(client, alice_token, command)
    holding = sorted(
        r.index
        for r in Rollout.objects.select_related("content")
        if any(command in text for text in fields(r.content.messages, r.content.patch, r.content.tests))
    )
    assert (after["indexed"], after["pending"]) == (True, 0)
    assert sorted(r["index"] for r in after["results"]) == holding and 2 in holding
