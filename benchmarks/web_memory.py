#!/usr/bin/env python
"""The web workers' memory as a step grows: peak RSS per gunicorn worker for a trainer's posts
and for the step's export, at three step sizes: nothing may be held in proportion to a step.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres CELERY_BROKER_URL=redis://127.0.0.1:6379/10 \\
        .venv/bin/python benchmarks/web_memory.py --before <rev> [--arena-max 2]

1. Writes two steps to disk (benchmarks/_real_step.py): real-length rollouts (--rollout-kb,
   ~170 kB) for the posts, and short ones (--export-rollout-kb) for the exports, whose size is
   the step's rows, not the rollouts' length (a post is the batch's size whatever the step).
2. Per variant (this checkout; with --before REV, the code at REV, from a temporary git
   worktree; with --arena-max N, this checkout with MALLOC_ARENA_MAX=N): a fresh database
   (created and dropped here, --database), gunicorn as docker/start.sh starts it (gthread,
   --web-workers x --threads) and a Redis broker with no worker (queued tasks wait there: the
   web workers' own memory alone). Then, one after the other in the same processes, as a
   training run's steps come:
   - post: per size in --post-sizes, a run whose step the real client (gagar_client) posts
     --batch groups a request, no gzip;
   - export: per size in --export-sizes, a run whose step is posted, then (measured) its
     JSON Lines export is taken by the client (GET /api/v1/advantages/?run=&step=: the step is
     computed and its bytes stored and served).
   Each phase starts with each worker's peak RSS reset (/proc/<pid>/clear_refs 5); reported
   per worker: RSS before -> peak (VmHWM) -> RSS after, MiB. With --trace, each worker runs
   tracemalloc and logs each request's peak of live Python memory (a gunicorn config file
   written here; slow), printed as the largest per phase: live objects vs what the allocator
   keeps.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _real_step import read_groups, write_step
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

from gagar_client import Client  # noqa: E402

PYTHON = sys.executable
DB_NAME = "gagar_bench_web_memory"
MB, MIB = 1_000_000, 1024 * 1024

# A gunicorn config (--trace): each worker traces Python allocations and logs, per request,
# the most live memory it held (tracemalloc's peak since the request began).
TRACE_CONFIG = """
import tracemalloc

def post_fork(server, worker):
    tracemalloc.start(1)

def pre_request(worker, req):
    tracemalloc.reset_peak()
    req.traced_start = tracemalloc.get_traced_memory()[0]

def post_request(worker, req, environ, resp):
    current, peak = tracemalloc.get_traced_memory()
    start = getattr(req, "traced_start", 0)
    peak_mib, kept_mib = (peak - start) / 2**20, (current - start) / 2**20
    worker.log.warning("traced %s %s peak_mib=%.1f kept_mib=%.1f", req.method, req.path, peak_mib, kept_mib)
"""


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--post-sizes", default="32,64,128", help="groups in each posted step (real-length rollouts)")
    p.add_argument("--export-sizes", default="392,784,1568", help="groups in each exported step (short rollouts)")
    p.add_argument("--rollouts", type=int, default=16)
    p.add_argument("--rollout-kb", type=float, default=170.0, help="a posted rollout's JSON, kB")
    p.add_argument("--export-rollout-kb", type=float, default=1.0, help="an exported step's rollouts, kB")
    p.add_argument("--batch", type=int, default=16, help="groups a POST")
    p.add_argument("--web-workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--before", metavar="REV", help="also measure the code at REV (a temporary git worktree), first")
    p.add_argument("--arena-max", type=int, help="also measure this checkout with MALLOC_ARENA_MAX set to this")
    p.add_argument("--trace", action="store_true", help="tracemalloc in the workers: live Python memory per request")
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--database", default=DB_NAME, help="created and dropped by this script")
    args = p.parse_args()
    args.post_sizes = [int(n) for n in args.post_sizes.split(",") if n]
    args.export_sizes = [int(n) for n in args.export_sizes.split(",") if n]
    return args


def workers_of(arbiter: int) -> list[int]:
    try:
        return sorted(int(c) for c in Path(f"/proc/{arbiter}/task/{arbiter}/children").read_text().split())
    except OSError:
        return []


def status_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise LookupError(field)


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM back to the current RSS


class Phase:
    """Each worker's RSS before, its peak (VmHWM, reset at the start) and RSS after."""

    def __init__(self, pids: list[int]):
        self.pids = pids
        for pid in pids:
            reset_peak(pid)
        self.before = [status_mib(pid, "VmRSS") for pid in pids]

    def end(self) -> list[tuple[float, float, float]]:
        return [
            (before, status_mib(pid, "VmHWM"), status_mib(pid, "VmRSS"))
            for pid, before in zip(self.pids, self.before, strict=True)
        ]


def traced_peaks(log: Path, start: int) -> tuple[float, int]:
    """The largest per-request traced peak logged after byte `start` of the log; the log's end."""
    text = log.read_bytes()
    peaks = [float(m) for m in re.findall(rb"peak_mib=([0-9.]+)", text[start:])]
    return (max(peaks) if peaks else float("nan")), len(text)


def manage(code: Path, env: dict, *args: str) -> str:
    return subprocess.run([PYTHON, "manage.py", *args], cwd=code, env=env, check=True, capture_output=True, text=True).stdout


def measure(name: str, code: Path, extra_env: dict, args, files: dict, workdir: Path) -> list[dict]:
    admin_url, db_url = database_urls(args.database)
    recreate_database(admin_url, args.database)
    broker = os.environ.get("CELERY_BROKER_URL", "redis://127.0.0.1:6379/10")
    env = service_env(db_url) | {"CELERY_BROKER_URL": broker} | extra_env
    subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], check=False, capture_output=True)
    log = workdir / f"web-{name}.log"
    server = None
    rows: list[dict] = []
    try:
        manage(code, env, "migrate", "--no-input", "-v0")
        token = manage(
            code, env, "create_api_token", "bench-trainer", "--project", "bench", "--create-project", "--role", "admin"
        ).strip()
        port = free_port()
        command = [PYTHON, "-m", "gunicorn", "gagar_web.wsgi", "--bind", f"127.0.0.1:{port}"]
        command += ["--workers", str(args.web_workers), "--worker-class", "gthread", "--threads", str(args.threads)]
        command += ["--timeout", "600"]
        if args.trace:
            config = workdir / "trace_config.py"
            config.write_text(TRACE_CONFIG)
            command += ["-c", str(config)]
        server = subprocess.Popen(command, cwd=code, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
        wait_until_healthy(server, port)
        pids = workers_of(server.pid)
        gagar = Client(f"http://127.0.0.1:{port}", token, project="bench", timeout=600)
        at = 0
        for kind, sizes in (("post", args.post_sizes), ("export", args.export_sizes)):
            step_file = files[kind]
            for n in sizes:
                run = f"{kind}-{n}"
                gagar.create_run(run, auto_grade="none")
                phase = Phase(pids) if kind == "post" else None
                started = time.perf_counter()
                posted = 0
                for batch in read_groups(step_file, n, args.batch):
                    gagar.post_step(run, 1, batch, compress=False)
                    posted += len(batch)
                post_s = time.perf_counter() - started
                if kind == "export":
                    _, at = traced_peaks(log, 0) if args.trace else (0.0, 0)
                    phase = Phase(pids)
                    started = time.perf_counter()
                    got = len(gagar.advantage_rows(run, 1))
                    assert got == n * args.rollouts, (got, n)
                assert phase is not None
                took = time.perf_counter() - started
                traced, at = traced_peaks(log, at) if args.trace else (float("nan"), at)
                rows.append(
                    {"variant": name, "kind": kind, "groups": n, "rows": n * args.rollouts, "s": took, "post_s": post_s}
                    | {"workers": phase.end(), "traced": traced}
                )
                print(f"  {name} {kind} {n} groups: {fmt_workers(rows[-1]['workers'])} ({took:.1f} s)", flush=True)
    finally:
        if server is not None:
            stop_server(server)
        subprocess.run(["redis-cli", "-u", broker, "FLUSHDB"], check=False, capture_output=True)
        recreate_database(admin_url, args.database, drop_only=True)
    return rows


def fmt_workers(workers: list[tuple[float, float, float]]) -> str:
    return " / ".join(f"{b:.0f} -> **{p:.0f}** -> {a:.0f}" for b, p, a in workers)


def worktree(rev: str, workdir: Path) -> Path:
    path = workdir / f"code-{rev}"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(path), rev], check=True, capture_output=True)
    return path


def main() -> None:
    args = parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="gagar-web-memory-"))
    files = {"post": workdir / "post.jsonl", "export": workdir / "export.jsonl"}
    started = time.perf_counter()
    made = {
        "post": write_step(
            files["post"],
            groups=max(args.post_sizes),
            rollouts=args.rollouts,
            rollout_bytes=int(args.rollout_kb * 1000),
            seed=args.seed,
        ),
        "export": write_step(
            files["export"],
            groups=max(args.export_sizes),
            rollouts=args.rollouts,
            rollout_bytes=int(args.export_rollout_kb * 1000),
            seed=args.seed,
        ),
    }
    ends = made["post"]["ends"]
    batch_mb = ends[min(args.batch, len(ends)) - 1] / MB
    print(f"steps written ({time.perf_counter() - started:.0f} s); a post of {args.batch} groups: {batch_mb:.0f} MB", flush=True)
    variants: list[tuple[str, Path, dict]] = []
    trees: list[Path] = []
    try:
        if args.before:
            trees.append(worktree(args.before, workdir))
            variants.append((f"before ({args.before})", trees[-1], {}))
        variants.append(("this checkout", ROOT, {}))
        if args.arena_max:
            variants.append((f"MALLOC_ARENA_MAX={args.arena_max}", ROOT, {"MALLOC_ARENA_MAX": str(args.arena_max)}))
        results = []
        for name, code, extra in variants:
            print(f"{name}:", flush=True)
            results += measure(name, code, extra, args, files, workdir)
    finally:
        for tree in trees:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        shutil.rmtree(workdir, ignore_errors=True)

    admin_url, _ = database_urls(args.database)
    print()
    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, {memory_gib()} RAM, load {load_average():.2f}; Python "
        f"{platform.python_version()}, PostgreSQL {postgres_version(admin_url)}; gunicorn {args.web_workers} x "
        f"{args.threads} threads (gthread); posts of {args.batch} groups x {args.rollouts} rollouts "
        f"(~{batch_mb:.0f} MB), exports of {args.export_rollout_kb:g} kB rollouts"
    )
    print()
    traced = " traced peak over the start (MiB) |" if args.trace else ""
    print(f"| variant | phase | groups | rows | s | RSS per web worker: before -> peak -> after (MiB) |{traced}")
    print("|---|---|---:|---:|---:|---|" + ("---:|" if args.trace else ""))
    for r in results:
        trace_cell = f" {r['traced']:.0f} |" if args.trace else ""
        size = f"{r['groups']:,} | {r['rows']:,} | {r['s']:.1f}"
        print(f"| {r['variant']} | {r['kind']} | {size} | {fmt_workers(r['workers'])} |{trace_cell}")
    print()
    print("peak growth (the largest worker's peak - its RSS before), MiB:")
    for name, _, _ in variants:
        for kind in ("post", "export"):
            mine = [r for r in results if r["variant"] == name and r["kind"] == kind]
            grown = [max(p - b for b, p, _ in r["workers"]) for r in mine]
            peaks = [max(p for _, p, _ in r["workers"]) for r in mine]
            print(
                f"  {name}, {kind}: growth "
                + ", ".join(f"{g:.0f}" for g in grown)
                + "; peak "
                + ", ".join(f"{p:.0f}" for p in peaks)
                + f" at {', '.join(str(r['groups']) for r in mine)} groups"
            )


if __name__ == "__main__":
    main()
