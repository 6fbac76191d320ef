#!/usr/bin/env python
"""Trainers waiting for a step vs pages, through the shipped deployment.

    .venv/bin/python benchmarks/waiters.py                            # 500 waiters over 50 tokens
    .venv/bin/python benchmarks/waiters.py --waiters 24 --tokens 3 --probes 60 --before

Starts what docker-compose.yml runs, without Docker, with tests/helpers/served.py's
`Deployment` (the same code the hostile tests use): the site (`docker/start.sh`: migrate,
gunicorn, 4 gthread workers x 16 threads), the waits (`docker/start.sh waits`: gunicorn with 2
uvicorn workers, a pool of 4 connections each) on a fresh PostgreSQL database on DATABASE_URL's
server, and Debian's nginx with docker/nginx.conf.template in front; every request below goes
through nginx. Static files are collected first (docker/collect-static.sh, as the image build
does) so the login page renders with DJANGO_DEBUG=false. The waiter caps are raised through the
environment so every waiter is admitted (GAGAR_WAITERS_PER_TOKEN = waiters / tokens,
GAGAR_WAITERS_PER_PROJECT = GAGAR_WAITERS_TOTAL = waiters; the defaults are 8/24/32).

1. Idle: --probes requests, in turn GET /healthz, the login page and a group page (signed in as
   the project's admin), one after another; p50/p95 per page.
2. --waiters trainers (the real client, gagar_client, over --tokens trainer tokens) wait on a step
   that is not final (`advantage_rows(wait=--wait)`, again as soon as answered); once every one
   holds a waiter slot (StepWaiter rows: a readiness count, not a sleep), the same probes again,
   while the database's connections (pg_stat_activity) and the waits workers' threads and
   memory are sampled. Goal: each page's p95 <= 2x its idle p95.
3. --before: the same waiters with nginx sending them to the site (as before the waits process),
   --before-probes probes with a 5 s timeout each: how many answer.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _support import cpu_model, database_urls, load_average, memory_gib, postgres_version, recreate_database, usable_cores

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "client"))

import psycopg  # noqa: E402

from gagar_client import Client, GagarError  # noqa: E402
from grading.ingest.demo import make_group  # noqa: E402  (pure, no Django)
from tests.helpers.served import Deployment, Nginx, get, nginx_binary  # noqa: E402

RUN = "never-final"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--waiters", type=int, default=500)
    p.add_argument("--tokens", type=int, default=50, help="trainer tokens the waiters are spread over")
    p.add_argument("--wait", type=int, default=60, help="each wait's ?wait= seconds")
    p.add_argument("--probes", type=int, default=300, help="page requests per condition (three pages in turn)")
    p.add_argument("--before", action="store_true", help="also route the waiters to the site, as before")
    p.add_argument("--before-probes", type=int, default=9)
    p.add_argument("--database", default="gagar_bench_waiters", help="created and dropped by this script")
    return p.parse_args()


def setup(deployment: Deployment, tokens: int) -> dict:
    """Project bench: an admin (token and signed-in session) and `tokens` trainer tokens."""
    code = f"""
import json
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import Client
from grading.models import Project
from grading.projects.tokens import issue_api_token
Project.objects.get_or_create(name="bench")
_, admin = issue_api_token(username="ada", project_name="bench", role="admin")
trainers = [issue_api_token(username=f"trainer{{i}}", project_name="bench", role="trainer")[1] for i in range({tokens})]
browser = Client()
browser.force_login(get_user_model().objects.get(username="ada"))
print(json.dumps({{"admin": admin, "trainers": trainers,
                  "cookie": f"{{settings.SESSION_COOKIE_NAME}}={{browser.cookies[settings.SESSION_COOKIE_NAME].value}}"}}))
"""
    return json.loads(deployment.site.django(code).strip().splitlines()[-1])


def probe(port: int, pages: list[tuple[str, str, dict, int]], n: int, *, timeout: float) -> dict[str, list[float | None]]:
    """{page name: [ms, or None when it was not answered in `timeout` with its status]}."""
    times: dict[str, list[float | None]] = {name: [] for name, *_ in pages}
    for i in range(n):
        name, path, headers, expected = pages[i % len(pages)]
        started = time.perf_counter()
        try:
            status, _ = get(port, path, timeout=timeout, headers=headers)
            ok = status == expected
        except OSError:
            ok = False
        times[name].append((time.perf_counter() - started) * 1000 if ok else None)
    return times


def percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(q * len(values)) - 1))]


class Waiters:
    """`n` trainers over `tokens`, each waiting on the step again as soon as it is answered."""

    def __init__(self, port: int, tokens: list[str], n: int, wait: int):
        self.stop = threading.Event()
        self.answered = self.refused = 0
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._trainer, args=(port, tokens[i % len(tokens)], wait), daemon=True) for i in range(n)
        ]

    def _trainer(self, port: int, token: str, wait: int) -> None:
        gagar = Client(f"http://127.0.0.1:{port}", token, project="bench", timeout=wait + 60, retries=0)
        while not self.stop.is_set():
            try:
                gagar.advantage_rows(RUN, 1, wait=wait)
                with self.lock:
                    self.answered += 1
            except GagarError as exc:
                with self.lock:
                    self.refused += exc.status == 429
                    self.errors.append(str(exc)[:200])
                time.sleep(1)

    def finish(self, db) -> None:
        """No more waits; the step turns final, so those waiting are answered at once."""
        self.stop.set()
        db.execute("UPDATE grading_group SET created_at = now() - interval '2 days'")
        for thread in self.threads:
            thread.join(timeout=60)

    def __enter__(self) -> Waiters:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()


def processes_of(master: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{master}/task").iterdir():
        children += [int(pid) for pid in (task / "children").read_text().split()]
    return children


def threads_and_rss(pids: list[int]) -> tuple[int, float]:
    threads, rss_kb = 0, 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                threads += int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss_kb += int(line.split()[1])
    return threads, rss_kb / 1024


def main() -> None:
    args = parse_args()
    if nginx_binary() is None:
        raise SystemExit("nginx is not installed (apt-get install -y nginx-light): the figures are measured through it")
    admin_url, db_url = database_urls(args.database)
    recreate_database(admin_url, args.database)
    subprocess.run(
        ["sh", str(ROOT / "docker" / "collect-static.sh")],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        check=True,
    )
    per_token = -(-args.waiters // args.tokens)
    caps = {
        "GAGAR_WAITERS_PER_TOKEN": str(per_token),
        "GAGAR_WAITERS_PER_PROJECT": str(args.waiters),
        "GAGAR_WAITERS_TOTAL": str(args.waiters),
    }
    scratch = Path(tempfile.mkdtemp(prefix="gagar-waiters-"))
    rows, before = [], None
    try:
        with (
            Deployment(scratch, env={"DATABASE_URL": db_url, **caps}) as deployment,
            psycopg.connect(db_url, autocommit=True) as db,
        ):
            port = deployment.port
            people = setup(deployment, args.tokens)
            ada = Client(f"http://127.0.0.1:{port}", people["admin"], project="bench", timeout=120)
            ada.create_run(RUN, auto_grade="none", grading_deadline_seconds=3600)
            import random

            groups = [make_group(random.Random(t), run=RUN, step=1, task_number=t, n_rollouts=4, pass_rate=0.5) for t in range(4)]
            ada.post_step(RUN, 1, [dict(g, run=RUN) for g in groups])
            group_page = f"/projects/bench/runs/{RUN}/groups/{groups[0]['uid']}/"
            pages = [
                ("/healthz", "/healthz", {}, 200),
                ("login page", "/accounts/login/", {}, 200),
                ("group page", group_page, {"Cookie": people["cookie"]}, 200),
            ]
            for name, path, headers, expected in pages:
                status, body = get(port, path, timeout=30, headers=headers)
                assert status == expected, (name, status, body[:500])
            for _ in range(30):  # warm every worker (a first request loads the URLconf and templates)
                probe(port, pages, 3, timeout=30)

            def connections() -> int:
                return db.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                ).fetchone()[0]

            def waiting() -> int:
                return db.execute("SELECT count(*) FROM grading_stepwaiter").fetchone()[0]

            idle = probe(port, pages, args.probes, timeout=30)
            idle_connections = connections()
            workers = processes_of(deployment.waits.process.pid)
            idle_threads, idle_rss = threads_and_rss(workers)
            started = time.perf_counter()
            with Waiters(port, people["trainers"], args.waiters, args.wait) as waiters:
                while waiting() < args.waiters:
                    if time.perf_counter() - started > 120:
                        raise SystemExit(f"only {waiting()} of {args.waiters} waiters got a slot in 120 s: {waiters.errors[:3]}")
                    time.sleep(0.05)
                admitted = time.perf_counter() - started
                busy = probe(port, pages, args.probes, timeout=30)
                busy_connections = connections()
                busy_threads, busy_rss = threads_and_rss(workers)
                still = waiting()
                waiters.finish(db)
            for name, *_ in pages:
                rows.append((name, idle[name], busy[name]))
            db.execute("UPDATE grading_group SET created_at = now()")  # pending again
            if args.before:
                with (
                    Nginx(scratch / "nginx-before", deployment.site.port) as old,
                    Waiters(old.port, people["trainers"], args.waiters, args.wait) as waiters,
                ):
                    time.sleep(5)  # no readiness to wait for: the site takes what its threads can hold
                    held = waiting()
                    before = (held, probe(old.port, pages, args.before_probes, timeout=5))
                    waiters.finish(db)
    finally:
        recreate_database(admin_url, args.database, drop_only=True)

    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, {memory_gib()} RAM, load {load_average():.2f}; Python "
        f"{platform.python_version()}, PostgreSQL {postgres_version(admin_url)}, nginx {nginx_version()}"
    )
    print(
        f"Through nginx (docker/nginx.conf.template): the site 4 gthread workers x 16 threads, the waits 2 uvicorn "
        f"workers (pool of 4 connections each); {args.waiters} waiters over {args.tokens} trainer tokens "
        f"(caps {per_token}/{args.waiters}/{args.waiters}), all admitted in {admitted:.1f} s; {args.probes} probes per condition"
    )
    print()
    print("| Page | idle p50 (ms) | idle p95 (ms) | waiting p50 (ms) | waiting p95 (ms) | p95 waiting / idle | answered |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, quiet, loaded in rows:
        q, b = [t for t in quiet if t is not None], [t for t in loaded if t is not None]
        ratio = percentile(b, 0.95) / percentile(q, 0.95)
        print(
            f"| {name} | {statistics.median(q):.1f} | {percentile(q, 0.95):.1f} | {statistics.median(b):.1f} | "
            f"{percentile(b, 0.95):.1f} | {ratio:.2f}x (goal <= 2x) | {len(b)}/{len(loaded)} |"
        )
    print()
    print(
        f"While {still} waited: PostgreSQL connections to the database {busy_connections} (idle {idle_connections}); "
        f"the waits workers {busy_threads} threads, {busy_rss:.0f} MiB RSS (idle {idle_threads}, {idle_rss:.0f} MiB); "
        f"{waiters.refused} waits refused with 429, {waiters.answered} waits answered in all"
    )
    if before is not None:
        held, times = before
        answered = sum(t is not None for ts in times.values() for t in ts)
        print(
            f"\nBefore (waits sent to the site's 64 threads): {held} waiters held slots; pages answered "
            f"{answered}/{args.before_probes} within 5 s each"
        )


def nginx_version() -> str:
    done = subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True)
    return (done.stderr or done.stdout).strip().rsplit("/", 1)[-1]


if __name__ == "__main__":
    main()
