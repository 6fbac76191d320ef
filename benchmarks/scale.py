#!/usr/bin/env python
"""Scale benchmark: one whole training run, every page and the review queue at its size.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres .venv/bin/python benchmarks/scale.py --scale 1
    .venv/bin/python benchmarks/scale.py --scale 0.05      # a smoke test, about a minute

At --scale 1: one run of 200 steps x 256 groups x 16 rollouts (819,200 small rollouts: a
few turns, a short patch, a handful of tests, so the row count is the load), 20,000
judgments by 10 reviewers with overlap, a few hundred cheat signals, audits and
adjudications. --scale s multiplies the steps and the people's work (groups per step and
rollouts per group stay as they are, so step and group pages look the same at every scale).

1. Creates a fresh PostgreSQL database --database (dropped at the end unless --keep) on
   the server DATABASE_URL points at, and migrates it.
2. Ingest: every step through the app's own ingest path
   (grading.ingest.service.ingest_group_lines, batched bulk inserts), timed.
3. Grading: every step's mixed groups through the real grading services
   (grading.jobs.grade.queue_step with the heuristic backend; Celery runs eagerly in
   this process, so each group is graded by grade_group and each step's advantages are
   computed by compute_step once its last verdict is in), timed.
4. People, through the real services: reviewers take groups from the queue
   (reviews.services.queue.next_assignment) and submit judgments (submit_judgment) near
   the grader's tiers with some noise and an occasional cheat flag; an adjudicator settles
   disagreements; an auditor confirms or overturns cheat signals (each recomputes a step).
5. VACUUM ANALYZE, then times each page through the real views with Django's test Client
   in this process (DEBUG off, so no query log): --requests calls per page, pages taking
   turns. "judge next group" POSTs /review/next/ as one of the reviewers in turn; the
   assignment it hands out is skipped (untimed) so every call is a fresh pick. The
   calibration figures are memoised in the cache, so the calibration page and the agreement
   API are timed twice: as they come (warm) and with the cache emptied before each call
   (cold: the first view after judgments changed, where no worker warmed the figures).
6. Prints p50/p95/max ms and queries per request, the goals, database size per rollout,
   how long ingest and grading took, and EXPLAIN ANALYZE of the queue's pick.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode, urlparse

import orjson
import psycopg
from _support import cpu_model, database_urls, load_average, memory_gib, postgres_version, recreate_database, usable_cores

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROJECT, RUN = "bench", "scale-run"
GROUPS_PER_STEP, ROLLOUTS = 256, 16


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=float, default=1.0, help="multiplies steps (200) and people's work (20,000 judgments)")
    p.add_argument("--database", default="gagar_scale_bench", help="created and dropped by this script")
    p.add_argument("--requests", type=int, default=40, help="timed requests per page")
    p.add_argument("--api-requests", type=int, default=5, help="timed requests per whole-run export or agreement call")
    p.add_argument("--seed", type=int, default=17)
    p.add_argument(
        "--groups-per-step",
        type=int,
        default=GROUPS_PER_STEP,
        help="groups a step (the figures are kept at 256; make bench-smoke runs fewer to stay short)",
    )
    p.add_argument("--keep", action="store_true", help="keep the database afterwards (for EXPLAIN by hand, or --measure-only)")
    p.add_argument(
        "--measure-only",
        action="store_true",
        help="measure a database an earlier --keep run filled (migrated first; its seeding figures are reused)",
    )
    return p.parse_args()


def small_group(rng: random.Random, step: int, task_number: int) -> dict:
    from grading.ingest.demo import make_group

    group = make_group(rng, run=RUN, step=step, task_number=task_number, n_rollouts=ROLLOUTS, turns=(1, 2))
    for rollout in group["rollouts"]:
        rollout["metadata"] = {}
    return group


def ingest(project, steps: int, seed: int, groups_per_step: int = GROUPS_PER_STEP) -> tuple[float, int]:
    from grading.ingest.service import ingest_group_lines

    rng = random.Random(seed)
    took = 0.0
    rollouts = 0
    for step in range(1, steps + 1):
        lines = [(i + 1, orjson.dumps(small_group(rng, step, t))) for i, t in enumerate(range(groups_per_step))]
        t0 = time.perf_counter()
        report = ingest_group_lines(project=project, lines=lines)
        took += time.perf_counter() - t0
        if report.refused:
            raise SystemExit(f"step {step}: refused {report.as_dict()['errors'][:3]}")
        rollouts += report.rollouts_created
        if step % 20 == 0:
            print(f"  ingested step {step}/{steps} ({took:.0f} s)", flush=True)
    return took, rollouts


def grade(run, steps: int) -> float:
    from grading.jobs.grade import queue_step

    t0 = time.perf_counter()
    for n, step in enumerate(run.steps.order_by("number"), 1):
        queue_step(step=step, backend="heuristic")  # eager Celery: graded and computed before this returns
        if n % 20 == 0:
            print(f"  graded step {n}/{steps} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return time.perf_counter() - t0


def people(
    project, run, reviewers, adjudicator, auditor, *, judgments: int, adjudications: int, audits: int, rng: random.Random
) -> dict:
    from grading.models import CheatDecision, RolloutGrade
    from reviews.models import GroupReview, Judgment
    from reviews.services.audit import audit_cheat
    from reviews.services.judgments import ItemInput, submit_judgment
    from reviews.services.queue import next_assignment, update_policy

    update_policy(project=project, overlap=0.2, blind=True, lease_minutes=120)
    t0 = time.perf_counter()
    done = 0
    since = None
    while done < judgments:
        reviewer = reviewers[done % len(reviewers)]
        assignment = next_assignment(project=project, reviewer=reviewer, run=run)
        if assignment is None:
            break
        group = assignment.group
        grades = dict(
            RolloutGrade.objects.filter(verdict__group=group, verdict__status="valid").values_list("rollout__index", "tier")
        )
        passing = group.rollouts.filter(passed=True).values_list("index", flat=True)
        items = []
        for index in passing:
            tier = grades.get(index) or "T2"
            if rng.random() < 0.25:
                tier = rng.choice(["T1", "T2", "T3"])
            items.append(ItemInput(index, tier, cheat=rng.random() < 0.003))
        submit_judgment(reviewer=reviewer, group=group, items=items, seconds_spent=rng.randint(30, 600))
        done += 1
        if done == int(judgments * 0.9):
            since = Judgment.objects.order_by("-created_at").values_list("created_at", flat=True).first()
        if done % 2000 == 0:
            print(f"  {done}/{judgments} judgments ({time.perf_counter() - t0:.0f} s)", flush=True)
    judged_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    settled = 0
    for review in (
        GroupReview.objects.filter(needs_adjudication=True).select_related("group").order_by("group_id")[:adjudications]
    ):
        group = review.group
        passing = list(group.rollouts.filter(passed=True).values_list("index", flat=True))
        items = [ItemInput(i, rng.choice(["T1", "T2", "T3"])) for i in passing]
        submit_judgment(
            reviewer=adjudicator,
            group=group,
            items=items,
            kind=Judgment.Kind.ADJUDICATION,
            reason=Judgment.Reason.REVIEWERS_DISAGREE,
        )
        settled += 1
    adjudicated_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    decided = 0
    for decision in CheatDecision.objects.filter(confirmed__isnull=True).order_by("id")[:audits]:
        audit_cheat(decision=decision, auditor=auditor, confirmed=rng.random() < 0.3, reason="read the trajectory and the patch")
        decided += 1
    audited_s = time.perf_counter() - t0
    return {
        "judgments": done,
        "judged_s": judged_s,
        "adjudications": settled,
        "adjudicated_s": adjudicated_s,
        "audits": decided,
        "audited_s": audited_s,
        "since": since,
    }


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def time_requests(pages: dict, clients: dict, n: int, skip_next) -> dict[str, dict]:
    """pages: name -> (who, method, url, expected status or None[, before() run untimed before each request])."""
    from django.db import connection, reset_queries
    from django.test.utils import CaptureQueriesContext

    times: dict[str, list[float]] = {name: [] for name in pages}
    queries: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for round_ in range(n + 1):  # round 0 warms up and counts queries
        for name, (who, method, url, expected, *before) in pages.items():
            client = clients[who] if not callable(who) else clients[who(round_)]
            for prepare in before:
                prepare()
            with CaptureQueriesContext(connection) as ctx:
                t0 = time.perf_counter()
                response = client.get(url) if method == "GET" else client.post(url)
                body = b"".join(response.streaming_content) if response.streaming else response.content
                elapsed = (time.perf_counter() - t0) * 1000
            if response.status_code != (expected or 200):
                raise SystemExit(f"{method} {url}: HTTP {response.status_code}: {body[:400]!r}")
            if name == "judge next group":
                skip_next(client)
            if round_ == 0:
                queries[name] = len(ctx.captured_queries)
                sizes[name] = len(body)
            else:
                times[name].append(elapsed)
        reset_queries()
    return {
        name: {
            "p50": statistics.median(t),
            "p95": percentile(t, 95),
            "max": max(t),
            "queries": queries[name],
            "bytes": sizes[name],
            "n": len(t),
        }
        for name, t in times.items()
    }


def explain_pick(project, run, reviewer) -> str:
    from reviews.selectors.queue import queue_groups

    return queue_groups(project=project, reviewer=reviewer, run=run)[:1].explain(analyze=True, buffers=True)


def db_sizes(url: str) -> tuple[int, list[tuple[str, int]]]:
    with psycopg.connect(url) as conn:
        total = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        tables = conn.execute(
            "SELECT relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 2 DESC LIMIT 8"
        ).fetchall()
    return total, tables


def seed(args, steps: int, n_judgments: int, n_adjudications: int, n_audits: int, rng: random.Random) -> dict:
    from django.contrib.auth import get_user_model

    from grading.models import CheatDecision, Group, Membership, Project, Role, Rollout, Run

    User = get_user_model()
    project = Project.objects.create(name=PROJECT)
    admin = User.objects.create_user("admin", password="x")
    Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    adjudicator = User.objects.create_user("adjudicator", password="x")
    Membership.objects.create(project=project, user=adjudicator, role=Role.ADJUDICATOR)
    auditor = User.objects.create_user("auditor", password="x")
    Membership.objects.create(project=project, user=auditor, role=Role.AUDITOR)
    reviewers = []
    for i in range(10):
        user = User.objects.create_user(f"reviewer{i}", password="x")
        Membership.objects.create(project=project, user=user, role=Role.REVIEWER)
        reviewers.append(user)
    print(f"ingesting {steps} steps x {args.groups_per_step} groups x {ROLLOUTS} rollouts ...", flush=True)
    ingest_s, _ = ingest(project, steps, args.seed, args.groups_per_step)
    run = Run.objects.get(project=project, name=RUN)
    n_rollouts = Rollout.objects.filter(group__run=run).count()
    n_mixed = Group.objects.filter(run=run, is_mixed=True).count()
    print(f"ingested {n_rollouts:,} rollouts ({n_mixed:,} mixed groups) in {ingest_s:.0f} s", flush=True)
    grade_s = grade(run, steps)
    print(f"graded and computed in {grade_s:.0f} s", flush=True)
    work = people(
        project,
        run,
        reviewers,
        adjudicator,
        auditor,
        judgments=n_judgments,
        adjudications=n_adjudications,
        audits=n_audits,
        rng=rng,
    )
    n_signals = CheatDecision.objects.filter(rollout__group__run=run).count()
    print(
        f"{work['judgments']:,} judgments in {work['judged_s']:.0f} s, {work['adjudications']} adjudications in "
        f"{work['adjudicated_s']:.0f} s, {work['audits']} audits in {work['audited_s']:.0f} s; {n_signals} cheat signals",
        flush=True,
    )
    return {
        "ingest_s": ingest_s,
        "grade_s": grade_s,
        **{k: v for k, v in work.items() if k != "since"},
        "since": work["since"].isoformat() if work["since"] else None,
    }


def main() -> int:
    args = parse_args()
    admin_url, db_url = database_urls(args.database)
    print(
        f"PostgreSQL at {urlparse(db_url).hostname}:{urlparse(db_url).port or 5432}, database {args.database!r} "
        f"(created{'' if args.keep else ' and dropped'} by this run); scale {args.scale:g}"
    )
    workdir = tempfile.TemporaryDirectory(prefix="gagar-scale-")
    # As deployed (DEBUG off: no query log) but with plain static storage, so pages render
    # without collectstatic's manifest.
    (Path(workdir.name) / "scale_settings.py").write_text(
        "from gagar_web.settings import *  # noqa: F403\n"
        "STORAGES = {**STORAGES, 'staticfiles': {'BACKEND': 'django.contrib.staticfiles.storage.StaticFilesStorage'}}  "
        "# noqa: F405\n"
    )
    sys.path.insert(0, workdir.name)
    os.environ.update(
        DATABASE_URL=db_url,
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY="scale-benchmark-" + "x" * 40,
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_LOG_LEVEL="WARNING",
        DJANGO_SETTINGS_MODULE="scale_settings",
        DJANGO_ALLOWED_HOSTS="testserver",
    )
    os.environ.pop("CELERY_BROKER_URL", None)  # eager Celery: grading and recomputation run in this process
    if not args.measure_only:
        recreate_database(admin_url, args.database)
    steps = max(2, round(200 * args.scale))
    n_judgments = max(50, round(20_000 * args.scale))
    n_adjudications = max(10, round(300 * args.scale))
    n_audits = max(10, round(200 * args.scale))
    rng = random.Random(args.seed)
    try:
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client

        from grading.models import CheatDecision, Group, Rollout, Run
        from reviews.models import Assignment, Judgment
        from reviews.services.queue import skip_assignment

        call_command("migrate", "--no-input", verbosity=0)
        if args.measure_only:
            with connection.cursor() as cursor:
                cursor.execute("SELECT doc FROM scale_bench_seed")
                figures = orjson.loads(cursor.fetchone()[0])
        else:
            figures = seed(args, steps, n_judgments, n_adjudications, n_audits, rng)
            with connection.cursor() as cursor:
                cursor.execute("CREATE TABLE scale_bench_seed (doc text)")
                cursor.execute("INSERT INTO scale_bench_seed VALUES (%s)", [orjson.dumps(figures).decode()])
        User = get_user_model()
        admin = User.objects.get(username="admin")
        reviewers = list(User.objects.filter(username__startswith="reviewer").order_by("username"))
        run = Run.objects.get(project__name=PROJECT, name=RUN)
        steps = run.steps.count()
        n_rollouts = Rollout.objects.filter(group__run=run).count()
        n_mixed = Group.objects.filter(run=run, is_mixed=True).count()
        n_signals = CheatDecision.objects.filter(rollout__group__run=run).count()
        ingest_s, grade_s = figures["ingest_s"], figures["grade_s"]
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        total_bytes, tables = db_sizes(db_url)

        clients = {}
        for user in [admin, *reviewers]:
            clients[user.username] = Client()
            clients[user.username].force_login(user)
        base = f"/projects/{PROJECT}/"
        run_url = f"{base}runs/{RUN}/"
        uids = list(Group.objects.filter(run=run).order_by("?").values_list("uid", flat=True)[:5])
        mixed_uids = list(Group.objects.filter(run=run, is_mixed=True).order_by("?").values_list("uid", flat=True)[:5])
        middle = max(1, steps // 2)
        api = lambda path, **q: f"/api/v1/{path}/?" + urlencode({"project": PROJECT, "run": RUN, **q})  # noqa: E731
        since = figures["since"] or run.created_at.isoformat()
        work = figures
        turn = {"i": 0}

        def next_reviewer(round_: int) -> str:
            turn["i"] += 1
            return reviewers[turn["i"] % len(reviewers)].username

        def skip_next(client) -> None:
            user_id = int(client.session["_auth_user_id"])
            for assignment in Assignment.objects.filter(reviewer_id=user_id, status=Assignment.Status.OPEN):
                skip_assignment(assignment=assignment)

        pages = {
            "project page": ("admin", "GET", base, None),
            "run page": ("admin", "GET", run_url, None),
            "run page, last page of steps": ("admin", "GET", run_url + f"?page={steps}", None),
            "step page": ("admin", "GET", run_url + f"steps/{middle}/", None),
            "step page, mixed": ("admin", "GET", run_url + f"steps/{middle}/?show=mixed", None),
            "group page (admin)": ("admin", "GET", f"{run_url}groups/{mixed_uids[0]}/", None),
            "group page, all-fail or all-pass": ("admin", "GET", f"{run_url}groups/{uids[0]}/", None),
            "review queue page": ("reviewer0", "GET", f"{base}review/", None),
            "judge next group": (next_reviewer, "POST", f"{base}review/next/", 302),
            "audit page": ("admin", "GET", f"{base}audit/", None),
            "audit page, all": ("admin", "GET", f"{base}audit/?status=all", None),
            "adjudication page": ("admin", "GET", f"{base}adjudication/?show=all", None),
            "calibration page": ("admin", "GET", f"{base}calibration/", None),
        }
        print(f"timing {len(pages)} pages x {args.requests} requests ...", flush=True)
        page_results = time_requests(pages, clients, args.requests, skip_next)
        from django.core.cache import cache

        # Cold: the figures' cache emptied before each call, as the first view after judgments
        # changed finds it when no worker warms it (reviews.services.calibration.schedule_warm).
        api_calls = {
            "calibration page, cold": ("admin", "GET", f"{base}calibration/", None, cache.clear),
            "agreement API, run, 1000 resamples, cold": ("admin", "GET", api("agreement", n_boot=1000), None, cache.clear),
            "agreement API, run, 1000 resamples": ("admin", "GET", api("agreement", n_boot=1000), None),
            "whole-run export, JSONL": ("admin", "GET", api("advantages", format="jsonl"), None),
            "whole-run export, Parquet": ("admin", "GET", api("advantages", format="parquet"), None),
            "labeled groups since a timestamp": ("admin", "GET", api("labeled-groups", since=since), None),
            "labeled groups, whole run": ("admin", "GET", api("labeled-groups"), None),
        }
        print(f"timing {len(api_calls)} API calls x {args.api_requests} ...", flush=True)
        api_results = time_requests(api_calls, clients, args.api_requests, skip_next)
        plan = explain_pick(run.project, run, reviewers[3])
        n_judgments_total = Judgment.objects.filter(group__run=run).count()
        info = (
            f"{usable_cores()} cores, {cpu_model()}, {memory_gib()} RAM, load {load_average():.2f}; "
            f"PostgreSQL {postgres_version(db_url)}; Python {sys.version.split()[0]}"
        )
    finally:
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001  (Django may not be set up yet)
            pass
        if not args.keep and not args.measure_only:
            recreate_database(admin_url, args.database, drop_only=True)
        workdir.cleanup()

    goals = {
        "agreement API, run, 1000 resamples": 2000,
        "agreement API, run, 1000 resamples, cold": 2000,
        "calibration page, cold": 150,
        "whole-run export, Parquet": 1000,
    }
    print()
    print(f"machine: {info}")
    print(
        f"load: 1 run, {steps} steps x {args.groups_per_step} groups x {ROLLOUTS} rollouts = {n_rollouts:,} rollouts "
        f"({n_mixed:,} mixed groups); {n_judgments_total:,} judgments by {len(reviewers)} reviewers (overlap 20 %) "
        f"and an adjudicator ({work['adjudications']} adjudications); {n_signals} cheat signals, {work['audits']} audited"
    )
    print(
        f"ingest {ingest_s:.0f} s ({n_rollouts / ingest_s:,.0f} rollouts/s); grading + computation {grade_s:.0f} s "
        f"({n_mixed / grade_s:,.1f} mixed groups/s, {grade_s / n_rollouts * 1e6:.0f} µs per rollout); "
        f"judgments {work['judged_s'] / max(1, work['judgments']) * 1000:.0f} ms each (queue pick + submit)"
    )
    print(
        f"database {total_bytes / 1e6:,.0f} MB = {total_bytes / n_rollouts:,.0f} bytes per rollout; largest tables: "
        + ", ".join(f"{name} {size / 1e6:,.0f} MB" for name, size in tables)
    )
    print()
    print("| what | p50 ms | p95 ms | max ms | queries | goal (p95) | met |")
    print("|---|---:|---:|---:|---:|---|---|")
    for name, r in {**page_results, **api_results}.items():
        goal = goals.get(name, 150 if name in page_results else None)
        met = "–" if goal is None else ("yes" if r["p95"] <= goal else "**no**")
        print(
            f"| {name} | {r['p50']:.0f} | {r['p95']:.0f} | {r['max']:.0f} | {r['queries']} | "
            f"{'–' if goal is None else f'≤ {goal:,} ms'} | {met} |"
        )
    print()
    print("EXPLAIN ANALYZE of the queue's pick (reviews.selectors.queue.queue_groups(...)[:1]):")
    print(plan)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
