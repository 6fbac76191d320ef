#!/usr/bin/env python
"""Export benchmark: 1M stored `AdvantageResult` rows streamed as JSONL, CSV and Parquet.

    .venv/bin/python benchmarks/export.py                    # 10 steps x 6,250 groups x 16 = 1M rows
    .venv/bin/python benchmarks/export.py --repeat 5 --no-http

1. Creates a fresh PostgreSQL database (dropped again at the end), migrates it, and
   stores a run of `--steps` steps x `--groups` groups x `--size` rollouts: project,
   run and steps through the ORM; tasks, groups, rollouts and the `AdvantageResult`
   rows with psycopg COPY (constraints, indexes and foreign keys in place, as the app
   has them). The numbers in the rows are real: the rollouts of
   benchmarks/advantage.py (random rewards, tiers and ranks with ties, cheats, ungraded
   groups) put through `grading.method.advantage.redistribute`, one mapping (default@1), rows
   inserted step by step in export order as `compute_step` stores them, then
   VACUUM ANALYZE. A `StepComputation` per step marks them current.
2. Times, `--repeat` times interleaved (median reported), in this process:
   `grading.method.export.jsonl_stream(steps, mapping)` and `csv_stream(...)`
   consumed to the end (bytes and lines counted) and `parquet_file(steps, mapping)`
   (the returned file read back with pyarrow to check the row count). For reference, the
   floor: the COPY csv_stream() runs, alone (psycopg, every row discarded, no parsing).
3. Unless --no-http: the same three through GET /api/v1/advantages/?run=…&format=…
   on gunicorn (one sync worker, DJANGO_DEBUG=false) with a trainer token, body read
   over loopback in 1 MB blocks.
4. Prints the machine and a table of seconds, rows/s and MB/s. Goals: JSONL >= 200k
   rows/s, Parquet >= 1M rows/s.

The server address comes from DATABASE_URL (postgres://user:pass@host:port/…) when it is
set, else postgres://postgres@127.0.0.1:5432; the database is always --database (default
gagar_bench_export), so the run never touches the database DATABASE_URL names. Needs a
role that may CREATE DATABASE. MB = 10^6 bytes.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import io
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pandas as pd
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from _support import (
    cpu_model,
    database_urls,
    free_port,
    load_average,
    memory_gib,
    recreate_database,
    service_env,
    stop_server,
    usable_cores,
    wait_until_healthy,
)
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from advantage import make_frame  # noqa: E402  (benchmarks/advantage.py: the same rollouts)

from grading.method.advantage import redistribute  # noqa: E402  (pure module, no Django)

PROJECT = "bench"
RUN = "bench-run"
PYTHON = sys.executable
MB = 1_000_000
NOW = "2026-01-01 00:00:00+00"
CHEAT_SOURCES = np.array(["grader", "prescreen", "reviewer"], dtype=object)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--groups", type=int, default=6_250, help="groups per step")
    p.add_argument("--size", type=int, default=16, help="rollouts per group")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each path (median reported)")
    p.add_argument("--database", default="gagar_bench_export", help="created and dropped by this script")
    p.add_argument("--no-http", action="store_true", help="skip the GET /api/v1/advantages/ timings")
    p.add_argument("--keep", action="store_true", help="keep the database afterwards (for poking at it)")
    p.add_argument("--seed", type=int, default=2024)
    return p.parse_args()


# --- PostgreSQL ----------------------------------------------------------------------

# --- the load ------------------------------------------------------------------------


def _copy_table(conn: psycopg.Connection, table: str, frame: pd.DataFrame) -> None:
    """COPY a DataFrame in (columns named as in the table) through pyarrow's CSV writer."""
    buffer = io.BytesIO()
    pa_csv.write_csv(
        pa.Table.from_pandas(frame, preserve_index=False), buffer, write_options=pa_csv.WriteOptions(include_header=False)
    )
    columns = sql.SQL(", ").join(sql.Identifier(c) for c in frame.columns)
    view = buffer.getbuffer()
    with (
        conn.cursor() as cur,
        cur.copy(sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT csv)").format(sql.Identifier(table), columns)) as copy,
    ):
        for start in range(0, len(view), 8 << 20):
            copy.write(view[start : start + (8 << 20)])
    view.release()


def store_rows(db_url: str, *, steps: int, groups: int, size: int, seed: int) -> dict:
    """Project, run, steps (ORM); tasks, groups, rollouts, AdvantageResult (COPY). Returns counts."""
    from django.db import connection

    from grading.method.services.mappings import default_mapping
    from grading.models import FactorMapping, Project, Run, Step, StepComputation
    from grading.projects.tokens import issue_api_token

    t0 = time.perf_counter()
    frame = make_frame(groups=steps * groups, size=size, cheat_rate=0.02, ungraded_rate=0.15, partial_rate=0.01, seed=seed)
    result = redistribute(frame)
    n = len(result)
    g = result["group"].to_numpy()  # 0 .. steps*groups-1, contiguous, index order inside
    step_no = g // groups + 1
    task_no = g % groups
    instance = np.char.add("bench__repo-", np.char.zfill(task_no.astype(str), 6)).astype(object)
    uid = instance + "@" + step_no.astype(str).astype(object)
    rng = np.random.default_rng(seed + 1)
    compute_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    project = Project.objects.create(name=PROJECT)
    run = Run.objects.create(project=project, name=RUN, baseline="mean")
    step_objs = Step.objects.bulk_create([Step(run=run, number=s) for s in range(1, steps + 1)])
    step_id = np.array([s.pk for s in step_objs])[step_no - 1]
    mapping: FactorMapping = default_mapping()
    _, token = issue_api_token(username="bench-trainer", project_name=PROJECT, role="trainer", token_name="export bench")

    group_first = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    passed_used = result["passed"].to_numpy()
    reward_raw = result["reward"].to_numpy(dtype=float)
    n_passed = np.bincount(g, weights=reward_raw == 1.0).astype(np.int64)
    graded_pass = passed_used & (result["status"].to_numpy(dtype=object) == "graded")
    cheat = result["cheat"].to_numpy(dtype=bool)

    with connection.cursor():  # Django's own psycopg connection (autocommit: one transaction per COPY)
        raw = connection.connection
        _copy_table(
            raw,
            "grading_task",
            pd.DataFrame(
                {
                    "id": np.arange(1, groups + 1),
                    "instance_id": instance[group_first[:groups]],
                    "repo": "bench/repo",
                    "base_commit": "",
                    "problem_statement": "",
                    "gold_patch": "",
                    "test_patch": "",
                    "fail_to_pass": "[]",
                    "pass_to_pass": "[]",
                    "extra": "{}",
                    "run_id": run.pk,
                }
            ),
        )
        _copy_table(
            raw,
            "grading_group",
            pd.DataFrame(
                {
                    "id": g[group_first] + 1,
                    "uid": uid[group_first],
                    "n_rollouts": size,
                    "n_passed": n_passed,
                    "n_unknown": 0,
                    "is_mixed": (n_passed > 0) & (n_passed < size),
                    "created_at": NOW,
                    "updated_at": NOW,
                    "run_id": run.pk,
                    "step_id": step_id[group_first],
                    "task_id": task_no[group_first] + 1,
                    "step_number": step_no[group_first],
                    "has_valid_verdict": False,
                    "credit_moved": 0.0,
                    "awaits_review": False,
                }
            ),
        )
        rollout_id = np.arange(1, n + 1)
        _copy_table(
            raw,
            "grading_rollout",
            pd.DataFrame(
                {
                    "id": rollout_id,
                    "index": result["index"].to_numpy(),
                    "reward": reward_raw,
                    "passed": reward_raw == 1.0,
                    "exit_status": "submitted",
                    "n_messages": 0,
                    "stats": "{}",
                    "patch_files": 0,
                    "patch_added": 0,
                    "patch_removed": 0,
                    "patch_parses": True,
                    "tests_passed": 0,
                    "tests_failed": 0,
                    "source_format": "bench",
                    "source_ref": "",
                    "content_hash": np.char.zfill(rollout_id.astype(str), 64).astype(object),
                    "created_at": NOW,
                    "group_id": g + 1,
                    "cluster_label": "",
                    "extra_files": "[]",
                    "dropped": "",
                }
            ),
        )
        rank = result["rank"].to_numpy(dtype=float)
        _copy_table(
            raw,
            "grading_advantageresult",
            pd.DataFrame(
                {
                    "id": rollout_id,
                    "run_name": RUN,
                    "step_number": step_no,
                    "uid": uid,
                    "index": result["index"].to_numpy(),
                    "instance_id": instance,
                    "reward": result["reward_used"].to_numpy(dtype=float),
                    "passed": passed_used,
                    "cheat": cheat,
                    "cheat_source": np.where(cheat, CHEAT_SOURCES[rng.integers(0, 3, n)], ""),
                    "baseline": "mean",
                    "advantage": result["advantage"].to_numpy(dtype=float),
                    "tier": np.where(graded_pass, result["tier"].to_numpy(dtype=object), ""),
                    "rank": pd.array(np.where(graded_pass, rank, np.nan), dtype="Float64").astype("Int64"),
                    "factor": result["factor"].to_numpy(dtype=float),
                    "lambda": result["lambda"].to_numpy(dtype=float),
                    "redistributed_advantage": result["redistributed_advantage"].to_numpy(dtype=float),
                    "discount_only_advantage": result["discount_only_advantage"].to_numpy(dtype=float),
                    "mapping_label": mapping.label,
                    "status": result["status"].to_numpy(dtype=object),
                    "computed_at": NOW,
                    "rollout_id": rollout_id,
                    "step_id": step_id,
                    "mapping_id": mapping.pk,
                    "dropped": "",
                    "drop_mode": "",
                }
            ),
        )
        for table in ("grading_task", "grading_group", "grading_rollout", "grading_advantageresult"):
            raw.execute(
                sql.SQL("SELECT setval(pg_get_serial_sequence({}, 'id'), (SELECT max(id) FROM {}))").format(
                    sql.Literal(table), sql.Identifier(table)
                )
            )
    per_step = np.bincount(step_no - 1, minlength=steps)
    StepComputation.objects.bulk_create(
        [
            StepComputation(step=s, mapping=mapping, stale=False, n_rows=int(per_step[i]), summary={})
            for i, s in enumerate(step_objs)
        ]
    )
    load_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        stored = conn.execute("SELECT count(*), sum(abs(redistributed_advantage)) FROM grading_advantageresult").fetchone()
        table_mb = conn.execute("SELECT pg_total_relation_size('grading_advantageresult')").fetchone()[0] / MB
    vacuum_s = time.perf_counter() - t0
    if stored[0] != n:
        raise SystemExit(f"stored {stored[0]} AdvantageResult rows, expected {n}")
    return {
        "rows": n,
        "token": token,
        "compute_s": compute_s,
        "load_s": load_s,
        "vacuum_s": vacuum_s,
        "sum_redistributed": float(stored[1]),
        "table_mb": table_mb,
        "run_id": run.pk,
        "mapping_id": mapping.pk,
    }


# --- the timed paths -----------------------------------------------------------------


def time_stream(fn, steps, mapping) -> tuple[float, int, int, bytes]:
    started = time.perf_counter()
    size = lines = 0
    head = b""
    for chunk in fn(steps, mapping):
        size += len(chunk)
        lines += chunk.count(b"\n")
        if len(head) < 2000:
            head += bytes(chunk[:2000])
    return time.perf_counter() - started, size, lines, head


def time_parquet(steps, mapping, *, use_snapshots: bool = True) -> tuple[float, int, pa.Table]:
    from grading.method import export

    started = time.perf_counter()
    spool = export.parquet_file(steps, mapping, use_snapshots=use_snapshots)
    elapsed = time.perf_counter() - started
    spool.seek(0, os.SEEK_END)
    size = spool.tell()
    spool.seek(0)
    table = pq.read_table(spool)
    spool.close()
    return elapsed, size, table


# The query csv_stream() runs on PostgreSQL, for the floor: COPY alone, every row discarded.
FLOOR_SQL = """COPY (SELECT run_name, step_number, uid, "index", instance_id, reward, passed::text, cheat::text,
    NULLIF(cheat_source, ''), baseline, advantage, NULLIF(tier, ''), "rank", factor, "lambda", redistributed_advantage,
    discount_only_advantage, mapping_label, status FROM grading_advantageresult
    WHERE step_id = ANY(%s) AND mapping_id = %s ORDER BY step_number, uid, "index") TO STDOUT WITH (FORMAT csv)"""


def time_copy_floor(db_url: str, step_ids: list[int], mapping_id: int) -> tuple[float, int]:
    with psycopg.connect(db_url) as conn, conn.cursor() as cur:
        started = time.perf_counter()
        size = 0
        with cur.copy(FLOOR_SQL, [step_ids, mapping_id]) as copy:
            for row in copy:
                size += len(row)
        return time.perf_counter() - started, size


def start_server(env: dict, port: int, log) -> subprocess.Popen:
    cmd = [
        PYTHON,
        "-m",
        "gunicorn",
        "gagar_web.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        "1",
        "--timeout",
        "3600",
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    wait_until_healthy(server, port)
    return server


def time_http(port: int, token: str, fmt: str) -> tuple[float, int, int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    started = time.perf_counter()
    conn.request("GET", f"/api/v1/advantages/?run={RUN}&format={fmt}", headers={"Authorization": f"Token {token}"})
    response = conn.getresponse()
    size = lines = 0
    keep = bytearray()
    while block := response.read(1 << 20):
        size += len(block)
        lines += block.count(b"\n")
        if fmt == "parquet":
            keep += block
    elapsed = time.perf_counter() - started
    conn.close()
    if response.status != 200:
        raise SystemExit(f"GET {fmt}: HTTP {response.status}: {bytes(keep)[:500]!r}")
    return elapsed, size, lines, bytes(keep)


# --- report --------------------------------------------------------------------------


def machine(url: str) -> str:
    mem = f", {memory_gib()} RAM" if memory_gib() else ""
    model = cpu_model()
    with psycopg.connect(url) as conn:
        pg = conn.execute("SHOW server_version").fetchone()[0]
        work_mem = conn.execute("SHOW work_mem").fetchone()[0]
    return (
        f"{usable_cores()} cores, {model}{mem}, load {load_average():.2f}; PostgreSQL {pg} (work_mem {work_mem}) on "
        f"{urlparse(url).hostname}; Python {platform.python_version()}, psycopg {psycopg.__version__}, "
        f"pyarrow {pa.__version__}, NumPy {np.__version__}, pandas {pd.__version__}"
    )


def main() -> int:
    args = parse_args()
    admin_url, db_url = database_urls(args.database)
    print(
        f"PostgreSQL at {urlparse(db_url).hostname}:{urlparse(db_url).port or 5432}, database {args.database!r} "
        f"(created and dropped by this run)"
    )
    env = service_env(db_url)
    os.environ.update(
        {
            k: env[k]
            for k in (
                "DATABASE_URL",
                "DJANGO_DEBUG",
                "DJANGO_SECRET_KEY",
                "DJANGO_ALLOWED_HOSTS",
                "DJANGO_SECURE_SSL_REDIRECT",
                "DJANGO_LOG_LEVEL",
            )
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ["DJANGO_SETTINGS_MODULE"] = "gagar_web.settings"
    recreate_database(admin_url, args.database)
    server = None
    log = tempfile.TemporaryFile()
    results: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        t0 = time.perf_counter()
        call_command("migrate", "--no-input", verbosity=0)
        migrate_s = time.perf_counter() - t0
        load = store_rows(db_url, steps=args.steps, groups=args.groups, size=args.size, seed=args.seed)
        n = load["rows"]
        print(
            f"stored {n:,} AdvantageResult rows ({args.steps} steps x {args.groups:,} groups x {args.size}; table with "
            f"indexes {load['table_mb']:.0f} MB): migrate {migrate_s:.1f} s, compute {load['compute_s']:.1f} s, "
            f"COPY {load['load_s']:.1f} s, VACUUM ANALYZE {load['vacuum_s']:.1f} s"
        )

        from grading.method import export
        from grading.models import FactorMapping, Run

        run = Run.objects.get(pk=load["run_id"])
        mapping = FactorMapping.objects.get(pk=load["mapping_id"])
        steps = list(run.steps.order_by("number"))

        # compute_step stores each step's Parquet snapshot with its rows; the rows here came
        # in by COPY, so build the snapshots the same way (export.step_snapshot) and time it.
        from grading.models import StepComputation

        t0 = time.perf_counter()
        for s in steps:
            StepComputation.objects.filter(step=s, mapping=mapping).update(parquet=export.step_snapshot(s, mapping))
        print(
            f"built the {len(steps)} steps' Parquet snapshots from their rows in {time.perf_counter() - t0:.1f} s "
            f"({n / (time.perf_counter() - t0):,.0f} rows/s; compute_step does this per step)"
        )

        checked = set()
        for attempt in range(args.repeat):
            for fmt, fn in (("jsonl", export.jsonl_stream), ("csv", export.csv_stream)):
                gc.collect()
                elapsed, size, lines, head = time_stream(fn, steps, mapping)
                results.setdefault(f"{fmt}_stream()", []).append(elapsed)
                sizes[f"{fmt}_stream()"] = size
                expected = n if fmt == "jsonl" else n + 1
                if lines != expected:
                    raise SystemExit(f"{fmt}: {lines} lines, expected {expected}")
                if fmt not in checked:
                    first = head.split(b"\n", 2)[0 if fmt == "jsonl" else 1]
                    print(f"  {fmt} first row: {first[:160].decode()}{'…' if len(first) > 160 else ''}")
                    checked.add(fmt)
            gc.collect()
            elapsed, size, rebuilt = time_parquet(steps, mapping, use_snapshots=False)
            results.setdefault("parquet_file(), from rows", []).append(elapsed)
            sizes["parquet_file(), from rows"] = size
            gc.collect()
            elapsed, size, table = time_parquet(steps, mapping)
            results.setdefault("parquet_file()", []).append(elapsed)
            sizes["parquet_file()"] = size
            if not table.equals(rebuilt):
                raise SystemExit("parquet: the snapshots and the rows give different tables")
            del rebuilt
            if table.num_rows != n or table.schema.names != export.COLUMNS:
                raise SystemExit(f"parquet: {table.num_rows} rows / columns {table.schema.names}")
            if attempt == 0:
                total = pc.sum(pc.abs(table["redistributed_advantage"])).as_py()
                if abs(total - load["sum_redistributed"]) > 1e-6:
                    raise SystemExit(f"parquet: sum of |redistributed_advantage| {total} != database {load['sum_redistributed']}")
                print(
                    f"  parquet read back: {table.num_rows:,} rows, {table.num_columns} columns, "
                    f"sum(|redistributed_advantage|) = {total:.6f} as in the database"
                )
            del table
            gc.collect()
            elapsed, size = time_copy_floor(db_url, [s.pk for s in steps], mapping.pk)
            results.setdefault("floor: COPY CSV alone", []).append(elapsed)
            sizes["floor: COPY CSV alone"] = size
            print(f"  run {attempt + 1}/{args.repeat}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in results.items()))
        connection.close()

        if not args.no_http:
            port = free_port()
            server = start_server(env, port, log)
            for attempt in range(args.repeat):
                for fmt in ("jsonl", "csv", "parquet"):
                    elapsed, size, lines, body = time_http(port, load["token"], fmt)
                    key = f"GET ?format={fmt}"
                    results.setdefault(key, []).append(elapsed)
                    sizes[key] = size
                    if fmt == "parquet":
                        rows = pq.read_metadata(pa.BufferReader(body)).num_rows
                    else:
                        rows = lines - (fmt == "csv")
                    if rows != n:
                        raise SystemExit(f"GET {fmt}: {rows} rows, expected {n}")
                print(
                    f"  http run {attempt + 1}/{args.repeat}: "
                    + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in results.items() if k.startswith("GET"))
                )
        info = machine(db_url)
    finally:
        if server is not None:
            stop_server(server)
            if server.returncode not in (0, -signal.SIGTERM):
                log.seek(0)
                print(log.read()[-3000:].decode(errors="replace"), file=sys.stderr)
        log.close()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001  (Django may not be set up yet)
            pass
        if not args.keep:
            recreate_database(admin_url, args.database, drop_only=True)

    goals = {
        "jsonl_stream()": 200_000,
        "parquet_file()": 1_000_000,
        "GET ?format=jsonl": 200_000,
        "GET ?format=parquet": 1_000_000,
    }
    print()
    print(f"machine: {info}")
    print(f"load: {n:,} rows, {args.steps} steps, run {RUN!r}, mapping default@1; median of {args.repeat} runs")
    print()
    width = max(len(k) for k in results)
    print(f"{'path':<{width}}  {'median s':>8}  {'runs (s)':>18}  {'rows/s':>10}  {'MB/s':>6}  {'MB':>6}  goal")
    for key, times in results.items():
        median = statistics.median(times)
        goal = goals.get(key)
        verdict = "" if goal is None else f">= {goal / 1000:,.0f}k rows/s: {'met' if n / median >= goal else 'MISSED'}"
        runs = " ".join(f"{t:.2f}" for t in times)
        print(
            f"{key:<{width}}  {median:>8.2f}  {runs:>18}  {n / median:>10,.0f}  {sizes[key] / MB / median:>6.0f}  "
            f"{sizes[key] / MB:>6.0f}  {verdict}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
