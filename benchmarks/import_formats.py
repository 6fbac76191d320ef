"""Benchmark: import an OpenHands output.jsonl and a verl rollout dump into PostgreSQL through `import_runs`.

    .venv/bin/python benchmarks/import_formats.py [--instances 300] [--steps 20] [--rows 512] [--group 8]

OpenHands: the real lines of tests/fixtures/openhands-multi-swe-bench/output.jsonl repeated
under new instance ids into one `output.jsonl` (about 230 kB a line: the event stream repeats
the model response in every event), with `test_result.report.resolved` on every other line.
verl: `--steps` files `<step>.jsonl` written with verl's own `_dump_generations` layout,
`--rows` rows each in groups of `--group` responses per prompt (no `uid`: grouped by input),
1-2 kB of text a row, 0/1 scores. Creates its own database `gagar_bench_formats`, imports each
twice (the second must change nothing), prints lines/s and MB/s and the machine, drops it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from _support import cpu_model, in_process_django, memory_gib, postgres_version, recreate_database

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DB_NAME = "gagar_bench_formats"
FIXTURE = ROOT / "tests" / "fixtures" / "openhands-multi-swe-bench" / "output.jsonl"


def write_openhands(folder: Path, instances: int) -> Path:
    real = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    path = folder / "openhands" / "output.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("w") as out:
        for n in range(instances):
            line = dict(real[n % len(real)])
            line["instance_id"] = f"bench__repo-{n}"
            line["instance"] = {**line["instance"], "instance_id": line["instance_id"]}
            if n % 2 == 0:
                line["test_result"] = {**line["test_result"], "report": {"resolved": n % 4 == 0}}
            out.write(json.dumps(line) + "\n")
    return path.parent


def write_verl(folder: Path, steps: int, rows: int, group: int) -> Path:
    rng = random.Random(7)
    dump = folder / "rollout_data"
    dump.mkdir()
    words = "the a of to in is that for it with as on be this by are or from an not value return".split()
    for step in range(1, steps + 1):
        prompts = [
            f"user\nProblem {step}-{p}: " + " ".join(rng.choices(words, k=60)) + "\nassistant\n" for p in range(rows // group)
        ]
        inputs = [p for p in prompts for _ in range(group)]
        outputs = [" ".join(rng.choices(words, k=rng.randint(150, 300))) for _ in inputs]
        scores = [float(rng.random() < 0.5) for _ in inputs]
        base = {
            "input": inputs,
            "output": outputs,
            "score": scores,
            "step": [step] * len(inputs),
            "acc": [s == 1.0 for s in scores],
        }
        lines = [json.dumps({k: v[i] for k, v in base.items()}, ensure_ascii=False) for i in range(len(inputs))]
        (dump / f"{step}.jsonl").write_text("\n".join(lines) + "\n")
    return dump


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--instances", type=int, default=300)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--database", default=DB_NAME, help="created and dropped by this script")
    args = parser.parse_args()
    admin_url, db_url = in_process_django(args.database)
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connections

        from grading.ingest.importers.scan import Source
        from grading.ingest.imports.runs import import_runs
        from grading.models import Project

        call_command("migrate", verbosity=0)
        project = Project.objects.create(name="bench")
        print(f"machine:   {cpu_model()}, {os.cpu_count()} cores, {memory_gib()} RAM, PostgreSQL {postgres_version(db_url)}")
        with tempfile.TemporaryDirectory(prefix="gagar-bench-formats-") as tmp:
            for label, folder, rows, fmt in (
                ("openhands", write_openhands(Path(tmp), args.instances), args.instances, "openhands"),
                ("verl", write_verl(Path(tmp), args.steps, args.rows, args.group), args.steps * args.rows, "verl"),
            ):
                for attempt in ("import", "re-import"):
                    t0 = time.perf_counter()
                    s = import_runs(project=project, run=label, step=0, sources=[Source(folder)], fmt=fmt)
                    took = time.perf_counter() - t0
                    assert not s.refused and not s.aborted, s.as_dict()
                    assert (s.rollouts_created if attempt == "import" else s.rollouts_unchanged) == rows, s.as_dict()
                    print(
                        f"{label:9} {attempt:9} {rows:6} lines in {s.groups:5} groups, {s.bytes / 1e6:6.1f} MB: "
                        f"{took:6.1f} s  {rows / took:7.1f} lines/s  {s.bytes / 1e6 / took:5.1f} MB/s"
                    )
        connections.close_all()
    finally:
        recreate_database(admin_url, args.database, drop_only=True)


if __name__ == "__main__":
    main()
