"""Benchmark: import generated mini-swe-agent runs into PostgreSQL through `import_runs`.

    .venv/bin/python benchmarks/import_runs.py [--trajectories 500] [--runs 4] [--pg postgres://postgres@127.0.0.1:5432/postgres]

Writes `--runs` run folders of the same tasks (500 trajectories in all by default) shaped
like the real mini-swe-agent-1 files in tests/fixtures (system and instance prompts,
20-55 steps of THOUGHT + fenced bash with the raw response, reasoning and usage under
`extra.response`, `<returncode>` observations, `info.config`; 100-200 kB each) plus a
SWE-bench report.json per trajectory into a temporary folder, creates its own database
`gagar_bench_import`, migrates it, imports everything (first import, then the same files
again, which must change nothing), prints files/s and MB/s and the machine, and drops
the database.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

from _support import (  # benchmarks/_support.py (this folder is on sys.path when a script runs)
    cpu_model,
    memory_gib,
    recreate_database,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DB_NAME = "gagar_bench_import"
WORDS = (
    "the a to of in is that for it with as on be this by are or from an not file test function value return class "
    "self def import error raise none true false if else while data path line column index list dict str int model "
    "check fix issue expected actual output input module package call args kwargs result parse format config patch"
).split()
SYSTEM = (
    "You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks.\n"
    "Your response must contain exactly ONE bash code block with ONE command (or commands connected with && or ||).\n"
) * 4


def text(rng: random.Random, n_chars: int) -> str:
    words, size = [], 0
    while size < n_chars:
        w = rng.choice(WORDS)
        words.append(w)
        size += len(w) + 1
    return " ".join(words)


def code(rng: random.Random, n_chars: int) -> str:
    lines, size = [], 0
    while size < n_chars:
        line = (
            f"{rng.randint(1, 2000):>6}\t    {rng.choice(WORDS)} = {rng.choice(WORDS)}({rng.choice(WORDS)}, {rng.randint(0, 99)})"
        )
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)


def trajectory(rng: random.Random, instance_id: str) -> dict:
    problem = text(rng, rng.randint(600, 2500))
    instance = (
        f"<pr_description>\nConsider the following PR description:\n{problem}\n</pr_description>\n\n<instructions>\n"
        f"{text(rng, 4500)}\n</instructions>"
    )
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": instance}]
    steps = rng.randint(20, 38)
    cost = 0.0
    for step in range(steps):
        command = f"grep -rn '{rng.choice(WORDS)}' src/{rng.choice(WORDS)}.py | head -{rng.randint(5, 50)}"
        content = f"THOUGHT: {text(rng, rng.randint(250, 1400))}\n\n```bash\n{command}\n```"
        tokens = rng.randint(2000, 40000)
        cost += tokens * 2e-6
        response = {
            "id": f"gen-{rng.getrandbits(48)}",
            "provider": "Google AI Studio",
            "model": "google/gemini-3-pro-preview",
            "object": "chat.completion",
            "created": 1763510090 + step,
            "choices": [
                {
                    "logprobs": None,
                    "finish_reason": "stop",
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "refusal": None,
                        "reasoning": text(rng, rng.randint(300, 1200)),
                    },
                }
            ],
            "usage": {"prompt_tokens": tokens - 300, "completion_tokens": 300, "total_tokens": tokens, "cost": tokens * 2e-6},
        }
        messages.append({"role": "assistant", "content": content, "extra": {"response": response}})
        messages.append(
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{code(rng, rng.randint(300, 1800))}\n</output>"}
        )
    submission = "".join(
        f"diff --git a/src/m{k}.py b/src/m{k}.py\n--- a/src/m{k}.py\n+++ b/src/m{k}.py\n@@ -{k * 10 + 1},3 +{k * 10 + 1},3 @@\n"
        f" {text(rng, 40)}\n-{text(rng, 50)}\n+{text(rng, 50)}\n {text(rng, 40)}\n"
        for k in range(rng.randint(1, 4))
    )
    messages.append(
        {
            "role": "assistant",
            "content": (
                "THOUGHT: done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```"
            ),
        }
    )
    messages.append({"role": "user", "content": submission})
    info = {
        "exit_status": "Submitted",
        "submission": submission,
        "model_stats": {"instance_cost": round(cost, 4), "api_calls": steps + 1},
        "mini_version": "1.15.0",
        "config": {
            "agent": {"system_template": SYSTEM, "instance_template": text(rng, 6000)},
            "model": {"model_name": "google/gemini-3-pro-preview"},
        },
    }
    return {"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1", "instance_id": instance_id}


def report(rng: random.Random, resolved: bool) -> dict:
    tests = [f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{i}" for i in range(rng.randint(5, 120))]
    return {
        "patch_is_None": False,
        "patch_exists": True,
        "patch_successfully_applied": True,
        "resolved": resolved,
        "tests_status": {
            "FAIL_TO_PASS": {"success": tests[:1] if resolved else [], "failure": [] if resolved else tests[:1]},
            "PASS_TO_PASS": {"success": tests[1:], "failure": []},
            "FAIL_TO_FAIL": {"success": [], "failure": []},
            "PASS_TO_FAIL": {"success": [], "failure": []},
        },
    }


def generate(folder: Path, *, trajectories: int, runs: int, seed: int = 7) -> tuple[list[Path], list[int]]:
    """Run folders and the size of each trajectory file."""
    rng = random.Random(seed)
    sizes: list[int] = []
    tasks = [f"{rng.choice(WORDS)}-org__{rng.choice(WORDS)}-{1000 + i}" for i in range(-(-trajectories // runs))]
    roots, written = [], 0
    for r in range(runs):
        root = folder / f"run-{r + 1}"
        for instance_id in tasks:
            if written == trajectories:
                break
            traj_dir = root / "trajs" / instance_id
            traj_dir.mkdir(parents=True)
            body = json.dumps(trajectory(rng, instance_id), indent=2)
            (traj_dir / f"{instance_id}.traj.json").write_text(body)
            sizes.append(len(body.encode()))
            log_dir = root / "logs" / instance_id
            log_dir.mkdir(parents=True)
            (log_dir / "report.json").write_text(json.dumps({instance_id: report(rng, rng.random() < 0.6)}))
            written += 1
        roots.append(root)
    return roots, sizes


def machine() -> str:
    cpu, mem = cpu_model(), f", {memory_gib()} RAM" if memory_gib() else ""
    return f"{cpu}, {os.cpu_count()} cores{mem}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trajectories", type=int, default=500)
    parser.add_argument("--runs", type=int, default=4, help="runs of the same tasks (group size)")
    parser.add_argument(
        "--pg",
        default=os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="a PostgreSQL server (any database) where gagar_bench_import may be created",
    )
    parser.add_argument("--database", default=DB_NAME, help="created and dropped by this script")
    args = parser.parse_args()

    server = urlparse(args.pg)
    recreate_database(args.pg, args.database)
    os.environ["DATABASE_URL"] = urlunparse(server._replace(path=f"/{args.database}"))
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gagar_web.settings")
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, connections

        from grading.ingest.importers.scan import Source
        from grading.ingest.imports.runs import import_runs
        from grading.models import Project, Rollout

        call_command("migrate", verbosity=0)
        project = Project.objects.create(name="bench")
        with tempfile.TemporaryDirectory(prefix="gagar-bench-import-") as tmp:
            t0 = time.perf_counter()
            roots, sizes = generate(Path(tmp), trajectories=args.trajectories, runs=args.runs)
            generated = time.perf_counter() - t0
            sources = [Source(root) for root in roots]
            t0 = time.perf_counter()
            first = import_runs(project=project, run="bench", step=0, sources=sources)
            first_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            again = import_runs(project=project, run="bench", step=0, sources=sources)
            again_s = time.perf_counter() - t0
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            pg_version = cursor.fetchone()[0]
        assert first.rollouts_created == args.trajectories and not first.refused, first.as_dict()
        assert again.rollouts_unchanged == args.trajectories and again.rollouts_created == 0
        n_traj = args.trajectories
        mb = first.bytes / 1e6
        print(f"machine:     {machine()}, PostgreSQL {pg_version}")
        print(
            f"data:        {n_traj} mini-swe-agent-1 trajectories in {args.runs} runs + {n_traj} report.json = "
            f"{first.files} files, "
            f"{mb:.1f} MB (trajectories {min(sizes) / 1e3:.0f}-{max(sizes) / 1e3:.0f} kB, "
            f"{sum(sizes) / n_traj / 1e3:.0f} kB on average; "
            f"generated in {generated:.1f} s)"
        )
        print(f"result:      {first.groups} groups ({first.groups_mixed} mixed), {Rollout.objects.count()} rollouts")
        print(
            f"import:      {first_s:6.1f} s  {first.files / first_s:6.1f} files/s  {n_traj / first_s:6.1f} "
            f"trajectories/s  {mb / first_s:5.1f} MB/s"
        )
        print(
            f"re-import:   {again_s:6.1f} s  {again.files / again_s:6.1f} files/s  {n_traj / again_s:6.1f} "
            f"trajectories/s  {mb / again_s:5.1f} MB/s"
            "  (all unchanged)"
        )
        connections.close_all()
    finally:
        recreate_database(args.pg, args.database, drop_only=True)


if __name__ == "__main__":
    main()
