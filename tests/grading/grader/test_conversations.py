"""Grading conversations on the grading worker: one real Celery worker process on the gevent
pool, started as the deployment starts it (`docker/start.sh grader`), holds many LLM conversations at once against the
scripted model server, each one's failure its own; its database connections come from a pool
bounded whatever the number of conversations, below what PostgreSQL lets its role open.

Every conversation's first model call waits at a barrier until all of them have called: the
model server answers only once every conversation is in flight at the same time, in one
process. The tests wait on the jobs' states in the database, never on time."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from urllib.parse import quote

import pytest
from django.db import connection
from django.test import override_settings

from grading.jobs.grade import queue_step
from grading.models import GradingJob, Group, Verdict
from tests.helpers.fake_openai import RUBRIC_SCORES, FakeOpenAI, Reply, call, hang, status, submit
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.workers import start_celery_worker, start_grading_worker, stop_process

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not (os.environ.get("CELERY_BROKER_URL") and os.environ.get("DATABASE_URL")),
        reason="needs a real broker and PostgreSQL (CI sets CELERY_BROKER_URL and DATABASE_URL)",
    ),
]

SCORES = RUBRIC_SCORES
VERDICT = [{"rollout": 0, "tier": "T1", "rank": 1, "scores": SCORES, "cheat": False, "evidence": []}]
# The task's hard limit; the soft one (CELERY_TASK_SOFT_TIME_LIMIT: 3/4 of it) stores a timeout verdict.
TIME_LIMIT, SOFT_LIMIT = 16, 12
MAX_TURNS = 100  # the endless conversations end at the soft time limit, not at the turn budget


class Model:
    """The scripted model. No conversation gets past its second call until `expected`
    conversations have made it (until then each is told to call a tool again, within the
    client's timeout), so all of them are in flight at once; then each behaves as its group's
    instance id says (`<kind>-<n>`):

    - ok: submits a verdict; slow: one tool call and the verdict, each answered after 0.6 s;
    - fail: answers 500 to every call (the client's retries included);
    - hang: never answers in the client's time (GRADER_REQUEST_TIMEOUT, 1 s);
    - endless: keeps calling tools, 0.6 s an answer, past the task's soft time limit."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.all_in = threading.Event()
        self.answered: dict[str, int] = {}

    def __call__(self, request: dict) -> Reply:
        tool = [m for m in request["messages"] if m["role"] == "tool"]
        if not tool:
            return call("get_task")
        instance = json.loads(tool[0]["content"])["instance_id"]
        with self.lock:
            self.seen.add(instance)
            if len(self.seen) == self.expected:
                self.all_in.set()
        if not self.all_in.wait(0.5):
            return call("list_rollouts")
        with self.lock:
            turn = self.answered[instance] = self.answered.get(instance, 0) + 1
        kind = instance.split("-")[0]
        if kind == "ok":
            return submit(VERDICT)
        if kind == "slow":
            reply = call("list_rollouts") if turn == 1 else submit(VERDICT)
            reply.delay = 0.6
            return reply
        if kind == "fail":
            return status(500)
        if kind == "hang":
            return hang(60)
        assert kind == "endless", kind
        reply = call("list_rollouts")
        reply.delay = 0.6
        return reply


def ingest_kinds(acme, kinds: dict[str, int]):
    groups = [
        small_group(f"{kind}{i}@1", instance_id=f"{kind}-{i}", rewards=(1, 0))
        for kind, count in kinds.items()
        for i in range(count)
    ]
    ingest_groups(acme, *groups)
    return Group.objects.get(uid=groups[0]["uid"]).step


def purge_grading_queue() -> None:
    import redis
    from django.conf import settings

    from gagar_web.celery import app

    app.control.purge()
    redis.Redis.from_url(os.environ["CELERY_BROKER_URL"]).delete(settings.GAGAR_GRADING_QUEUE)


def wait_for_jobs(step, count: int, log_path, *, timeout: float = 60, every=None) -> list[GradingJob]:
    """Until `count` jobs of the step are done or failed (`every()` called on each look)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if every is not None:
            every()
        finished = list(GradingJob.objects.filter(group__step=step, status__in=("done", "failed")).select_related("group"))
        if len(finished) == count:
            return finished
        time.sleep(0.2)
    states = list(GradingJob.objects.filter(group__step=step).values_list("group__uid", "status", "error"))
    pytest.fail(f"jobs not finished in {timeout} s: {states}\n{log_path.read_text()[-4000:]}")


def desk_settings(fake: FakeOpenAI) -> dict:
    """The test process's grader settings: the name it queues under is the name the worker grades under."""
    return {
        "GRADER_BASE_URL": fake.base_url,
        "GRADER_MODEL": "fake-model",
        "GRADER_ALLOW_PRIVATE_NETWORK": True,
        "GRADER_MAX_TURNS": MAX_TURNS,
    }


def grader_env(fake: FakeOpenAI, **more: str) -> dict[str, str]:
    return {
        "GRADER_BASE_URL": fake.base_url,
        "GRADER_MODEL": "fake-model",
        "GRADER_ALLOW_PRIVATE_NETWORK": "true",
        "GRADER_REQUEST_TIMEOUT": "1",
        "GRADER_MAX_TURNS": str(MAX_TURNS),
        "CELERY_TASK_TIME_LIMIT": str(TIME_LIMIT),
        "CELERY_VISIBILITY_TIMEOUT": "60",
        **more,
    }


def test_many_conversations_in_one_worker_each_fail_on_their_own(acme, tmp_path, monkeypatch):
    from gagar_web.celery import app
    from grading.jobs.tasks import grade_group_task

    # A task's message carries its sender's time limits (the settings, the same on every process)
    monkeypatch.setattr(grade_group_task, "time_limit", TIME_LIMIT)
    monkeypatch.setattr(grade_group_task, "soft_time_limit", SOFT_LIMIT)
    # Celery caches a task's send options, time limits included, at its first send: without
    # this, a test that sent the task before (test_tasks) leaves the limits it sent with.
    monkeypatch.setattr(grade_group_task, "_exec_options", None)

    kinds = {"ok": 30, "slow": 6, "fail": 6, "hang": 4, "endless": 2}
    total = sum(kinds.values())
    step = ingest_kinds(acme, kinds)
    model = Model(total)
    log_path = tmp_path / "grader.log"
    with (
        FakeOpenAI(responder=model, record=False) as fake,
        override_settings(**desk_settings(fake)),
        log_path.open("w") as log,
    ):
        app.conf.task_always_eager = False
        purge_grading_queue()
        worker = start_grading_worker(log, concurrency=64, **grader_env(fake, DATABASE_POOL_SIZE="4"))
        try:
            queue_step(step=step, backend="llm")
            jobs = wait_for_jobs(step, total, log_path)
        finally:
            app.conf.task_always_eager = True
            stop_process(worker)
    assert model.all_in.is_set()  # all of them in flight at once, in one process

    by_kind: dict[str, set] = {}
    for job in jobs:
        verdict = Verdict.objects.get(pk=job.verdict_id)
        kind = job.group.uid.split("@")[0].rstrip("0123456789")
        by_kind.setdefault(kind, set()).add((job.status, verdict.status, job.retries))
        if kind == "fail":
            assert "answered 500 (3 attempts)" in job.error, job.error
        elif kind == "hang":
            assert "did not answer in time (3 attempts)" in job.error, job.error
        elif kind == "endless":
            assert job.error == "grading exceeded the task's time limit", job.error
            assert len(verdict.raw.get("usage", {})) == 0  # stored by the task, not by the cut conversation
    assert by_kind == {
        "ok": {("done", "valid", 0)},
        "slow": {("done", "valid", 0)},
        "fail": {("failed", "invalid", 0)},
        "hang": {("failed", "timeout", 0)},
        "endless": {("failed", "timeout", 0)},
    }
    assert Verdict.objects.filter(group__step=step).count() == total  # one each, none lost, none twice


@pytest.fixture
def limited_role():
    """A database role of the test's own that PostgreSQL lets open at most LIMIT connections,
    and the test database as a URL for it; dropped after."""
    role = f"grader_{uuid.uuid4().hex[:8]}"
    name = connection.settings_dict["NAME"]
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{role}" LOGIN CONNECTION LIMIT {ROLE_LIMIT}')
        cursor.execute(f'GRANT CONNECT ON DATABASE "{name}" TO "{role}"')
        cursor.execute(f'GRANT USAGE ON SCHEMA public TO "{role}"')
        cursor.execute(f'GRANT ALL ON ALL TABLES IN SCHEMA public TO "{role}"')
        cursor.execute(f'GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO "{role}"')
    db = connection.settings_dict
    yield role, f"postgres://{role}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{quote(name, safe='')}"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [role])
        cursor.execute(f'DROP OWNED BY "{role}"')
        cursor.execute(f'DROP ROLE "{role}"')


POOL, ROLE_LIMIT = 3, 4


def test_more_conversations_than_the_database_allows_connections_lose_none(acme, tmp_path, limited_role):
    """40 conversations in flight at once while the worker's role may open 4 connections: the
    worker's pool of 3 serves them all; no connection is ever refused (no job retried) and at
    most 3 are ever open."""
    from gagar_web.celery import app

    role, url = limited_role
    total = 40
    step = ingest_kinds(acme, {"ok": total})
    model = Model(total)
    seen: list[int] = []

    def count_connections() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", [role])
            seen.append(cursor.fetchone()[0])

    log_path = tmp_path / "grader.log"
    with (
        FakeOpenAI(responder=model, record=False) as fake,
        override_settings(**desk_settings(fake)),
        log_path.open("w") as log,
    ):
        app.conf.task_always_eager = False
        purge_grading_queue()
        worker = start_grading_worker(log, concurrency=64, **grader_env(fake, DATABASE_URL=url, DATABASE_POOL_SIZE=str(POOL)))
        try:
            queue_step(step=step, backend="llm")
            jobs = wait_for_jobs(step, total, log_path, every=count_connections)
        finally:
            app.conf.task_always_eager = True
            stop_process(worker)
    assert model.all_in.is_set()
    assert {(j.status, j.retries, j.resends) for j in jobs} == {("done", 0, 0)}, [j.error for j in jobs if j.error]
    assert set(Verdict.objects.filter(group__step=step).values_list("status", flat=True)) == {"valid"}
    assert "too many connections" not in log_path.read_text()
    assert 0 < max(seen) <= POOL, seen


def test_a_gevent_worker_that_would_reap_the_sandboxs_children_refuses_to_start(tmp_path):
    log_path = tmp_path / "refused.log"
    with log_path.open("w") as log:
        worker = start_celery_worker("reaper", log, pool="gevent", GEVENT_NOWAITPID="")
        try:
            assert worker.wait(timeout=60) != 0
        finally:
            stop_process(worker)
    assert "needs GEVENT_NOWAITPID=1" in log_path.read_text()
