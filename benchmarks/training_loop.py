#!/usr/bin/env python
"""The training loop, end to end: post a step, wait until it is final, take the advantages.

    .venv/bin/python benchmarks/training_loop.py                      # 512 groups x 16 rollouts, both backends
    .venv/bin/python benchmarks/training_loop.py --groups 128 --backend heuristic

1. Creates a fresh PostgreSQL database (dropped at the end) on the server DATABASE_URL names
   (default postgres://postgres@127.0.0.1:5432), migrates it, and makes an admin token.
2. Starts, as separate processes: gunicorn (gthread, --web-workers x --threads), two Celery
   grading workers (--workers, each on the gevent pool of --concurrency greenlets on the
   grading queue as `docker/start.sh grader` runs it, with a thread worker for the default
   queue; or --pool threads, each taking both queues; connections from a pool of --db-pool)
   on Redis (CELERY_BROKER_URL, default redis://127.0.0.1:6379/13), and tests/helpers/fake_openai.py answering every chat
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
   trainer seeing `final`), and the export of the step's rows that follows. Sampled while the
   step is graded: conversations in flight (jobs `running`) per grading worker process, their
   CPU time per model call, their RSS (start -> peak, and the growth per conversation in
   flight) and their database connections.
(Waiting trainers vs pages, through the shipped deployment: benchmarks/waiters.py.)
Goals (the training-loop issue): LLM >= 80 % of ideal with <= 5 s overhead; heuristic final <= 15 s after the post.

    .venv/bin/python benchmarks/training_loop.py --paper              # 392, 784 and 1,568 groups x 16, ~170 kB each

--paper, the method's step: the step is written to disk first (benchmarks/_real_step.py: rollouts
built from the vendored real trajectories, ~4.3 GB of JSON Lines at 1,568 groups) and COPYed,
each size's prefix alone, into a one-column jsonb table for the baseline. Then one run per
size: the trainer reads the file a batch at a time (--batch groups, never the step whole) and
posts each batch as it would when those rollouts finish; the LLM backend grades against the
fake server at --delay seconds a call (default 1 s, 20 calls a group); the search index is
built by a worker after each post (GAGAR_SEARCH_INDEX=task); the run's own deadline applies.
Reported per size: post MB/s and its ratio to COPY (goal >= 0.5), grading time against the
ideal for the slots when groups arrive over the post (goal >= 80 %), the most conversations
in flight, last verdict -> final seen (goal <= 5 s), what the trainer waits after its last
post, each service process's peak RSS (flat as the step grows) and the database's peak
connections.
"""

from __future__ import annotations

import argparse
import heapq
import math
import multiprocessing
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _real_step import read_groups, write_step
from _support import (
    celery_worker,
    copy_baseline,
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
from grading.jobs.worker import GREEN_ENV  # noqa: E402  (reads no settings on import)
from tests.helpers.fake_openai import FakeOpenAI, scripted_model  # noqa: E402

PYTHON = sys.executable
DB_NAME = "gagar_bench_training_loop"
WORKER_APP = "gagar-bench-worker"
DEFAULT_QUEUE, GRADING_QUEUE = "celery", "grading"  # settings.CELERY_TASK_ROUTES
MB = 1_000_000


# --paper: one step of the method's industrial runs (1,568 prompts x 16 rollouts of 47k-114k
# tokens), graded by the LLM backend at a real model's pace, in three sizes to show memory flat.
PAPER = {
    "sizes": "392,784,1568",
    "rollouts": 16,
    "rollout_kb": 170.0,
    "backend": "llm",
    "turns": 19,  # + the verdict: 20 calls a group
    "delay": 1.0,
    "workers": 1,
    "concurrency": 256,
    "batch": 16,
}
ORDINARY = {
    "sizes": "512",
    "rollouts": 16,
    "rollout_kb": None,
    "backend": "both",
    "turns": 20,
    "delay": 0.05,
    "workers": 2,
    "concurrency": 16,
    "batch": 0,
}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "--paper",
        action="store_true",
        help="the method's step size: real-length rollouts streamed from disk in batches, the LLM grader at 1 s a "
        "call (defaults: " + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in PAPER.items()) + ")",
    )
    p.add_argument("--groups", type=int, help="groups in the step (default 512; --paper: --sizes)")
    p.add_argument(
        "--mixed",
        type=int,
        help="instead of --groups: as many groups as it takes for this many to be mixed (only mixed groups are graded, "
        "so --concurrency conversations in flight need at least that many)",
    )
    p.add_argument("--sizes", help="comma-separated step sizes in groups, one step each on the same services")
    p.add_argument("--rollouts", type=int)
    p.add_argument("--rollout-kb", type=float, help="--paper: average size of one rollout's JSON, kB")
    p.add_argument("--batch", type=int, help="--paper: groups a POST (the trainer posts as rollouts finish)")
    p.add_argument("--backend", choices=["both", "llm", "heuristic"])
    p.add_argument("--turns", type=int, help="the fake grader's tool calls per group before its verdict")
    p.add_argument("--delay", type=float, help="seconds the fake server waits before each answer")
    p.add_argument("--workers", type=int, help="Celery worker processes that grade")
    p.add_argument("--concurrency", type=int, help="conversations (pool slots) per grading worker")
    p.add_argument(
        "--pool",
        choices=["gevent", "threads"],
        default="gevent",
        help="the grading workers' Celery pool: gevent on the grading queue, as `docker/start.sh grader` runs it (a "
        "thread worker takes the default queue), or threads taking both queues",
    )
    p.add_argument(
        "--db-pool",
        type=int,
        default=8,
        help="DATABASE_POOL_SIZE of each grading worker (0: a persistent connection per thread or greenlet)",
    )
    p.add_argument("--web-workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=16, help="gunicorn threads per web worker")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--database", default=DB_NAME, help="created and dropped by this script")
    p.add_argument("--keep", action="store_true", help="keep the database")
    args = p.parse_args()
    for key, value in (PAPER if args.paper else ORDINARY).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.groups is not None:
        args.sizes = str(args.groups)
    args.sizes = [int(n) for n in str(args.sizes).split(",")]
    if args.mixed is not None and (args.paper or args.groups is not None):
        p.error("--mixed sizes the ordinary step: not with --paper or --groups")
    if args.paper and args.backend == "both":
        p.error("--paper grades with one backend: --backend llm or heuristic")
    return args


def _serve_fake(turns: int, delay: float, ports, stop) -> None:
    server = FakeOpenAI(responder=scripted_model(turns), delay=delay, record=False).start()
    ports.put(int(server.base_url.rsplit(":", 1)[1].split("/")[0]))
    stop.wait()
    server.stop()


def is_mixed(group: dict) -> bool:
    """Whether ingest will store `group` as mixed (a pass and a failure among its rollouts: it is graded)."""
    rewards = {r["reward"] > 0 for r in group["rollouts"]}
    return rewards == {True, False}


def step_groups(rng: random.Random, args) -> list[dict]:
    """The step's groups: --groups of them, or with --mixed as many as it takes for that many to be mixed."""
    groups: list[dict] = []
    while len(groups) < args.sizes[0] if args.mixed is None else sum(map(is_mixed, groups)) < args.mixed:
        groups.append(make_group(rng, run="x", step=1, task_number=len(groups), n_rollouts=args.rollouts))
    return groups


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


class ConversationSampler(threading.Thread):
    """Every 0.25 s while a step is graded (not --paper: its Sampler below keeps its own peaks):
    the grading workers' RSS and CPU time (/proc), the grading jobs `running` (conversations in
    flight) and the workers' database connections (pg_stat_activity, by application_name)."""

    def __init__(self, db_url: str, pids: list[int]) -> None:
        super().__init__(daemon=True)
        self.db_url, self.pids = db_url, pids
        self.stop = threading.Event()
        self.rss_start = [_rss_mib(pid) for pid in self.pids]
        self.cpu_start = [cpu_seconds(pid) for pid in self.pids]
        self.rss_peak = list(self.rss_start)
        self.running_peak = self.connections_peak = 0

    def run(self) -> None:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while not self.stop.wait(0.25):
                running = conn.execute("SELECT count(*) FROM grading_gradingjob WHERE status = 'running'").fetchone()[0]
                connections = conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = %s",
                    [WORKER_APP],
                ).fetchone()[0]
                self.running_peak = max(self.running_peak, running)
                self.connections_peak = max(self.connections_peak, connections)
                self.rss_peak = [max(peak, _rss_mib(pid)) for peak, pid in zip(self.rss_peak, self.pids, strict=True)]

    def finish(self) -> dict:
        self.stop.set()
        self.join(10)
        return {
            "cpu_s": sum(cpu_seconds(pid) - start for pid, start in zip(self.pids, self.cpu_start, strict=True)),
            "rss_start_mib": max(self.rss_start),
            "rss_peak_mib": max(self.rss_peak),
            "rss_growth_mib": max(peak - start for peak, start in zip(self.rss_peak, self.rss_start, strict=True)),
            "in_flight": self.running_peak,
            "connections": self.connections_peak,
        }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def model_calls(db_url: str, run: str) -> int:
    """HTTP calls to the model server the run's conversations made (retries included)."""
    with psycopg.connect(db_url) as conn:
        return conn.execute(
            "SELECT coalesce(sum((j.usage->>'api_calls')::int), 0) FROM grading_gradingjob j JOIN grading_group g "
            "ON g.id = j.group_id JOIN grading_run r ON r.id = g.run_id WHERE r.name = %s",
            [run],
        ).fetchone()[0]


def play_step(gagar: Client, db_url: str, *, backend: str, groups: list[dict], args, workers: list[int]) -> dict:
    run = f"loop-{backend}"
    gagar.create_run(run, auto_grade=backend, grading_deadline_seconds=3600)
    batch = [dict(g, run=run) for g in groups]
    sampler = ConversationSampler(db_url, workers)
    sampler.start()
    started = time.perf_counter()
    report = gagar.post_step(run, 1, batch)
    posted = time.perf_counter()
    rows = gagar.wait_for_step(run, 1, timeout=3600, min_interval=0.2)
    final, final_wall = time.perf_counter(), time.time()
    sampled = sampler.finish()
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
        "calls": model_calls(db_url, run),
        **sampled,
    }


# --- the paper-size step ------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(c) for c in children)
    return out


TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int, *, children: bool = True) -> float:
    """CPU seconds (user + system) `pid` used, with its waited-for children's when `children`."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    used = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return used / TICKS


def _machine_cpu_s() -> float:
    """CPU seconds every process on the machine has used since boot (busy time of all cores)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / TICKS


def cpu_by_role(roles: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds so far of each role's processes (with their children), and the machine's."""
    out = {role: sum(_cpu_s(m) for pid in pids for m in _descendants(pid)) for role, pids in roles.items()}
    out["trainer"] = _cpu_s(os.getpid(), children=False)  # this process alone: the others are its children
    out["machine"] = _machine_cpu_s()
    return out


def _rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Sampler(threading.Thread):
    """Every half second: each service process's RSS (gunicorn's workers and the Celery workers
    with their children, one by one) and the database's connections; the peaks of each phase
    (`phase()` starts one)."""

    def __init__(self, roles: dict[str, list[int]], db_url: str, database: str, every: float = 0.5):
        super().__init__(daemon=True)
        self.roles, self.db_url, self.database, self.every = roles, db_url, database, every
        self._done, self._lock = threading.Event(), threading.Lock()
        self._peaks: dict[str, float] = {}
        # CPU is counted for the fake model server and the trainer too: on this machine they
        # take cores a real deployment's model and trainer would not.
        self.cpu_roles = dict(roles)

    def phase(self) -> dict[str, float]:
        """The peaks since the last call, and the CPU seconds each role used meanwhile (keys
        `cpu:<role>`, `cpu:machine` for every process on the machine); starts the next phase."""
        cpu = cpu_by_role(self.cpu_roles)
        with self._lock:
            peaks, self._peaks = self._peaks, {}
        before, self._cpu = getattr(self, "_cpu", cpu), cpu
        return peaks | {f"cpu:{role}": cpu[role] - before[role] for role in cpu}

    def _note(self, key: str, value: float) -> None:
        with self._lock:
            self._peaks[key] = max(self._peaks.get(key, 0.0), value)

    def run(self) -> None:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while not self._done.wait(self.every):
                for role, pids in self.roles.items():
                    for pid in pids:
                        for member in _descendants(pid):
                            if role == "web" and member == pid:
                                continue  # gunicorn's arbiter serves nothing
                            self._note(role, _rss_mib(member))
                (connections,) = conn.execute(
                    "SELECT count(*) - 1 FROM pg_stat_activity WHERE datname = %s", [self.database]
                ).fetchone()
                self._note("connections", connections)

    def stop(self) -> None:
        self._done.set()
        self.join(10)


def ideal_finish(arrivals: list[float], servers: int, service: float) -> float:
    """When the last group would finish if every group, from the moment it is queued, took
    `service` seconds on one of `servers` slots, first come first served: the fake model's
    waits alone, for groups that arrive over the post."""
    free = [0.0] * servers
    end = 0.0
    for at in sorted(arrivals):
        start = max(at, heapq.heappop(free))
        heapq.heappush(free, start + service)
        end = max(end, start + service)
    return end


def most_in_flight(spans: list[tuple[float, float]]) -> int:
    """The most intervals open at once (a conversation is in flight from start to finish)."""
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    now = best = 0
    for _, change in events:
        now += change
        best = max(best, now)
    return best


def paper_jobs(db_url: str, run: str) -> tuple[list[float], list[tuple[float, float]]]:
    """Of a run's grading jobs: their queue times and their (start, finish) times, Unix seconds."""
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT j.queued_at, j.started_at, j.finished_at FROM grading_gradingjob j "
            "JOIN grading_group g ON g.id = j.group_id JOIN grading_run r ON r.id = g.run_id WHERE r.name = %s",
            [run],
        ).fetchall()
    queued = [q.timestamp() for q, _, _ in rows if q]
    spans = [(a.timestamp(), b.timestamp()) for _, a, b in rows if a and b]
    return queued, spans


def play_paper_step(
    gagar: Client, db_url: str, sampler: Sampler, *, step_file: Path, groups: int, nbytes: int, copy_s: float, args
) -> dict:
    """Post the first `groups` of the step file in batches, as a trainer does while its rollouts
    finish, wait for the step's final advantages, and take them."""
    run = f"paper-{groups}"
    gagar.create_run(run, auto_grade=args.backend)  # the policy's own deadline
    sampler.phase()
    started = time.perf_counter()
    for batch in read_groups(step_file, groups, args.batch):
        gagar.post_step(run, 1, batch, compress=False)  # loopback: gzip would only cost both ends CPU
    posted, posted_wall = time.perf_counter(), time.time()
    rows = gagar.wait_for_step(run, 1, timeout=3600, min_interval=0.5)
    final, final_wall = time.perf_counter(), time.time()
    status = gagar.step_status(run, 1)
    peaks = sampler.phase() | {"wall_s": time.perf_counter() - started}
    queued, spans = paper_jobs(db_url, run)
    with psycopg.connect(db_url) as conn:
        (backlog,) = conn.execute("SELECT count(*) FROM grading_searchbacklog").fetchone()
        # The index yields to posts (GAGAR_SEARCH_INDEX_SHARE) and catches up after them.
        while conn.execute("SELECT EXISTS (SELECT FROM grading_searchbacklog)").fetchone()[0]:
            time.sleep(0.5)
        searchable = time.perf_counter()
    assert status["final"] and len(rows) == groups * args.rollouts, (status, len(rows))
    service = (args.turns + 1) * args.delay
    first = min(queued) if queued else posted_wall
    ideal_end = ideal_finish(queued, args.workers * args.concurrency, service) if queued else first
    last = max(b for _, b in spans) if spans else posted_wall
    return {
        "groups": groups,
        "mixed": status["mixed"],
        "graded": status["graded"],
        "fallback": status["fallback"],
        "mb": nbytes / MB,  # the step file's lines, as COPY took them (the posts add run and step)
        "post_s": posted - started,
        "copy_s": copy_s,
        "grading_s": last - first,
        "ideal_s": ideal_end - first,
        "in_flight": most_in_flight(spans),
        "tail_s": final_wall - last,
        "after_post_s": final - posted,
        "backlog": backlog,
        "searchable_s": searchable - posted,
        "peaks": peaks,
    }


def print_paper(results: list[dict], args) -> None:
    print(
        f"Steps: {', '.join(str(r['groups']) for r in results)} groups x {args.rollouts} real-length rollouts "
        f"(~{args.rollout_kb:.0f} kB each), posted {args.batch} groups a request; fake LLM: {args.turns} tool calls + "
        f"the verdict, {args.delay:.2f} s each; GAGAR_SEARCH_INDEX={args.search_index} "
        f"(SHARE {args.search_share} %), "
        f"GAGAR_HIGHLIGHT_AHEAD={args.highlight_ahead}, checks off"
    )
    print()
    print(
        "| groups (mixed) | MB | post MB/s | COPY MB/s | post / COPY | graded / fell back | grading (s) | ideal (s) | "
        "ideal / actual | in flight | last verdict -> final seen (s) | trainer waits after its last post (s) | "
        "peak RSS web / grading worker (MiB) | peak DB connections | search backlog at final | "
        "all searchable after the last post (s) |"
    )
    print("|" + "---:|" * 16)
    for r in results:
        post_rate, copy_rate = r["mb"] / r["post_s"], r["mb"] / r["copy_s"]
        ratio = r["ideal_s"] / r["grading_s"] if r["grading_s"] else 0.0
        peaks = r["peaks"]
        cells = [
            f"{r['groups']} ({r['mixed']})",
            f"{r['mb']:,.0f}",
            f"{post_rate:.1f}",
            f"{copy_rate:.1f}",
            f"{post_rate / copy_rate:.2f}",
            f"{r['graded']} / {r['fallback']}",
            f"{r['grading_s']:.0f}",
            f"{r['ideal_s']:.0f}",
            f"{ratio:.0%}",
            str(r["in_flight"]),
            f"{r['tail_s']:.2f}",
            f"{r['after_post_s']:.1f}",
            f"{peaks.get('web', 0):.0f} / {peaks.get('grading worker', 0):.0f}",
            f"{peaks.get('connections', 0):.0f}",
            f"{r['backlog']:,}",
            f"{r['searchable_s']:.1f}",
        ]
        print("| " + " | ".join(cells) + " |")
    roles = ["web", "grading worker", "other worker", "fake model", "trainer"]
    print("\nWhere the cores went, CPU seconds from the first post to the final advantages (share of the machine's):\n")
    print("| groups | wall (s) | cores busy | " + " | ".join(roles) + " | the rest (PostgreSQL, Redis, kernel) |")
    print("|" + "---:|" * (len(roles) + 4))
    for r in results:
        p = r["peaks"]
        machine = p.get("cpu:machine", 0.0) or 1e-9
        known = sum(p.get(f"cpu:{role}", 0.0) for role in roles)
        cells = [f"{p.get(f'cpu:{role}', 0.0):.0f} ({p.get(f'cpu:{role}', 0.0) / machine:.0%})" for role in roles]
        rest = f"{machine - known:.0f} ({(machine - known) / machine:.0%})"
        print(f"| {r['groups']} | {p['wall_s']:.0f} | {machine / p['wall_s']:.2f} | " + " | ".join(cells) + f" | {rest} |")
    print(
        "\nideal: every group graded in (calls x delay) seconds from the moment it was queued, on "
        f"{args.workers * args.concurrency} slots, first come first served (the fake model's waits alone); 'in flight': "
        "the most grading conversations open at once (the jobs' start and finish times)."
    )


def start_services(args, env: dict, logs: Path) -> tuple[list[subprocess.Popen], dict[str, list[int]], int]:
    """gunicorn and the Celery workers; (processes, their pids by role, the web port)."""
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
    processes, roles = [web], {"web": [web.pid], "grading worker": []}
    grading_env = env | {
        "DATABASE_URL": f"{env['DATABASE_URL']}?application_name={WORKER_APP}",  # told apart in pg_stat_activity
        "DATABASE_POOL_SIZE": str(args.db_pool),
    }
    grading_env |= GREEN_ENV if args.pool == "gevent" else {}
    # gevent: the grading workers take the grading queue only and a thread worker the rest
    # (recomputations, the search index), as deployed; threads: every worker takes both.
    queues = [GRADING_QUEUE] if args.pool == "gevent" else [DEFAULT_QUEUE, GRADING_QUEUE]
    for n in range(args.workers):
        worker = celery_worker(f"bench{n}", args.pool, args.concurrency, queues, grading_env, logs)
        processes.append(worker)
        roles["grading worker"].append(worker.pid)
    if args.pool == "gevent":
        rest = celery_worker("rest", "threads", 4, [DEFAULT_QUEUE], env, logs)
        processes.append(rest)
        roles["other worker"] = [rest.pid]
    wait_until_healthy(web, port)
    return processes, roles, port


def main() -> None:
    args = parse_args()
    admin_url, db_url = database_urls(args.database)
    recreate_database(admin_url, args.database)
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/13")
    workdir = Path(tempfile.mkdtemp(prefix="gagar-loop-"))
    step_file = None
    if args.paper:  # on disk before anything starts: generating is the trainer's work, not the service's
        step_file = workdir / "step.jsonl"
        started = time.perf_counter()
        made = write_step(
            step_file,
            groups=max(args.sizes),
            rollouts=args.rollouts,
            rollout_bytes=int(args.rollout_kb * 1000),
            seed=args.seed,
        )
        print(
            f"generated {made['groups']} groups x {args.rollouts} rollouts, {made['ends'][-1] / MB:,.0f} MB, "
            f"average rollout {made['avg_rollout_bytes'] / 1000:.0f} kB ({time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        copies = {n: copy_baseline(db_url, step_file, n, nbytes=made["ends"][n - 1]) for n in args.sizes}
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
    if args.paper:
        env.setdefault("GAGAR_SEARCH_INDEX", "task")  # the index on, as deployed: built by a worker after each post
        args.search_index = env["GAGAR_SEARCH_INDEX"]
        args.search_share = env.setdefault("GAGAR_SEARCH_INDEX_SHARE", "25")  # the setting's default
        args.highlight_ahead = env.get("GAGAR_HIGHLIGHT_AHEAD", "true")
    processes: list[subprocess.Popen] = []
    try:
        manage(env, "migrate", "--no-input", "-v0")
        subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], check=False, capture_output=True)
        token = manage(
            env, "create_api_token", "bench-trainer", "--project", "bench", "--create-project", "--role", "admin"
        ).strip()
        processes, roles, port = start_services(args, env, workdir)
        gagar = Client(f"http://127.0.0.1:{port}", token, project="bench", timeout=600)
        if args.paper:
            assert step_file is not None  # written above under the same condition
            sampler = Sampler(roles, db_url, args.database)
            sampler.cpu_roles["fake model"] = [fake.pid]
            sampler.start()
            results = [
                play_paper_step(
                    gagar,
                    db_url,
                    sampler,
                    step_file=step_file,
                    groups=n,
                    nbytes=made["ends"][n - 1],
                    copy_s=copies[n],
                    args=args,
                )
                for n in args.sizes
            ]
            sampler.stop()
        else:
            rng = random.Random(args.seed)
            groups = step_groups(rng, args)
            args.sizes = [len(groups)]
            body_mb = sum(len(str(g)) for g in groups) / 1e6
            results = [
                play_step(gagar, db_url, backend=b, groups=groups, args=args, workers=roles["grading worker"])
                for b in (["heuristic", "llm"] if args.backend == "both" else [args.backend])
            ]
    finally:
        for process in processes:
            stop_server(process)
        stop_fake.set()
        fake.join(10)
        if step_file is not None:
            step_file.unlink(missing_ok=True)
        if not args.keep:
            recreate_database(admin_url, args.database, drop_only=True)

    concurrency = args.workers * args.concurrency
    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, {memory_gib()} RAM, load {load_average():.2f}; Python "
        f"{platform.python_version()}, PostgreSQL {postgres_version(admin_url)}, Redis broker; gunicorn {args.web_workers} x "
        f"{args.threads} threads, {args.workers} Celery grading worker(s) x {args.concurrency} ({args.pool} pool, "
        f"DATABASE_POOL_SIZE {args.db_pool})"
    )
    if args.paper:
        print_paper(results, args)
    else:
        print_ordinary(results, args, body_mb, concurrency)
    print(f"\nLogs: {workdir}")


def print_ordinary(results: list[dict], args, body_mb: float, concurrency: int) -> None:
    print(
        f"Step: {args.sizes[0]} groups x {args.rollouts} rollouts (~{body_mb:.0f} MB of group JSON); fake LLM: {args.turns} "
        f"tool turns + verdict, {args.delay * 1000:.0f} ms each"
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
    print()
    print(
        "| Backend | conversations in flight per worker process (peak) | worker CPU per model call (ms) | "
        "worker RSS: start -> peak (MiB) | RSS per conversation in flight (KiB) | workers' database connections (peak) |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        per_process = r["in_flight"] / args.workers
        per_call = f"{r['cpu_s'] / r['calls'] * 1000:.2f} ({r['calls']} calls)" if r["calls"] else "–"
        per_conversation = f"{r['rss_growth_mib'] * 1024 / per_process:.0f}" if r["calls"] and per_process else "–"
        print(
            f"| {r['backend']} | {per_process:.0f} | {per_call} | {r['rss_start_mib']:.0f} -> {r['rss_peak_mib']:.0f} | "
            f"{per_conversation} | {r['connections']} |"
        )
    print(
        "\nGrading starts while the step is still arriving (each ingest batch queues its groups at commit), so the "
        "grading span overlaps the post; 'last verdict -> final seen' is the overhead after grading (recomputation, "
        "the wait's poll, the answer)."
    )


if __name__ == "__main__":
    main()
