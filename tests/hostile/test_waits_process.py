"""More waiting trainers than the site has threads, and the site still answers (second security review).

Before, `GET /api/v1/advantages/?wait=` waited inside the site's gunicorn (gthread): each
waiter held a thread and its database connection for up to 300 s, so waiters past the thread
count left pages unanswered whatever the caps allowed. Now nginx sends every `?wait=N` to the
waits process (`docker/start.sh waits`: uvicorn workers on gagar_web.asgi), where a wait is an
await on the process's one step watcher: no thread, no connection.

This runs the shipped deployment (`Deployment`: both roles of docker/start.sh on one PostgreSQL
database, Debian's nginx with docker/nginx.conf.template in front) with a site of ONE worker
of TWO threads, and opens 24 waiters through nginx (caps raised to admit them). While they
wait, the health check, a page and an API page are asked for through nginx and must
all be answered, and PostgreSQL must hold no more connections to the database than the site's
threads plus the waits process's pool. Then the step turns final and every waiter is answered
with Gagar-Step-Final: true and gives its slot back.

Needs PostgreSQL (to count connections; CI sets DATABASE_URL) and nginx (CI sets
GAGAR_REQUIRE_NGINX=1). About 25 s on two cores.
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlparse

import psycopg
import pytest

from tests.helpers.groups import jsonl, small_group
from tests.helpers.served import Deployment, get, require_nginx

pytestmark = pytest.mark.slow

WAITERS = 24
SITE_THREADS = 2
WAITS_POOL = 3
PROBES = 4  # of each page


def call(port: int, token: str, path: str, *, data: bytes | None = None, timeout: float = 90) -> tuple[int, dict, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers.items()), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


@pytest.fixture
def postgres_database():
    """A fresh database on DATABASE_URL's PostgreSQL server, dropped after: its URL."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        pytest.skip("needs PostgreSQL to count its connections (DATABASE_URL=postgres://...; CI sets it)")
    parsed = urlparse(url)
    name = f"{parsed.path.lstrip('/') or 'gagar'}_waits"
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield parsed._replace(path=f"/{name}").geturl()
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def until(condition, what: str, *, seconds: float = 60) -> None:
    give_up = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > give_up:
            pytest.fail(f"never: {what}")
        time.sleep(0.05)


def test_waiters_past_the_sites_threads_leave_pages_answering(postgres_database, tmp_path):
    require_nginx()
    caps = {f"GAGAR_WAITERS_{cap}": str(WAITERS) for cap in ("PER_TOKEN", "PER_PROJECT", "TOTAL")}
    deployment = Deployment(
        tmp_path,
        env={"DATABASE_URL": postgres_database, **caps},
        site_env={"GUNICORN_WORKERS": "1", "GUNICORN_THREADS": str(SITE_THREADS)},
        waits_env={"GUNICORN_WORKERS": "1", "DATABASE_POOL_SIZE": str(WAITS_POOL)},
    )
    with deployment, psycopg.connect(postgres_database, autocommit=True) as db:

        def count(sql: str) -> int:
            return db.execute(sql).fetchone()[0]

        def connections() -> int:  # the servers' connections to this database, not this test's own
            return count("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")

        tokens = deployment.site.tokens(alice="admin", tess="trainer")
        port = deployment.port
        body = jsonl(small_group("t-1@1", run="waiting", step=1))  # mixed, not graded: pending until its deadline
        assert call(port, tokens["alice"], "/api/v1/groups/?project=acme", data=body)[0] == 200
        results: list = []
        wait = "/api/v1/advantages/?project=acme&run=waiting&step=1&wait=120"
        threads = [
            threading.Thread(target=lambda: results.append(call(port, tokens["tess"], wait)), daemon=True) for _ in range(WAITERS)
        ]
        for thread in threads:
            thread.start()
        until(lambda: count("SELECT count(*) FROM grading_stepwaiter") == WAITERS, f"all {WAITERS} trainers are waiting")

        answered, most_connections = [], 0
        for _ in range(PROBES):  # each probe times out after 10 s: a site whose threads all wait never answers
            status, page = get(port, "/healthz", timeout=10)
            answered.append(("/healthz", status == 200 and b'"ok"' in page))
            status, _ = get(port, "/projects/", timeout=10)  # anonymous: to the login page (no collected static files here)
            answered.append(("a page", status == 302))
            status, page = get(
                port, "/api/v1/runs/?project=acme", timeout=10, headers={"Authorization": f"Bearer {tokens['alice']}"}
            )
            answered.append(("runs API", status == 200 and "waiting" in {r["name"] for r in json.loads(page)}))
            most_connections = max(most_connections, connections())
        still_waiting = count("SELECT count(*) FROM grading_stepwaiter")

        db.execute("UPDATE grading_group SET created_at = '2000-01-01 00:00:00+00'")  # its deadline passed: final
        for thread in threads:
            thread.join(timeout=60)
        left = count("SELECT count(*) FROM grading_stepwaiter")

    assert all(ok for _, ok in answered), answered
    assert still_waiting == WAITERS  # nobody was answered early: they were waiting all along
    # The site's threads (one connection each at most) and the waits' pool; never one per waiter.
    assert most_connections <= SITE_THREADS + WAITS_POOL, most_connections
    assert len(results) == WAITERS and all(
        code == 200 and headers.get("Gagar-Step-Final") == "true" for code, headers, _ in results
    ), [(c, h.get("Gagar-Step-Final")) for c, h, _ in results]
    assert left == 0
