"""Load and faults against the real PostgreSQL and Redis (`make test-load`; CI runs it).

- The same step POSTed 3 times at once over HTTP to a live server (each request in its
  own server thread with its own database connection): every group stored exactly once,
  the three reports add up, nothing refused.
- The database connection dies mid-ingest (pg_terminate_backend from another connection,
  which is what a PostgreSQL restart looks like to the app): the client gets a 503 that
  says what was stored and to resend, not a 500; the resend succeeds and nothing is
  duplicated or lost.

The grader worker killed with SIGKILL mid-grade is tests/grading/grader/test_tasks.py.
Skips cleanly without DATABASE_URL / CELERY_BROKER_URL.
"""

from __future__ import annotations

import http.client
import os
import threading
import time
from urllib.parse import urlparse

import orjson
import pytest
from django.db import connection

from grading.ingest.service import BATCH_LINES
from grading.models import Group, Rollout, RolloutContent
from tests.helpers.groups import small_group

pytestmark = [
    pytest.mark.load,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not (os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("CELERY_BROKER_URL")),
        reason="needs DATABASE_URL (PostgreSQL) and CELERY_BROKER_URL (Redis), as in CI",
    ),
    pytest.mark.django_db(transaction=True),
]

N_GROUPS = 3 * BATCH_LINES  # three batches per request


def step_body(n: int = N_GROUPS, step: int = 7, *, log_bytes: int = 0) -> bytes:
    def group(i: int) -> dict:
        g = small_group(f"t-{i}@{step}", step=step, instance_id=f"t-{i}", rewards=(1, 0, 1, 0))
        if log_bytes:
            g["rollouts"][0]["test_log"] = "x" * log_bytes
        return g

    return b"".join(orjson.dumps(group(i)) + b"\n" for i in range(n))


def post(url: str, token: str, chunks, *, pause_after: int | None = None, pause: threading.Event | None = None):
    """POST the chunks with a Content-Length, optionally waiting on `pause` after chunk `pause_after`."""
    chunks = list(chunks)
    parsed = urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=120)
    conn.putrequest("POST", "/api/v1/groups/?project=acme")
    conn.putheader("Authorization", f"Token {token}")
    conn.putheader("Content-Type", "application/x-ndjson")
    conn.putheader("Content-Length", str(sum(map(len, chunks))))
    conn.endheaders()
    try:
        for i, chunk in enumerate(chunks):
            conn.send(chunk)
            if pause is not None and i == pause_after:
                assert pause.wait(60), "the test never released the request"
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered before reading everything (it stops at a dead database)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), orjson.loads(data)


def test_same_step_three_times_at_once_stores_each_group_once(live_server, alice_token):
    body = step_body()
    results: list = [None] * 3
    start = threading.Barrier(3)

    def send(k: int) -> None:
        start.wait()
        results[k] = post(live_server.url, alice_token, [body])

    threads = [threading.Thread(target=send, args=(k,)) for k in range(3)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    elapsed = time.monotonic() - t0
    statuses = [r[0] for r in results]
    reports = [r[2] for r in results]
    assert statuses == [200, 200, 200], reports
    assert sum(r["groups"]["created"] for r in reports) == N_GROUPS
    assert all(r["groups"]["created"] + r["groups"]["unchanged"] == N_GROUPS for r in reports)
    assert sum(r["rollouts"]["created"] for r in reports) == 4 * N_GROUPS
    assert all(r["refused"] == 0 for r in reports)
    assert Group.objects.count() == N_GROUPS
    assert Rollout.objects.count() == RolloutContent.objects.count() == 4 * N_GROUPS
    print(
        f"\n3 concurrent ingests of {N_GROUPS} groups x 4 rollouts: {elapsed:.2f} s, "
        f"created per request {[r['groups']['created'] for r in reports]}"
    )


def _terminate_app_connections() -> int:
    """Kill every other session on the test database, as a server restart would."""
    import psycopg

    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        host=settings["HOST"],
        port=settings["PORT"] or 5432,
        autocommit=True,
    ) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> "
            "pg_backend_pid()"
        ).fetchall()
    return len(rows)


def test_database_restart_mid_ingest_is_a_503_and_a_resend_succeeds(live_server, alice_token, settings):
    # The server reads the body in 1 MB blocks; 40 kB lines and a first part of 100 lines
    # (4 MB) make sure it has read past line 65, which makes it write batch 1, before the pause.
    # With eager Celery, batch 1's after-commit hooks (highlighting ahead, the scanners) run in
    # the request; a kill landing there fails only that hook (logged; the batch is stored and
    # counted) while ingest goes on. This test is about the kill between two batches: highlighting
    # ahead is off, and the kill waits until the scanners have read batch 1 (no group left due).
    settings.GAGAR_HIGHLIGHT_AHEAD = False
    lines = step_body(log_bytes=40_000).splitlines(keepends=True)
    first, rest = lines[:100], lines[100:]
    released = threading.Event()
    outcome: dict = {}
    sender = threading.Thread(
        target=lambda: outcome.update(
            result=post(live_server.url, alice_token, [b"".join(first), b"".join(rest)], pause_after=0, pause=released)
        )
    )
    sender.start()
    deadline = time.monotonic() + 60

    def batch_one_done() -> bool:  # committed, and its scan hook has run
        return Group.objects.count() == BATCH_LINES and not Group.objects.filter(scan_due_at__isnull=False).exists()

    while not batch_one_done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert batch_one_done()
    killed = _terminate_app_connections()
    connection.close()  # ours was killed too; the next query reconnects
    released.set()
    sender.join(120)
    status, headers, report = outcome["result"]
    assert killed >= 1
    assert status == 503, report
    assert headers.get("Retry-After") == "5"
    assert report["groups"]["created"] == BATCH_LINES
    assert "database unavailable" in report["aborted"] and "resend" in report["aborted"]
    assert Group.objects.count() == BATCH_LINES  # the interrupted batch left nothing behind

    status, _, report = post(live_server.url, alice_token, [b"".join(lines)])  # the client's retry
    assert status == 200, report
    assert report["groups"] == {"created": N_GROUPS - BATCH_LINES, "extended": 0, "unchanged": BATCH_LINES}
    assert Group.objects.count() == N_GROUPS
    assert Rollout.objects.count() == RolloutContent.objects.count() == 4 * N_GROUPS


def test_database_gone_before_the_request_is_a_503_for_api_and_pages(live_server, alice_token, alice):
    """A request that meets a dead connection at its first query (token lookup, session)."""
    post(live_server.url, alice_token, [step_body(2)])
    _terminate_app_connections()
    connection.close()
    parsed = urlparse(live_server.url)
    statuses = []
    for _ in range(2):  # the first request on a killed connection, then a fresh one
        conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        conn.request("GET", "/api/v1/groups/?project=acme", headers={"Authorization": f"Token {alice_token}"})
        response = conn.getresponse()
        response.read()
        statuses.append(response.status)
        conn.close()
    assert statuses[-1] == 200 and all(s in (200, 503) for s in statuses), statuses
