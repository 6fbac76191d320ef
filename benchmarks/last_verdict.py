#!/usr/bin/env python
"""The tail of a step: its last verdict stored -> advantages recomputed -> the trainer's export.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres \\
        .venv/bin/python benchmarks/last_verdict.py --sizes 392,784,1568 [--code OTHER_CHECKOUT]

For each size: a fresh PostgreSQL database (dropped at the end), migrated; one step of N
groups x --rollouts rollouts stored through the ingest service (grading.ingest.service,
small rollouts: the tail does not read bodies), about half of the groups mixed; every mixed
group but one given a valid verdict (bulk, as if graded earlier) and the step computed once
(as a trainer's earlier wait that timed out does). Then, timed in this process with eager
Celery (the recomputation runs where the verdict is stored, as one worker would):
the last verdict through `record_verdict` (its transaction, mark_stale and the
recomputation it queues), a waiting trainer's first final answer (`take_step` as
GET /api/v1/advantages/?wait= serves it) and the export taken again at that inputs version.
Reported per phase: wall and CPU seconds of this process, and the queries it sent.
`--code` runs the same against another checkout's code (a baseline), imported instead of
this one's. Figures are one run each; compare sizes and checkouts from the same run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _support import cpu_model, database_urls, load_average, recreate_database, usable_cores  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="392,784,1568", help="comma-separated groups per step")
    p.add_argument("--rollouts", type=int, default=16)
    p.add_argument("--code", default=str(HERE.parent), help="the checkout whose code is measured")
    p.add_argument("--database", default="gagar_bench_last_verdict", help="created and dropped by this script")
    p.add_argument("--profile", help="write a cProfile of the timed phases to this path (.<groups> appended)")
    args = p.parse_args()
    args.sizes = [int(n) for n in args.sizes.split(",")]
    return args


def group(n: int, rollouts: int) -> dict:
    mixed = n % 2 == 0
    rewards = [(i + n) % 2 if mixed else n % 4 == 1 for i in range(rollouts)]
    return {
        "format": "gagar-group/1",
        "run": "tail",
        "step": 1,
        "uid": f"t-{n}@1",
        "task": {"instance_id": f"t-{n}", "repo": "octo/widgets", "problem_statement": "Fix the widget."},
        "rollouts": [
            {
                "index": i,
                "reward": int(r),
                "patch": f"diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = {i}\n+y = {i + 1}\n",
                "messages": [{"role": "user", "content": "Fix the widget."}],
                "source": {"format": "test", "ref": f"b/{n}/{i}"},
            }
            for i, r in enumerate(rewards)
        ],
    }


class Phase:
    def __init__(self, connection):
        self.connection = connection

    def __enter__(self):
        self.queries = len(self.connection.queries)
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall_s = time.perf_counter() - self.wall
        self.cpu_s = time.process_time() - self.cpu
        self.n_queries = len(self.connection.queries) - self.queries


def run_size(n: int, args) -> dict:
    import orjson
    from django.core.management import call_command
    from django.db import connection, reset_queries

    from grading.ingest.service import ingest_group_lines
    from grading.method import releases
    from grading.method.services.computation import compute_step
    from grading.method.services.mappings import active_mapping
    from grading.models import Group, Project, RolloutGrade, Step, Verdict
    from grading.verdicts.store import GradeInput, record_verdict

    call_command("migrate", "--no-input", verbosity=0)
    project = Project.objects.create(name="bench")
    report = ingest_group_lines(project=project, lines=((i + 1, orjson.dumps(group(i, args.rollouts))) for i in range(n)))
    assert not report.refused, report
    step = Step.objects.select_related("run").get(run__name="tail", number=1)
    mixed = list(Group.objects.filter(step=step, is_mixed=True).order_by("id"))
    grader = "bench@1"
    for g in mixed[:-1]:
        v = Verdict.objects.create(group=g, grader=grader, status=Verdict.Status.VALID)
        passing = list(g.rollouts.filter(passed=True).order_by("index"))
        RolloutGrade.objects.bulk_create(
            RolloutGrade(verdict=v, rollout=r, tier=("T1", "T2", "T3")[k % 3], rank=k + 1) for k, r in enumerate(passing)
        )
    mapping = active_mapping(step.run)
    compute_step(step=step, mapping=mapping)  # a timed-out wait computed it earlier
    Step.objects.filter(pk=step.pk).update(inputs_version=step.inputs_version + 1)  # those verdicts bumped it
    last = mixed[-1]
    passing = list(last.rollouts.filter(passed=True).order_by("index"))
    grades = [GradeInput(index=r.index, tier=("T1", "T2", "T3")[k % 3], rank=k + 1) for k, r in enumerate(passing)]
    profiler = None
    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    reset_queries()
    with Phase(connection) as verdict_phase:
        record_verdict(group=last, grader=grader, status=Verdict.Status.VALID, grades=grades)
    with Phase(connection) as final_phase:
        taken = releases.take_step(step=step, mapping=mapping, fmt="jsonl", final=True)
    with Phase(connection) as again_phase:
        again = releases.taken_step(step=step, mapping=mapping, fmt="jsonl", inputs_version=taken.inputs_version)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(f"{args.profile}.{n}")
    assert again is not None and again.body == taken.body
    lines = taken.body.count(b"\n")
    assert lines == n * args.rollouts, lines
    return {"groups": n, "mixed": len(mixed), "rows": lines, "phases": (verdict_phase, final_phase, again_phase)}


def main() -> int:
    args = parse_args()
    sys.path.insert(0, str(Path(args.code).resolve()))
    admin_url, db_url = database_urls(args.database)
    os.environ.update(
        DATABASE_URL=db_url,
        DJANGO_SETTINGS_MODULE="gagar_web.settings",
        DJANGO_LOG_LEVEL="WARNING",
        DJANGO_DEBUG="true",  # the query log: queries per phase
        GAGAR_HIGHLIGHT_AHEAD="false",
    )
    os.environ.pop("CELERY_BROKER_URL", None)  # eager: the recomputation runs in the verdict's process
    os.environ.pop("GAGAR_SEARCH_INDEX", None)
    import django

    import grading

    django.setup()
    from django.db import connection

    results = []
    try:
        for n in args.sizes:
            connection.close()
            recreate_database(admin_url, args.database)
            results.append(run_size(n, args))
    finally:
        connection.close()
        recreate_database(admin_url, args.database, drop_only=True)
    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, load {load_average():.2f}; "
        f"code {Path(grading.__file__).parent.parent}; {args.rollouts} rollouts a group"
    )
    print(
        "| groups (mixed) | rows | verdict + recompute (s / CPU s / queries) | final answer (s / CPU s / queries) "
        "| export again (s) | last verdict -> final rows (s) |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for r in results:
        v, f, a = r["phases"]
        print(
            f"| {r['groups']:,} ({r['mixed']}) | {r['rows']:,} | {v.wall_s:.2f} / {v.cpu_s:.2f} / {v.n_queries} | "
            f"{f.wall_s:.2f} / {f.cpu_s:.2f} / {f.n_queries} | {a.wall_s:.3f} | {v.wall_s + f.wall_s:.2f} |"
        )
    print("last verdict -> final rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
