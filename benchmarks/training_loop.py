#!/usr/bin/env python
"""The training loop, end to end: post a step, wait until it is final, take the advantages.

    .venv/bin/python benchmarks/training_loop.py                      # 512 groups x 16 rollouts, both backends
    .venv/bin/python benchmarks/training_loop.py --groups 128 --backend heuristic

1. Creates a fresh PostgreSQL database (dropped at the end) on the server DATABASE_URL names
   (default postgres://postgres@127.0.0.1:5432), migrates it, and makes an admin token.
2. Starts, as separate processes: gunicorn (gthread, --web-workers x --threads), two Celery
   workers (--workers, thread pool of --concurrency each) on Redis (CELERY_BROKER_URL,
   default redis://127.0.0.1:6379/13), and tests/helpers/fake_openai.py answering every chat
   completion after --delay seconds with the scripted grader (--turns tool calls, then a
   verdict).
3. Per backend, a trainer (the real client, gagar_client) creates a run with that
   auto_grade, posts one step of --groups groups x --rollouts real-size rollouts
   (grading.ingest.demo.make_group: multi-file patches, 8-40 turn trajectories, test
   outcomes and logs), then waits for the step (GET /api/v1/advantages/?wait=) and takes
   its rows. Reported: time from the last byte posted to `final`, the ideal for the LLM
   grader (ceil(mixed groups / total concurrency) x (turns + 1) x delay: the fake server's
   waits alone) and their ratio; the grading span (first job started to last finished, from
   the jobs' own timestamps); the overhead after grading (last verdict stored to the
   trainer seeing `final`), and the export of the step's rows that follows.
(Waiting trainers vs pages, through the shipped deployment: benchmarks/waiters.py.)
Goals (the training-loop issue): LLM >= 80 % of ideal with <= 5 s overhead; heuristic final <= 15 s after the post.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import (
    cpu_model,
    database_urls,
    free_port,
    load_average,
    memory_gib,
    postgres_version,
    recreate_database,
    service_env,
    stop_server,
    usable_cores,
    wait_until_healthy,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "client"))

import psycopg  # noqa: E402

from gagar_client import Client  # noqa: E402
from grading.ingest.demo import make_group  # noqa: E402  (pure, no Django)
from tests.helpers.fake_openai import FakeOpenAI, scripted_model  # noqa: E402

PYTHON = sys.executable
DB_NAME = "gagar_bench_training_loop"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", type=int, default=512)
    p.add_argument("--rollouts", type=int, default=16)
    p.add_argument("--backend", choices=["both", "llm", "heuristic"], default="both")
    p.add_argument("--turns", type=int, default=20, help="the fake grader's tool calls per group before its verdict")
    p.add_argument("--delay", type=float, default=0.05, help="seconds the fake server waits before each answer")
    p.add_argument("--workers", type=int, default=2, help="Celery worker processes")
    p.add_argument("--concurrency", type=int, default=16, help="threads per Celery worker")
    p.add_argument("--web-workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=16, help="gunicorn threads per web worker")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--database", default=DB_NAME, help="created and dropped by this script")
    p.add_argument("--keep", action="store_true", help="keep the database")
    return p.parse_args()


def _serve_fake(turns: int, delay: float, ports, stop) -> None:
    server = FakeOpenAI(responder=scripted_model(turns), delay=delay, record=False).start()
    ports.put(int(server.base_url.rsplit(":", 1)[1].split("/")[0]))
    stop.wait()
    server.stop()


def manage(env: dict, *args: str) -> str:
    return subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout


def grading_span(db_url: str, run: str) -> tuple[float, float, int, int]:
    """(seconds from the first job started to the last finished, the last finish as a Unix time,
    jobs, valid verdicts) of a run."""
    with psycopg.connect(db_url) as conn:
        first, last, jobs = conn.execute(
            "SELECT min(j.started_at), max(j.finished_at), count(*) FROM grading_gradingjob j "
            "JOIN grading_group g ON g.id = j.group_id JOIN grading_run r ON r.id = g.run_id WHERE r.name = %s",
            [run],
        ).fetchone()
        valid = conn.execute(
            "SELECT count(*) FROM grading_verdict v JOIN grading_group g ON g.id = v.group_id JOIN grading_run r ON "
            "r.id = g.run_id "
            "WHERE r.name = %s AND v.status = 'valid'",
            [run],
        ).fetchone()[0]
    span = (last - first).total_seconds() if first and last else 0.0
    return span, last.timestamp() if last else 0.0, jobs, valid


def play_step(gagar: Client, db_url: str, *, backend: str, groups: list[dict], args) -> dict:
    run = f"loop-{backend}"
    gagar.create_run(run, auto_grade=backend, grading_deadline_seconds=3600)
    batch = [dict(g, run=run) for g in groups]
    started = time.perf_counter()
    report = gagar.post_step(run, 1, batch)
    posted = time.perf_counter()
    rows = gagar.wait_for_step(run, 1, timeout=3600, min_interval=0.2)
    final, final_wall = time.perf_counter(), time.time()
    taken_started = time.perf_counter()
    again = gagar.advantage_rows(run, 1, inputs_version=rows.inputs_version)
    taken = time.perf_counter() - taken_started
    status = gagar.step_status(run, 1)
    span, last_verdict, jobs, valid = grading_span(db_url, run)
    assert status["final"] and len(again) == len(rows) == len(groups) * args.rollouts, (status, len(rows))
    return {
        "backend": backend,
        "post_s": posted - started,
        "final_s": final - posted,
        "span_s": span,
        "jobs": jobs,
        "tail_s": final_wall - last_verdict,
        "valid": valid,
        "mixed": status["mixed"],
        "fallback": status["fallback"],
        "queued": report["grading"]["queued"],
        "export_s": taken,
        "rows": len(rows),
    }


def main() -> None:
    args = parse_args()
    admin_url, db_url = database_urls(args.database)
    recreate_database(admin_url, args.database)
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/13")
    ctx = multiprocessing.get_context("fork")
    ports, stop_fake = ctx.Queue(), ctx.Event()
    fake = ctx.Process(target=_serve_fake, args=(args.turns, args.delay, ports, stop_fake), daemon=True)
    fake.start()
    fake_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
    env = service_env(db_url) | {
        "CELERY_BROKER_URL": broker,
        "GRADER_BASE_URL": fake_url,
        "GRADER_MODEL": "fake",
        "GRADER_API_KEY": "bench",
        "GRADER_ALLOW_PRIVATE_NETWORK": "true",
        "GRADER_MAX_TURNS": str(args.turns + 4),
    }
    logs = Path(tempfile.mkdtemp(prefix="gagar-loop-"))
    processes = []
    try:
        manage(env, "migrate", "--no-input", "-v0")
        subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], check=False, capture_output=True)
        token = manage(
            env, "create_api_token", "bench-trainer", "--project", "bench", "--create-project", "--role", "admin"
        ).strip()
        port = free_port()
        web = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "gunicorn",
                "gagar_web.wsgi",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(args.web_workers),
                "--worker-class",
                "gthread",
                "--threads",
                str(args.threads),
                "--timeout",
                "600",
            ],
            cwd=ROOT,
            env=env,
            stdout=open(logs / "web.log", "w"),
            stderr=subprocess.STDOUT,
        )
        processes.append(web)
        for n in range(args.workers):
            processes.append(
                subprocess.Popen(
                    [
                        PYTHON,
                        "-m",
                        "celery",
                        "-A",
                        "gagar_web",
                        "worker",
                        "--pool",
                        "threads",
                        "--concurrency",
                        str(args.concurrency),
                        "--hostname",
                        f"bench{n}@%h",
                        "--loglevel",
                        "WARNING",
                        "--without-gossip",
                        "--without-mingle",
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=open(logs / f"worker{n}.log", "w"),
                    stderr=subprocess.STDOUT,
                )
            )
        wait_until_healthy(web, port)
        base = f"http://127.0.0.1:{port}"
        gagar = Client(base, token, project="bench", timeout=600)
        rng = random.Random(args.seed)
        groups = [make_group(rng, run="x", step=1, task_number=t, n_rollouts=args.rollouts) for t in range(args.groups)]
        body_mb = sum(len(str(g)) for g in groups) / 1e6
        results = [
            play_step(gagar, db_url, backend=b, groups=groups, args=args)
            for b in (["heuristic", "llm"] if args.backend == "both" else [args.backend])
        ]
    finally:
        for process in processes:
            stop_server(process)
        stop_fake.set()
        fake.join(10)
        if not args.keep:
            recreate_database(admin_url, args.database, drop_only=True)

    concurrency = args.workers * args.concurrency
    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, {memory_gib()} RAM, load {load_average():.2f}; Python "
        f"{platform.python_version()}, PostgreSQL {postgres_version(admin_url)}, Redis broker; gunicorn {args.web_workers} x "
        f"{args.threads} threads, {args.workers} Celery workers x {args.concurrency} threads"
    )
    print(
        f"Step: {args.groups} groups x {args.rollouts} rollouts (~{body_mb:.0f} MB of group JSON); fake LLM: {args.turns} tool "
        f"turns + verdict, {args.delay * 1000:.0f} ms each"
    )
    print()
    print(
        "| Backend | mixed groups | post (s) | last byte -> final (s) | ideal (s) | ideal / actual | grading span (s) | "
        "last verdict -> final seen (s) | export (s) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        # The fake server's waits alone: rounds of `concurrency` groups, each (turns + 1) answers long.
        ideal = math.ceil(r["mixed"] / concurrency) * (args.turns + 1) * args.delay if r["backend"] == "llm" else None
        ideal_s = f"{ideal:.1f}" if ideal else "–"
        ratio = f"{ideal / r['final_s']:.0%}" if ideal else "–"
        print(
            f"| {r['backend']} | {r['mixed']} ({r['valid']} valid, {r['fallback']} fell back) | {r['post_s']:.1f} | "
            f"{r['final_s']:.1f} | {ideal_s} | {ratio} | {r['span_s']:.1f} | {r['tail_s']:.2f} | {r['export_s']:.2f} |"
        )
    print(
        "\nGrading starts while the step is still arriving (each ingest batch queues its groups at commit), so the "
        "grading span overlaps the post; 'last verdict -> final seen' is the overhead after grading (recomputation, "
        "the wait's poll, the answer)."
    )
    print(f"\nLogs: {logs}")


if __name__ == "__main__":
    main()
