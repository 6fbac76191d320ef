#!/usr/bin/env python
"""LLM grader throughput against a local chat completions server that answers in 50 ms.

    .venv/bin/python benchmarks/grading.py                  # 100 groups x 20 tool turns, 8 jobs

1. Builds --groups mixed groups of 8 rollouts (grading.ingest.demo.make_group: real-sized
   patches, trajectories of 8-40 steps, test outcomes and logs) as GroupWorkspaces.
2. Serves tests/helpers/fake_openai.py on 127.0.0.1, in a separate process (as a model
   server would be) unless --in-process. Its scripted model makes --turns tool calls per
   group, cycling get_task, list_rollouts, summarize_turns, read_turns, read_patch,
   test_outcomes and read_test_log over the rollouts, then submits a verdict (every pass
   T1 rank 1 except the last, T2 with a turn citation) that validates; every answer
   waits --delay seconds.
3. Grades all groups with one LLMGrader shared by a pool of --jobs threads (the real
   openai client, keep-alive connections), checks that every verdict is valid, and prints
   the machine, achieved and ideal throughput (ideal = jobs / ((turns + 1) x delay): the
   server's wait alone) and their ratio (goal >= 80%).
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _support import (  # benchmarks/ is on sys.path when a script runs
    cpu_model,
    load_average,
    memory_gib,
    mixed_workspace,
    usable_cores,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from grading.grader.llm import LLMGrader  # noqa: E402
from grading.grader.workspace import GroupWorkspace  # noqa: E402
from tests.helpers.fake_openai import FakeOpenAI, scripted_model  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", type=int, default=100)
    p.add_argument("--turns", type=int, default=20, help="tool calls per group before the verdict")
    p.add_argument("--jobs", type=int, default=8, help="concurrent grade() calls")
    p.add_argument("--delay", type=float, default=0.05, help="seconds the server waits before each answer")
    p.add_argument("--in-process", action="store_true", help="serve from a thread of this process instead of a child process")
    p.add_argument("--seed", type=int, default=11)
    return p.parse_args()


def workspaces(n: int, seed: int) -> list[GroupWorkspace]:
    rng = random.Random(seed)
    return [mixed_workspace(rng, number) for number in range(n)]


def _serve(turns: int, delay: float, ports, stop) -> None:
    server = FakeOpenAI(responder=scripted_model(turns), delay=delay, record=False).start()
    ports.put(int(server.base_url.rsplit(":", 1)[1].split("/")[0]))
    stop.wait()
    server.stop()


def main() -> None:
    args = parse_args()
    groups = workspaces(args.groups, args.seed)
    if args.in_process:
        server = FakeOpenAI(responder=scripted_model(args.turns), delay=args.delay, record=False).start()
        base_url, child, stop = server.base_url, None, None
    else:
        ctx = multiprocessing.get_context("fork")
        ports, stop = ctx.Queue(), ctx.Event()
        child = ctx.Process(target=_serve, args=(args.turns, args.delay, ports, stop), daemon=True)
        child.start()
        base_url = f"http://127.0.0.1:{ports.get(timeout=30)}/v1"
    grader = LLMGrader(
        base_url=base_url, model="fake", api_key="bench", max_turns=args.turns + 4, request_timeout=30, max_retries=2
    )

    try:
        grader.grade(groups[0])  # warm up: imports, first connection
        cpu0, started = time.process_time(), time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(grader.grade, groups))
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu0
    finally:
        grader.close()
        if child is not None:
            stop.set()
            child.join(10)
        else:
            server.stop()

    bad = [(g.uid, r.status, r.errors[:2]) for g, r in zip(groups, results) if r.status != "valid"]
    if bad:
        raise SystemExit(f"{len(bad)} verdicts were not valid, e.g. {bad[:3]}")
    calls = sum(r.usage["api_calls"] for r in results)
    assert calls == args.groups * (args.turns + 1), calls
    achieved = args.groups / wall
    ideal = args.jobs / ((args.turns + 1) * args.delay)
    latency = sorted(r.usage["latency_s"] for r in results)

    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, {memory_gib()} RAM, load {load_average():.2f}; "
        f"Python {platform.python_version()}, openai {openai.__version__}; server "
        f"{'in this process' if args.in_process else 'in a child process'}"
    )
    print(
        f"Load: {args.groups} groups x ({args.turns} tool turns + verdict) = {calls} chat completions, "
        f"{args.jobs} concurrent jobs, server answers after {args.delay * 1000:.0f} ms"
    )
    print()
    print("| Measure | Value |")
    print("|---|---:|")
    print(f"| wall time | {wall:.2f} s |")
    print(f"| achieved throughput | {achieved:.2f} groups/s ({calls / wall:.0f} calls/s) |")
    print(f"| ideal throughput ({args.jobs} / ({args.turns + 1} x {args.delay * 1000:.0f} ms)) | {ideal:.2f} groups/s |")
    print(f"| **achieved / ideal** | **{achieved / ideal:.1%}** (goal >= 80%) |")
    print(
        f"| grade() latency median / max | {latency[len(latency) // 2]:.2f} s / {latency[-1]:.2f} s (ideal "
        f"{(args.turns + 1) * args.delay:.2f} s) |"
    )
    print(f"| client CPU per call | {cpu / calls * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
