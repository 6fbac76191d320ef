"""A real Celery worker on the test database: `start_celery_worker(name, log, **env)` (or the
grading worker, `start_grading_worker(log, ...)`), then `stop_process(worker)`;
`worker_database_url()` is the test database as another process
reaches it; `worker_on_own_queue(...)` a worker on a queue of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]


def worker_database_url() -> str:
    """The test database (PostgreSQL) as a URL another process, a worker, can connect to."""
    from django.db import connection

    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{quote(db['NAME'], safe='')}"


def start_celery_worker(
    name: str,
    log,
    *,
    queue: str | None = None,
    loglevel: str = "warning",
    pool: str = "solo",
    concurrency: int | None = None,
    **env: str,
) -> subprocess.Popen:
    """A real Celery worker process on the test database and the broker the environment names,
    its output in `log`, in a session of its own (stop_process ends it). It takes `queue`, or
    every queue the desk sends to (the default one and the grading one). `pool`: solo, or gevent
    as the grading worker runs (`docker/start.sh grader`), `concurrency` greenlets.
    `env`: more variables for it (e.g. CELERY_BROKER_URL, GAGAR_CACHE_URL)."""
    from grading.jobs.worker import GREEN_ENV, worker_queues

    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "gagar_web",
        "worker",
        f"--pool={pool}",
        "-n",
        f"{name}@%h",
        f"--loglevel={loglevel}",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
    ]
    command += ["-Q", queue or ",".join(worker_queues())]
    if concurrency:
        command += [f"--concurrency={concurrency}"]
    green = GREEN_ENV if pool == "gevent" else {}
    return subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "DATABASE_URL": worker_database_url(), "DATABASE_CONN_MAX_AGE": "0", **green, **env},
    )


def start_grading_worker(log, *, concurrency: int, **env: str) -> subprocess.Popen:
    """The grading worker as the deployment starts it (`docker/start.sh grader`: the gevent pool
    on the grading queue, pooled connections) on the test database, `concurrency` greenlets,
    in a session of its own (stop_process ends it). `env`: more variables (DATABASE_POOL_SIZE...)."""
    return subprocess.Popen(
        ["sh", str(ROOT / "docker" / "start.sh"), "grader"],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={
            **os.environ,
            "PYTHON": sys.executable,
            "DATABASE_URL": worker_database_url(),
            "GRADER_CONCURRENCY": str(concurrency),
            "CELERY_LOGLEVEL": "warning",
            **env,
        },
    )


@contextmanager
def worker_on_own_queue(name: str, tmp_path: Path, broker: str, **env: str):
    """A real Celery worker (start_celery_worker) on a queue of its own on `broker`, for tests
    that send it tasks with apply_async(queue=...): skips, saying why, without PostgreSQL and
    Redis; yields {"queue", "log"}; stops it and deletes the queue's keys after."""
    import uuid

    import pytest
    from django.db import connection

    if not (os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL")):
        pytest.skip("needs DATABASE_URL and CELERY_BROKER_URL (real PostgreSQL and Redis), as in CI")
    if connection.vendor != "postgresql":
        pytest.skip("the worker needs a database another process can reach (PostgreSQL)")
    queue = f"{name}-test-{uuid.uuid4().hex[:8]}"
    log_path = tmp_path / f"{name}-worker.log"
    log = log_path.open("w")
    proc = start_celery_worker(name, log, queue=queue, loglevel="INFO", CELERY_BROKER_URL=broker, **env)
    try:
        yield {"queue": queue, "log": log_path, "proc": proc}
    finally:
        stop_process(proc)
        log.close()
        import redis

        client = redis.Redis.from_url(broker)
        for key in client.scan_iter(f"*{queue}*"):  # kombu's bindings of the test's own queue
            client.delete(key)


def stop_process(process: subprocess.Popen | None, timeout: float = 20) -> None:
    """End a process started in a session of its own (and its children): TERM, then KILL."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
