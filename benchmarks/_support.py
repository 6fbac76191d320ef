"""Shared by the benchmark scripts: the machine they ran on, a scratch PostgreSQL
database, and the app served by a real server process on loopback."""

from __future__ import annotations

import http.client
import os
import platform
import random
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse, urlunparse

import psycopg
from psycopg import sql

if TYPE_CHECKING:
    from grading.grader.workspace import GroupWorkspace


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def memory_gib() -> str:
    """Total memory as '24 GiB', or '' where /proc/meminfo is not there."""
    try:
        kb = int(next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")).split()[1])
    except (OSError, StopIteration, ValueError):
        return ""
    return f"{kb / 1024 / 1024:.0f} GiB"


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def postgres_version(url: str) -> str:
    with psycopg.connect(url) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]


def database_urls(name: str) -> tuple[str, str]:
    """(maintenance URL, benchmark URL) on the server DATABASE_URL points at."""
    env = os.environ.get("DATABASE_URL", "")
    base = (
        urlparse(env)
        if env.startswith(("postgres://", "postgresql://"))
        else urlparse("postgres://postgres@127.0.0.1:5432/postgres")
    )
    return urlunparse(base._replace(path="/postgres", query="")), urlunparse(base._replace(path=f"/{name}", query=""))


# `make bench-smoke` (benchmarks/smoke.py) migrates one database once and names it here; every
# script's database is then made as a copy of it, so the script's own migrate finds nothing to
# do (it still runs). Unset, as in a full run, a script's database starts empty and is migrated.
TEMPLATE_ENV = "GAGAR_BENCH_TEMPLATE"


def recreate_database(admin_url: str, name: str, *, drop_only: bool = False) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if not drop_only:
            template = os.environ.get(TEMPLATE_ENV)
            create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
            if template:
                create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template))
            conn.execute(create)


def in_process_django(name: str, *, reuse: bool = False) -> tuple[str, str]:
    """A fresh scratch database `name` for Django to run in this process (eager Celery,
    quiet logs); (maintenance URL, its URL). Call django.setup() and migrate after it.
    `reuse`: the database is kept as an earlier run left it (`--keep`), not recreated."""
    admin_url, db_url = database_urls(name)
    if not reuse:
        recreate_database(admin_url, name)
    os.environ["DATABASE_URL"] = db_url
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_web.settings")
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
    return admin_url, db_url


def service_env(db_url: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}}
    env.update(
        DATABASE_URL=db_url,
        DJANGO_DEBUG="false",  # as deployed: no query log, no debug cursor
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DJANGO_SECURE_SSL_REDIRECT="false",  # plain HTTP on loopback
        DJANGO_LOG_LEVEL="WARNING",
    )
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_healthy(server: subprocess.Popen, port: int, timeout: float = 60) -> None:
    """Return once the app answers GET /healthz on 127.0.0.1:port; exit if the server dies first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited with {server.returncode}; see its log")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    server.kill()
    raise SystemExit(f"server did not answer /healthz within {timeout:.0f} s")


def celery_worker(name: str, pool: str, concurrency: int, queues: list[str], env: dict, logs: Path) -> subprocess.Popen:
    """A real Celery worker of the app on `queues`, its log in logs/<name>.log (stop it with stop_server)."""
    root = Path(__file__).resolve().parent.parent
    command = [sys.executable, "-m", "celery", "-A", "gagar_web", "worker", "--pool", pool, "--concurrency", str(concurrency)]
    command += ["--queues", ",".join(queues), "--hostname", f"{name}@%h", "--loglevel", "WARNING"]
    command += ["--without-gossip", "--without-mingle"]
    return subprocess.Popen(command, cwd=root, env=env, stdout=open(logs / f"{name}.log", "w"), stderr=subprocess.STDOUT)


def stop_server(server: subprocess.Popen, first_signal: int = signal.SIGTERM) -> None:
    """Stop the server (SIGINT lets a profiled runserver exit normally and write its profile)."""
    if server.poll() is None:
        server.send_signal(first_signal)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def checkpoint(url: str) -> None:
    """Start each path with clean shared buffers (needs superuser; skipped otherwise)."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
    except psycopg.errors.InsufficientPrivilege:
        pass


def copy_baseline(url: str, path: Path, expected_rows: int, *, nbytes: int | None = None) -> float:
    """Seconds to COPY the JSON Lines of `path` (its first `nbytes`, else all), one line a row,
    into a fresh one-column jsonb table (a normal, logged table like the app's own), dropped after.
    The raw floor the REST ingest is measured against."""
    # CSV with quote/delimiter bytes that JSON never contains raw: every line is one
    # field, passed to jsonb untouched (text format would unescape backslashes).
    copy_sql = "COPY copy_baseline (doc) FROM STDIN WITH (FORMAT csv, QUOTE E'\\x01', DELIMITER E'\\x02')"
    left = path.stat().st_size if nbytes is None else nbytes
    with psycopg.connect(url) as conn:
        conn.execute("DROP TABLE IF EXISTS copy_baseline")
        conn.execute("CREATE TABLE copy_baseline (doc jsonb NOT NULL)")
        conn.commit()
        checkpoint(url)
        started = time.perf_counter()
        with conn.cursor() as cur, cur.copy(copy_sql) as copy, path.open("rb") as f:
            while left > 0 and (chunk := f.read(min(1 << 20, left))):
                copy.write(chunk)
                left -= len(chunk)
        conn.commit()
        elapsed = time.perf_counter() - started
        rows = conn.execute("SELECT count(*) FROM copy_baseline").fetchone()[0]
        conn.execute("DROP TABLE copy_baseline")
        conn.commit()
    if rows != expected_rows:
        raise SystemExit(f"COPY stored {rows} rows, expected {expected_rows}")
    return elapsed


def mixed_workspace(rng: random.Random, number: int, n_rollouts: int = 8) -> GroupWorkspace:
    """A demo group (grading.ingest.demo: real-sized patches and trajectories) as a grader's
    workspace, made mixed: at least one pass and one failure (grading.py, llm_server.py). The
    project must be on sys.path (the scripts put it there before they call this)."""
    from grading.grader.workspace import GroupWorkspace, RolloutView
    from grading.ingest.demo import make_group

    group = make_group(rng, run="bench", step=1, task_number=number, n_rollouts=n_rollouts, pass_rate=0.5)
    rows = group["rollouts"]
    if not any(r["reward"] for r in rows):
        rows[0]["reward"] = 1.0
    if all(r["reward"] for r in rows):
        rows[-1]["reward"] = 0.0
    task = group["task"]
    return GroupWorkspace(
        uid=group["uid"],
        instance_id=task["instance_id"],
        repo=task["repo"],
        problem_statement=task["problem_statement"],
        fail_to_pass=task["FAIL_TO_PASS"],
        rollouts=[
            RolloutView(
                index=r["index"],
                passed=bool(r["reward"]),
                patch=r["patch"],
                messages=r["messages"],
                tests=r["tests"],
                test_log=r["test_log"],
                exit_status=r["exit_status"],
                stats=r["stats"],
            )
            for r in rows
        ],
    )
