#!/usr/bin/env python
"""Every benchmark, run once at a tiny size: do they still run? (`make bench-smoke`, in CI.)

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres CELERY_BROKER_URL=redis://127.0.0.1:6379/15 \\
        .venv/bin/python benchmarks/smoke.py [name ...]

A benchmark is a script run by hand now and then, so the code it drives can change under
it unnoticed: export.py stopped at its first row after groups gained NOT NULL
columns its COPY did not fill. Here each script runs to its end on a load small enough for
a few seconds, and must exit 0 and print its table. The figures mean nothing at this size
and are not kept. The scripts that need PostgreSQL create and drop their own databases on
the server DATABASE_URL names, named `<its database>_smoke_<script>` here (never the scripts'
own defaults, which a full run may have kept), each a copy of one database migrated first
(`<its database>_smoke_template`); training_loop.py also needs CELERY_BROKER_URL (Redis),
waiters.py Debian's nginx (as tests/hostile/test_proxy.py), llm_server.py the model server
`scripts/llm-server build` makes (the Makefile's bench-smoke builds it first when it is not there).
About three minutes on two cores.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from _support import TEMPLATE_ENV, database_urls, recreate_database  # benchmarks/ is on sys.path

ROOT = Path(__file__).resolve().parent.parent
# <DATABASE_URL's database>_smoke_<script>: two smoke runs on one server (CI's gagar_ci, a
# developer's own) drop none of each other's databases; gagar_smoke_<script> without one.
_OWN = urlparse(os.environ.get("DATABASE_URL", "")).path.strip("/")
PREFIX = f"{_OWN}_smoke" if _OWN and _OWN != "postgres" and "/" not in _OWN else "gagar_smoke"
TEMPLATE = f"{PREFIX}_template"

# name -> (arguments for a tiny load, a piece of the output that only a finished run prints);
# `script:mode` runs benchmarks/<script>.py again in another mode.
RUNS: dict[str, tuple[list[str], str]] = {
    "advantage": (["--groups", "500", "--repeat", "1"], "speed-up of redistribute()"),
    "agreement": (
        ["--groups", "200", "--boot", "20", "--repeat", "1", "--naive-groups", "20", "--naive-boot", "2"],
        "Same figures and intervals",
    ),
    "clusters": (["--demo-steps", "1", "--demo-groups", "2", "--demo-rollouts", "4"], "distinct"),
    "export": (["--steps", "2", "--groups", "20", "--repeat", "1"], "parquet_file()"),
    "grading": (["--groups", "4", "--turns", "3", "--jobs", "2", "--delay", "0.001"], "groups/s"),
    # one fresh server shows both real-size groups: its first page (admin), then a first view (reviewer)
    "group_page": (
        ["--smoke", "--requests", "3", "--warmup", "1", "--first-rounds", "1", "--first-groups", "2", "--rollouts", "4"],
        "p95",
    ),
    "import_formats": (["--instances", "5", "--steps", "2", "--rows", "16", "--group", "4"], "verl      re-import"),
    "import_runs": (["--trajectories", "8", "--runs", "2"], "re-import:"),
    "importer_regex": (["--sizes", "100", "--big", "10000", "--repeat", "1"], "well-formed inputs"),
    "ingest": (["--groups", "3", "--rollouts", "4", "--rollout-kb", "5"], "ratio REST/COPY"),
    "ingest:worker": (["--groups", "3", "--rollouts", "4", "--rollout-kb", "5", "--worker"], "the worker's last scan"),
    "llm_server": (["--slots", "1", "--per-slot", "1", "--turns", "2", "--max-tokens", "8"], "conv/min"),
    "last_verdict": (["--sizes", "4", "--rollouts", "4"], "last verdict -> final rows"),
    "sandbox": (["--files", "200", "--small", "20", "--repeat", "2"], "overhead = median"),
    # 2 steps of 32 groups: ~50 mixed groups, enough for the floors of 50 judgments, 10 adjudications, 10 audits
    "scale": (["--scale", "0.0025", "--groups-per-step", "32", "--requests", "2", "--api-requests", "1"], "judge next group"),
    "scanners": (["--smoke"], "MB/s"),
    "scanners:heldout": (["--smoke", "--heldout"], "MB/s"),
    "scanners:heldout-b": (["--smoke", "--heldout-b"], "MB/s"),
    "scanners:heldout-c": (["--smoke", "--heldout-c"], "MB/s"),
    "scanners:heldout-d": (["--smoke", "--heldout-d"], "MB/s"),
    "search": (["--rollouts", "200", "--repeat", "1", "--ingest-rollouts", "32"], "goal p95"),
    "slow_clients": (["--clients", "1", "--probes", "2", "--workers", "2"], "healthz"),
    "web_memory": (
        [
            *("--post-sizes", "1,2", "--export-sizes", "4,8", "--rollouts", "4", "--rollout-kb", "20", "--batch", "1"),
            *("--web-workers", "1"),
        ],
        "peak growth",
    ),
    "waiters": (["--waiters", "6", "--tokens", "2", "--wait", "10", "--probes", "6"], "goal <= 2x"),
    "workspace": (["--files", "300", "--rollouts", "4"], "disk per group"),
    "training_loop": (
        [
            *("--groups", "4", "--rollouts", "4", "--turns", "3", "--delay", "0.001"),
            *("--concurrency", "2", "--workers", "1", "--web-workers", "1"),
        ],
        "ideal / actual",
    ),
    "training_loop:paper": (
        [
            "--paper",
            *("--sizes", "2,4", "--rollouts", "4", "--rollout-kb", "20", "--batch", "3"),
            *("--turns", "3", "--delay", "0.001", "--concurrency", "4", "--web-workers", "1"),
        ],
        "peak DB connections",
    ),
}
TIMEOUT_S = 600
# Scripts that create a PostgreSQL database get one of their own here, so a smoke run never
# drops a database a full run was asked to keep (--keep) under the script's default name.
OWN_DATABASE = {
    "export",
    "group_page",
    "import_formats",
    "import_runs",
    "ingest",
    "ingest:worker",
    "last_verdict",
    "scale",
    "search",
    "training_loop",
    "training_loop:paper",
    "waiters",
    "web_memory",
}


def main() -> int:
    names = sys.argv[1:] or list(RUNS)
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(RUNS)}", file=sys.stderr)
        return 2
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_")} - {"smoke"}
    missing = sorted(scripts - {name.split(":")[0] for name in RUNS})
    if missing:
        print(f"benchmarks with no smoke run here: {', '.join(missing)} (add them to RUNS)", file=sys.stderr)
        return 2
    env = os.environ.copy()
    template = None
    if any(name in OWN_DATABASE for name in names):
        template, took = TEMPLATE, migrate_template()
        env[TEMPLATE_ENV] = template
        print(f"ok   {'(template)':<16} {took:6.1f} s  migrated {template}; the databases below are copies", flush=True)
    try:
        failed = run_all(names, env)
    finally:
        if template:
            recreate_database(database_urls(template)[0], template, drop_only=True)
    if failed:
        print(f"{len(failed)} of {len(names)} benchmarks failed: {', '.join(failed)}")
        return 1
    print(f"all {len(names)} benchmarks ran")
    return 0


def migrate_template() -> float:
    """Migrate TEMPLATE once (from empty, on DATABASE_URL's server): the scripts' databases are
    made as copies of it (_support.recreate_database), so none spends ~15 s migrating."""
    started = time.perf_counter()
    admin_url, url = database_urls(TEMPLATE)
    env = {k: v for k, v in os.environ.items() if k not in {"CELERY_BROKER_URL", TEMPLATE_ENV}}
    recreate_database(admin_url, TEMPLATE)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
        cwd=ROOT,
        env={**env, "DATABASE_URL": url},
        check=True,
    )
    return time.perf_counter() - started


def run_all(names: list[str], env: dict[str, str]) -> list[str]:
    failed = []
    for name in names:
        args, marker = RUNS[name]
        if name in OWN_DATABASE:
            args = [*args, "--database", f"{PREFIX}_{name.replace(':', '_')}"]
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, str(ROOT / "benchmarks" / f"{name.split(':')[0]}.py"), *args],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as exc:
            output, code = f"{exc.stdout or ''}{exc.stderr or ''}\n(timed out after {TIMEOUT_S} s)", -1
        took = time.perf_counter() - started
        ok = code == 0 and marker in output
        print(f"{'ok  ' if ok else 'FAIL'} {name:<16} {took:6.1f} s", flush=True)
        if not ok:
            reason = f"exit status {code}" if code else f"its output lacks {marker!r}"
            tail = "\n".join(output.strip().splitlines()[-15:])
            print(f"     {reason}; the last lines:\n{tail}\n", flush=True)
            failed.append(name)
    return failed


if __name__ == "__main__":
    sys.exit(main())
