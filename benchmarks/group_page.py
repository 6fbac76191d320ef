#!/usr/bin/env python
"""Group page benchmark: GET /projects/<p>/runs/<r>/groups/<uid>/, a reviewer's first view and repeat views.

    .venv/bin/python benchmarks/group_page.py            # --first-rounds 10, --requests 100, both loads

1. Creates a fresh PostgreSQL database (dropped again at the end) and migrates it.
2. Stores, through the app's own ingest path (`grading.ingest.service.ingest_group_lines`,
   with Celery eager, so what ingest queues after its commit runs before this goes on):
   - `real-size`: `--first-groups` groups (4 by default) of 15 rollouts as a reviewer meets
     them (tests/helpers/real_groups.py `real_size_group`): the 64 real mini-swe-agent
     trajectories vendored in tests/fixtures, two models named in their fields, each real fix
     with the scratch files agents leave in front of it, up to 29 files and +1,600 lines a
     patch; groups 0-3 share no trajectory, so no patch is on two of them.
   - for the repeat views, `real`: the 16 real trajectories of tests/fixtures/mini-swe-agent-gemini-3-pro
     (`rollout_from_trajectory` with each instance's SWE-bench report.json) put into ONE
     group (8 pass, 8 fail); `synthetic`: 16 generated rollouts (grading.ingest.demo helpers)
     heavier than the real ones: ~150 kB of messages, patches of ~5-45 kB, 100-900 test
     names, a test log.
   Each group gets a heuristic grader verdict (`grade_group(backend="heuristic")`, the
   same path a Celery worker takes), so the admin sees tiers, ranks and evidence.
3. Two people: `admin` (project admin, browses: the verdict is shown) and `reviewer`
   (project reviewer with an open BLIND assignment on every group,
   `reviews.services.queue.assign`: judge panels, no grader fields). Sessions are made with
   Django's own login (`Client.force_login`) and sent as a cookie.
4. In-process (Django test Client, same database): the SQL queries of one request per page.
5. First views, over HTTP: `--first-rounds` times, a fresh gunicorn (one sync worker,
   DJANGO_DEBUG=false; nothing of an earlier round's caches) is started on 127.0.0.1 and
   each real-size group GET once, by one person (admin and reviewer take turns by round and
   group): the round's first GET is the first page a fresh worker serves (reported apart),
   the others are first views of a group by a worker that has served pages before. Time
   from sending the request to the last byte read, on a fresh connection.
6. Repeat views, over HTTP: one gunicorn as above, `--warmup` GETs per page, then
   `--requests` timed GETs per page (`real` and `synthetic`), one at a time; the pages take
   turns, so a burst of load from elsewhere hits them alike.
7. Prints p50/p95/max ms, HTML kB (and what gzip would make of them) and queries per page
   against the goals: first view p95 <= 150 ms and HTML <= 300 kB (on the real-size
   groups, before the parts a reviewer loads on demand), repeat views p95 <= 150 ms.

As deployed (DEBUG off) pages need collected static files; they are collected into a
temporary folder through a settings module that wraps gagar_web.settings (its storage skips
the vendored chart.js's reference to a source map that is not shipped, which the manifest
storage refuses), so the run leaves nothing in the working tree.
The server address comes from DATABASE_URL (postgres://user:pass@host:port/...) when it is
set, else postgres://postgres@127.0.0.1:5432; the database name is always --database.
`--profile FILE` serves the first views with `runserver` under cProfile instead (the
figures then include the profiler's overhead). kB = 10^3 bytes.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import orjson
import psycopg
from _support import (  # benchmarks/_support.py
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

from grading.ingest import demo  # noqa: E402  (pure module, no Django)

PROJECT = "bench"
RUN = "bench-run"
PYTHON = sys.executable
MB = 1_000_000
REAL_DATA = Path(os.environ.get("GAGAR_REAL_DATA", ROOT / "tests" / "fixtures" / "mini-swe-agent-gemini-3-pro"))
GOAL_P95_MS = 150.0
GOAL_FIRST_HTML_BYTES = 300_000  # a first view, before the parts loaded on demand
GOAL_HTML_BYTES = 1_500_000  # a repeat view of the heavier loads


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=100, help="timed GETs per group and person (>= 50, 1 with --smoke)")
    p.add_argument("--warmup", type=int, default=5, help="untimed GETs first")
    p.add_argument("--first-rounds", type=int, default=10, help="fresh servers, each showing every real-size group once")
    p.add_argument("--first-groups", type=int, default=4, help="real-size groups of 15 rollouts (1-4 share no trajectory)")
    p.add_argument("--rollouts", type=int, default=16)
    p.add_argument("--load", choices=("both", "real", "synthetic"), default="both")
    p.add_argument("--database", default="gagar_bench_group_page", help="created and dropped by this script")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--keep", action="store_true", help="keep the database afterwards")
    p.add_argument("--profile", metavar="FILE", help="serve the first views with runserver under cProfile, profile here")
    p.add_argument(
        "--smoke", action="store_true", help="make bench-smoke: allow --requests below 50 (the figures then mean nothing)"
    )
    return p.parse_args()


# --- the load ------------------------------------------------------------------------


def real_group(n: int) -> dict | None:
    """The real trajectories as ONE mixed group of n rollouts, or None without the data."""
    from grading.ingest.importers.mini_swe_agent import rollout_from_trajectory

    paths = sorted((REAL_DATA / "trajs").glob("*/*.traj.json"))
    if not paths:
        return None
    real = []
    for path in paths:
        instance_id = path.parent.name
        report_path = REAL_DATA / "logs" / instance_id / "report.json"
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        rollout = rollout_from_trajectory(
            json.loads(path.read_text()), index=0, report=report, ref=str(path.relative_to(REAL_DATA))
        )
        real.append((instance_id, rollout))
    # passing and failing alternate, so any n mixes them
    passing = [r for r in real if r[1].get("reward") == 1.0]
    failing = [r for r in real if r[1].get("reward") != 1.0]
    order = [x for pair in zip(passing, failing) for x in pair] + passing[len(failing) :] + failing[len(passing) :]
    rollouts = []
    for index in range(n):
        instance_id, rollout = order[index % len(order)]
        rollouts.append({**rollout, "index": index})
    task_id, first = order[0]
    problem = next((m["content"] for m in first["messages"] if m["role"] == "user"), "")
    repo = task_id.split("__")[0] + "/" + task_id.split("__")[1].rsplit("-", 1)[0]
    return {
        "format": "gagar-group/1",
        "run": RUN,
        "step": 1,
        "uid": f"{task_id}@real",
        "task": {"instance_id": task_id, "repo": repo, "problem_statement": problem},
        "rollouts": rollouts,
    }


def _big_patch(rng: random.Random, package: str, files: list[str], target: int) -> str:
    parts, size, k = [], 0, 0
    while size < target:
        path = f"{package}/{files[k % len(files)]}" if k < len(files) else f"{package}/extra/mod_{k}.py"
        part = demo._file_diff(rng, path, rng.randint(3, 12))
        parts.append(part)
        size += len(part)
        k += 1
    return "".join(parts)


def synthetic_group(n: int, seed: int) -> dict:
    """16 rollouts of one SWE-bench-like task: ~150 kB messages, 5-40 kB patches, big test lists."""
    rng = random.Random(seed)
    _repo, package, files = demo.REPOS[0]
    base = demo.make_group(rng, run=RUN, step=1, task_number=0, n_rollouts=1, pass_rate=1.0)
    task = base["task"]
    f2p = task["FAIL_TO_PASS"]
    rollouts = []
    for index in range(n):
        passed = index % 2 == 0
        turns = rng.randint(20, 40)
        messages = demo.make_messages(rng, task["problem_statement"], package, files, turns=turns, target_chars=150_000)
        tests = demo.make_tests(rng, passed, package, f2p)
        p2p = [
            f"{package}/tests/test_{rng.choice(demo.IDENTS)}.py::test_{rng.choice(demo.VERBS)}_{i}"
            for i in range(rng.randint(100, 900))
        ]
        regress = [] if passed else p2p[: rng.randint(0, 120)]
        tests["PASS_TO_PASS"] = {"success": p2p[len(regress) :], "failure": regress}
        test_log = "\n".join(f"{t} {'FAILED' if t in regress else 'PASSED'}" for t in p2p)
        rollouts.append(
            {
                "index": index,
                "reward": 1.0 if passed else 0.0,
                "patch": _big_patch(rng, package, files, rng.randint(5_000, 40_000)),
                "messages": messages,
                "tests": tests,
                "test_log": test_log,
                "exit_status": "Submitted",
                "stats": {
                    "tokens": sum(len(str(m.get("content", ""))) for m in messages) // 4,
                    "turns": turns,
                    "cost_usd": round(rng.uniform(0.02, 0.6), 4),
                },
                "source": {"format": "gagar-demo", "ref": f"bench/synthetic/{index}"},
                "metadata": {},
            }
        )
    return {
        "format": "gagar-group/1",
        "run": RUN,
        "step": 1,
        "uid": f"{task['instance_id']}@synthetic",
        "task": task,
        "rollouts": rollouts,
    }


def describe(group: dict) -> dict:
    from grading.rollouts.diffs import read_patch

    rs = group["rollouts"]
    stats = [read_patch(r.get("patch") or "").stats for r in rs]
    return {
        "patch_files": max(s[0] for s in stats),
        "patch_added": max(s[1] for s in stats),
        "rollouts": len(rs),
        "passing": sum(1 for r in rs if r["reward"] == 1.0),
        "rollout_kb": statistics.mean(len(orjson.dumps(r)) for r in rs) / 1000,
        "messages_kb": statistics.mean(len(orjson.dumps(r["messages"])) for r in rs) / 1000,
        "patch_kb": (min(len(r.get("patch") or "") for r in rs) / 1000, max(len(r.get("patch") or "") for r in rs) / 1000),
        "tests": (min(_n_tests(r) for r in rs), max(_n_tests(r) for r in rs)),
        "log_kb": max(len(r.get("test_log") or "") for r in rs) / 1000,
    }


def _n_tests(rollout: dict) -> int:
    tests = rollout.get("tests") or {}
    return sum(len(v.get("success", [])) + len(v.get("failure", [])) for v in tests.values() if isinstance(v, dict))


def store(groups: list[dict]) -> dict:
    """Ingest, grade (heuristic), make the two people, assign, log in. Returns cookies by person."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from grading.ingest.service import ingest_group_lines
    from grading.jobs.grade import grade_group
    from grading.models import Group, Membership, Project, Role, Verdict
    from reviews.services.queue import assign

    project = Project.objects.create(name=PROJECT)
    report = ingest_group_lines(project=project, lines=((i + 1, orjson.dumps(g)) for i, g in enumerate(groups)))
    if report.refused or report.aborted:
        raise SystemExit(f"ingest refused: {report.as_dict()}")
    User = get_user_model()
    admin = User.objects.create_user("bench-admin", password="x")
    reviewer = User.objects.create_user("bench-reviewer", password="x")
    Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    Membership.objects.create(project=project, user=reviewer, role=Role.REVIEWER)
    for g in groups:
        group = Group.objects.get(run__project=project, uid=g["uid"])
        if not group.is_mixed or group.n_rollouts != len(g["rollouts"]):
            raise SystemExit(f"group {g['uid']} stored as {group.n_rollouts} rollouts, mixed={group.is_mixed}")
        verdict = grade_group(group_id=group.pk, backend="heuristic")
        if verdict.status != Verdict.Status.VALID:
            raise SystemExit(f"heuristic verdict on {g['uid']} is {verdict.status}: {verdict.errors}")
        assignment = assign(group=group, reviewer=reviewer, blind=True)
        if not (assignment.is_open and assignment.blind):
            raise SystemExit("the reviewer's assignment is not open and blind")
    from django.conf import settings

    cookies = {}
    for who, user in (("admin", admin), ("reviewer", reviewer)):
        client = Client()
        client.force_login(user)
        cookies[who] = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    return cookies


# --- measuring -------------------------------------------------------------------------


def start_server(env: dict, port: int, profile: str | None, log) -> subprocess.Popen:
    if profile:
        cmd = [
            PYTHON,
            "-m",
            "cProfile",
            "-o",
            profile,
            "manage.py",
            "runserver",
            "--noreload",
            "--nothreading",
            f"127.0.0.1:{port}",
        ]
    else:
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
            "600",
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


def get(port: int, path: str, cookie: str) -> tuple[float, int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    started = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": cookie, "Host": "127.0.0.1"})
    response = conn.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed, response.status, body


def check_page(who: str, body: bytes, n: int) -> None:
    html = body.decode()
    lanes = html.count('class="lane ')
    if lanes != n:
        raise SystemExit(f"{who}: {lanes} rollout lanes on the page, expected {n}")
    shows_verdict = 'aria-label="Grader verdict"' in html
    if who == "admin" and not shows_verdict:
        raise SystemExit("admin: the grader's verdict is not on the page")
    if who == "reviewer" and (shows_verdict or 'data-testid="blind-badge"' not in html):
        raise SystemExit("reviewer: the page is not blind")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def query_counts(paths: dict, users: dict) -> dict:
    """Per page and person, in this process (Django test Client, same database): the SQL
    queries of one request (the second: the first may fill per-process caches)."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    counts = {}
    for who, username in users.items():
        client = Client(SERVER_NAME="127.0.0.1")
        client.force_login(get_user_model().objects.get(username=username))
        for load, path in paths.items():
            client.get(path)
            with CaptureQueriesContext(connection) as ctx:
                r = client.get(path)
            if r.status_code != 200:
                raise SystemExit(f"in-process GET {path} as {who}: HTTP {r.status_code}")
            counts[(load, who)] = len(ctx.captured_queries)
    return counts


def first_views(env: dict, paths: dict, sizes: dict, cookies: dict, rounds: int, profile: str | None, log) -> dict:
    """`rounds` fresh servers; on each, every real-size group GET once, by admin and reviewer
    in turn. {"fresh": [(ms, bytes, gzip bytes)], "first": [...], "by_person": {who: [...]}}."""
    names = list(paths)
    out: dict = {"fresh": [], "first": [], "by_person": {"admin": [], "reviewer": []}}
    for n in range(rounds):
        port = free_port()
        server = start_server(env, port, f"{profile}.{n}" if profile else None, log)
        try:
            for k in range(len(names)):
                name = names[(n + k) % len(names)]
                who = ("admin", "reviewer")[(n + k) % 2]
                elapsed, status, body = get(port, paths[name], cookies[who])
                if status != 200:
                    raise SystemExit(f"GET {paths[name]} as {who}: HTTP {status}: {body[:500]!r}")
                check_page(who, body, sizes[name])
                row = (elapsed * 1000, len(body), len(gzip.compress(body, 6)))
                out["fresh" if k == 0 else "first"].append(row)
                out["by_person"][who].append(row)
        finally:
            stop_server(server, signal.SIGINT if profile else signal.SIGTERM)
    return out


def machine(url: str) -> str:
    mem = f", {memory_gib()} RAM" if memory_gib() else ""
    return (
        f"{usable_cores()} cores, {cpu_model()}{mem}, load {load_average():.2f}; PostgreSQL {postgres_version(url)} on "
        f"{urlparse(url).hostname}; Python {platform.python_version()}, psycopg {psycopg.__version__}"
    )


def _row(label: str, rows: list[tuple[float, int, int]], queries: str, goal: str) -> str:
    times = [r[0] for r in rows]
    return (
        f"{label:<50} {len(rows):>4} {statistics.median(times):>7.1f} {percentile(times, 0.95):>6.1f} {max(times):>7.1f} "
        f"{max(r[1] for r in rows) / 1000:>8.0f} {max(r[2] for r in rows) / 1000:>8.0f} {queries:>7}  {goal}"
    )


def main() -> int:
    args = parse_args()
    if args.requests < (1 if args.smoke else 50):
        raise SystemExit("--requests must be at least 50 (1 with --smoke)")
    if args.first_rounds < 1 or args.first_groups < 1:
        raise SystemExit("--first-rounds and --first-groups must be at least 1")
    admin_url, db_url = database_urls(args.database)
    print(
        f"PostgreSQL at {urlparse(db_url).hostname}:{urlparse(db_url).port or 5432}, database {args.database!r} "
        f"(created and dropped by this run)"
    )
    from tests.helpers.real_groups import real_size_group

    first_loads = {f"real-size-{n}": real_size_group(n, run=RUN, step=1) for n in range(args.first_groups)}
    loads: dict[str, dict] = {}
    if args.load in ("both", "real"):
        group = real_group(args.rollouts)
        if group is None:
            print(f"NOTE: real data not found at {REAL_DATA}; measuring the synthetic load only")
        else:
            loads["real"] = group
    if args.load in ("both", "synthetic") or not loads:
        loads["synthetic"] = synthetic_group(args.rollouts, args.seed)
    for name, g in {**first_loads, **loads}.items():
        d = describe(g)
        print(
            f"load {name!r}: group {g['uid']}, {d['rollouts']} rollouts ({d['passing']} pass), average rollout "
            f"{d['rollout_kb']:.0f} kB of JSON (messages {d['messages_kb']:.0f} kB), patches "
            f"{d['patch_kb'][0]:.1f}-{d['patch_kb'][1]:.1f} kB ({d['patch_files']} files, +{d['patch_added']} lines at most), "
            f"{d['tests'][0]}-{d['tests'][1]} test names, test log up to {d['log_kb']:.0f} kB"
        )

    # As deployed (DEBUG off) pages need collected static files (a hashed manifest); collect
    # them into a temporary STATIC_ROOT through a settings module that wraps the app's own,
    # so the run leaves nothing in the working tree.
    workdir = tempfile.TemporaryDirectory(prefix="gagar-bench-page-")
    # The vendored chart.js names a source map that is not shipped, which the manifest
    # storage refuses while collecting; the wrapper's storage skips JS source-map
    # references and is otherwise the app's (CSS references still hashed).
    (Path(workdir.name) / "bench_storage.py").write_text(
        "from whitenoise.storage import CompressedManifestStaticFilesStorage\n\n\n"
        "class BenchStorage(CompressedManifestStaticFilesStorage):\n"
        "    patterns = tuple(p for p in CompressedManifestStaticFilesStorage.patterns if p[0] != '*.js')\n"
    )
    (Path(workdir.name) / "bench_settings.py").write_text(
        "from gagar_web.settings import *  # noqa: F403\n"
        f"STATIC_ROOT = {str(Path(workdir.name) / 'static')!r}\n"
        "STORAGES = {**STORAGES, 'staticfiles': {'BACKEND': 'bench_storage.BenchStorage'}}  # noqa: F405\n"
    )
    env = service_env(db_url)
    env.update(
        DJANGO_SETTINGS_MODULE="bench_settings",
        PYTHONPATH=os.pathsep.join(filter(None, [workdir.name, str(ROOT), env.get("PYTHONPATH", "")])),
    )
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
                "DJANGO_SETTINGS_MODULE",
            )
        }
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    sys.path.insert(0, workdir.name)
    recreate_database(admin_url, args.database)
    server = None
    log = tempfile.TemporaryFile()
    results: dict[tuple[str, str], dict] = {}
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", "--no-input", verbosity=0)
        call_command("collectstatic", "--no-input", verbosity=0)
        t0 = time.perf_counter()
        cookies = store([*first_loads.values(), *loads.values()])
        print(f"stored, graded (heuristic) and assigned in {time.perf_counter() - t0:.1f} s")
        path_of = {name: f"/projects/{PROJECT}/runs/{RUN}/groups/{g['uid']}/" for name, g in {**first_loads, **loads}.items()}
        counts = query_counts(path_of, {"admin": "bench-admin", "reviewer": "bench-reviewer"})
        connections.close_all()

        first_paths = {name: path_of[name] for name in first_loads}
        sizes = {name: len(g["rollouts"]) for name, g in first_loads.items()}
        first = first_views(env, first_paths, sizes, cookies, args.first_rounds, args.profile, log)

        paths = {name: path_of[name] for name in loads}
        port = free_port()
        server = start_server(env, port, None, log)
        rows = [(name, who) for name in paths for who in ("admin", "reviewer")]
        for name, who in rows:
            for _ in range(args.warmup):
                _, status, body = get(port, paths[name], cookies[who])
                if status != 200:
                    raise SystemExit(f"GET {paths[name]} as {who}: HTTP {status}: {body[:500]!r}")
            check_page(who, body, args.rollouts)
            results[(name, who)] = {"times": [], "bytes": len(body), "gzip": len(gzip.compress(body, 6))}
        for _ in range(args.requests):  # rows take turns, so a burst of load elsewhere hits them alike
            for name, who in rows:
                elapsed, status, body = get(port, paths[name], cookies[who])
                if status != 200:
                    raise SystemExit(f"GET {paths[name]} as {who}: HTTP {status}")
                results[(name, who)]["times"].append(elapsed * 1000)
        info = machine(db_url)
    finally:
        if server is not None:
            stop_server(server, signal.SIGTERM)
            if server.returncode not in (0, -signal.SIGTERM, -signal.SIGINT):
                log.seek(0)
                print(log.read()[-3000:].decode(errors="replace"), file=sys.stderr)
        log.close()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001  (Django may not be set up yet)
            pass
        workdir.cleanup()
        if not args.keep:
            recreate_database(admin_url, args.database, drop_only=True)

    server_kind = "runserver under cProfile" if args.profile else "gunicorn, 1 sync worker"
    print()
    print(f"machine: {info}")
    print(
        f"first views: {args.first_rounds} fresh servers ({server_kind}, DJANGO_DEBUG=false, over HTTP on loopback), "
        f"each GETting the {len(first_loads)} real-size groups once, admin and reviewer in turn"
    )
    print(
        f"repeat views: gunicorn, 1 sync worker; {args.warmup} warm-up + {args.requests} timed GETs per row, one at a "
        f"time, fresh connection each"
    )
    print()
    print(f"{'page':<44} {'GETs':>4} {'p50 ms':>7} {'p95':>6} {'max':>7} {'HTML kB':>8} {'gzip kB':>8} {'queries':>7}  goal")
    first_rows = first["first"] or first["fresh"]
    first_p95 = percentile([r[0] for r in first_rows], 0.95)
    first_bytes = max(r[1] for r in first["fresh"] + first["first"])
    first_met = first_p95 <= GOAL_P95_MS and first_bytes <= GOAL_FIRST_HTML_BYTES
    first_queries = "/".join(
        f"{min(v)}-{max(v)}" if min(v) != max(v) else str(v[0])
        for v in ([c for (n, w), c in counts.items() if n in first_loads and w == who] for who in ("admin", "reviewer"))
    )
    print(
        _row(
            "real-size, first view (any person)",
            first_rows,
            first_queries,
            f"{'met' if first_met else 'MISSED'} (p95 <= {GOAL_P95_MS:.0f} ms, <= {GOAL_FIRST_HTML_BYTES // 1000} kB)",
        )
    )
    for who, label in (("admin", "admin (verdict shown)"), ("reviewer", "reviewer (blind)")):
        mine = first["by_person"][who]
        if mine:
            print(_row(f"real-size, every first GET, {label}", mine, "", ""))
    print(_row("real-size, a fresh worker's first page", first["fresh"], "", "(reported apart)"))
    repeat_met = True
    for (name, who), r in results.items():
        p95 = percentile(r["times"], 0.95)
        met = p95 <= GOAL_P95_MS and r["bytes"] <= GOAL_HTML_BYTES
        repeat_met &= met or name != "real"
        verdict = ("met" if met else "MISSED") if name == "real" else "stress row"
        person = "admin (verdict shown)" if who == "admin" else "reviewer (blind)"
        print(
            _row(
                f"{name}, repeat view, {person}",
                [(t, r["bytes"], r["gzip"]) for t in r["times"]],
                str(counts[(name, who)]),
                verdict,
            )
        )
    print("(kB = 10^3 bytes; HTML kB and gzip kB: the largest page of the row; gzip = what `gzip -6` makes of it)")
    print()
    print(
        f"goals: first view p95 <= {GOAL_P95_MS:.0f} ms and <= {GOAL_FIRST_HTML_BYTES // 1000} kB on the real-size groups "
        f"({'met' if first_met else 'NOT met'}); repeat views p95 <= {GOAL_P95_MS:.0f} ms and HTML <= "
        f"{GOAL_HTML_BYTES / MB:.1f} MB on the real load ({'met' if repeat_met else 'NOT met'})"
    )
    if args.profile:
        print(f"profiles written to {args.profile}.<round> (python -m pstats {args.profile}.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
