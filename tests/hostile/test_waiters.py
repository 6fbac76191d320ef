"""Trainers waiting for a step cannot starve the site (second security review).

`GET /api/v1/advantages/?wait=` holds a server thread while it waits. Before, one trainer
token could open any number of waiters: with 128 the site answered 2 probes of 10. Now each
token, each project and the site have a cap on concurrent waiters (GAGAR_WAITERS_*), counted
in the database so every web process shares them; past a cap the answer is a JSON 429 with
`Retry-After`, at once, holding no thread. The waiters run against the real start command
(docker/start.sh, 4 gunicorn workers, the `shipped_app` fixture), so they are concurrent
and spread over processes, as in production.

tess and tom hold trainer tokens of acme; alice (admin) posts the step. The shared server
caps waiters at 2 per token and 3 per project; this test costs about 2 s beside it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone

from grading.models import Role, StepWaiter
from grading.projects.tokens import issue_api_token
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import post_groups
from tests.hostile.corpus import record

pytestmark = pytest.mark.slow


def call(port: int, token: str, path: str, *, data: bytes | None = None, timeout: float = 60) -> tuple[int, dict, bytes]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers.items()), answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers.items()), exc.read()


WAIT = "/api/v1/advantages/?project=acme&run=waiting&step=1&wait=60"


def waiting(port: int, token: str, results: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: results.append(call(port, token, WAIT, timeout=90)), daemon=True)
    thread.start()
    return thread


def until(condition, what: str, *, seconds: float = 30) -> None:
    give_up = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > give_up:
            pytest.fail(f"never: {what}")
        time.sleep(0.02)


def test_waiters_past_the_caps_get_429_with_retry_after(shipped_app):
    tokens = shipped_app.tokens(alice="admin", tess="trainer", tom="trainer")
    port, db = shipped_app.port, sqlite3.connect(shipped_app.db, timeout=30)

    def waiters() -> int:
        return db.execute("SELECT COUNT(*) FROM grading_stepwaiter").fetchone()[0]

    body = jsonl(small_group("t-1@1", run="waiting", step=1))  # mixed, not graded: pending until its deadline
    assert call(port, tokens["alice"], "/api/v1/groups/?project=acme", data=body)[0] == 200
    results: list = []
    threads = [waiting(port, tokens["tess"], results) for _ in range(2)]
    until(lambda: waiters() == 2, "tess's two waiters are waiting")
    started = time.monotonic()
    status, headers, answer = call(port, tokens["tess"], WAIT)  # a third for tess: over the token's cap
    turned_away = time.monotonic() - started
    threads.append(waiting(port, tokens["tom"], results))
    until(lambda: waiters() == 3, "tom's waiter is waiting")
    status_project, headers_project, answer_project = call(port, tokens["tom"], WAIT)  # tom's second: over the project's
    ok = (
        status == 429
        and headers.get("Retry-After") == "10"
        and "this token already has 2" in json.loads(answer)["detail"]
        and turned_away < 5
        and status_project == 429
        and headers_project.get("Retry-After") == "10"
        and "project 'acme' already has 3" in json.loads(answer_project)["detail"]
    )
    record("HTTP requests", "waiters past the per-token and per-project caps", "refused" if ok else "FAILED")
    with db:  # the deadline passed: the step is final and the waiters are answered
        db.execute("UPDATE grading_group SET created_at = '2000-01-01 00:00:00'")
    for thread in threads:
        thread.join(timeout=60)
    codes = sorted(code for code, _, _ in results)
    left = waiters()
    db.close()
    assert ok, (status, headers, answer, status_project, answer_project)
    assert codes == [200, 200, 200] and left == 0  # the admitted waiters were answered and gave their slots back


@pytest.mark.django_db
def test_a_slot_left_by_a_killed_process_expires(client, settings, alice_token, acme):
    """A waiter row whose process died holds its slot only until it expires."""
    settings.GAGAR_WAITERS_PER_TOKEN = 1
    _, tess = issue_api_token(username="tess", project_name="acme", role=Role.TRAINER)
    post_groups(client, alice_token, small_group("t-1@1", run="rl", step=1))
    from grading.models import ApiToken

    token = ApiToken.objects.get(user__username="tess")
    StepWaiter.objects.create(project=acme, holder=f"token:{token.pk}", expires_at=timezone.now() - timedelta(seconds=1))
    r = client.get("/api/v1/advantages/?project=acme&run=rl&step=1&wait=1", HTTP_AUTHORIZATION=f"Bearer {tess}")
    assert r.status_code == 200 and r["Gagar-Step-Final"] == "false"
    assert StepWaiter.objects.count() == 0
