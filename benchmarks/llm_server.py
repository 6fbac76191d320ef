#!/usr/bin/env python
"""How many grading conversations one real model server takes: llama.cpp's llama-server with
SmolLM2-135M-Instruct on this machine's CPU (tests/helpers/llama_server.py; built by
`scripts/llm-server build`, which `make test-llm` runs).

    .venv/bin/python benchmarks/llm_server.py                 # slots 1, 2, 4; 2 conversations a slot
    .venv/bin/python benchmarks/llm_server.py --slots 2 --per-slot 1 --turns 2   # smaller

For each number of parallel slots (`-np`, the context `--slot-context` tokens a slot), it
starts a server, grades one conversation alone to put the grader's system prompt into a
slot's cache (reported as "cold"), then grades slots x --per-slot conversations at once,
one thread each, with the real LLMGrader in native tool mode: the grader's own prompt and
tools on a demo group (grading.ingest.demo), --turns model calls of at most --max-tokens
tokens each at temperature 0. The model calls no tool, so every conversation is exactly
--turns calls: the load is the same whatever it says.

Printed per slot count: the wall time, conversations a minute, prompt tokens the server
processed (its own timings, cached tokens excluded) and generated, each per second, and the
mean conversation's latency. The model cannot grade; the figures are what the server, the
client and the machine cost a conversation, for sizing (docs/deployment.md).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import time
import urllib.request
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

from grading.grader.llm import LLMGrader  # noqa: E402
from grading.grader.workspace import GroupWorkspace  # noqa: E402
from tests.helpers.llama_server import ALIAS, LlamaServer, NotBuilt  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--slots", default="1,2,4", help="comma-separated parallel slots (-np) to measure")
    p.add_argument("--per-slot", type=int, default=2, help="conversations at once per slot")
    p.add_argument("--turns", type=int, default=3, help="model calls per conversation")
    p.add_argument("--max-tokens", type=int, default=64, help="tokens a reply may have")
    p.add_argument("--slot-context", type=int, default=6_144, help="context tokens per slot")
    p.add_argument("--threads", type=int, default=0, help="llama-server -t; 0 = the usable cores")
    p.add_argument("--seed", type=int, default=3)
    return p.parse_args()


def workspace(seed: int, number: int) -> GroupWorkspace:
    """The grading benchmark's demo group (benchmarks/grading.py), four rollouts."""
    return mixed_workspace(random.Random(seed + number), number, n_rollouts=4)


def server_tokens(server: LlamaServer) -> tuple[int, int, float, float]:
    """(prompt tokens processed, tokens generated, seconds spent on each) so far, summed over the
    timing lines the server logs for every request (cached prompt tokens are not processed)."""
    prompt = generated = 0
    prompt_ms = generated_ms = 0.0
    for line in (server.log_path.read_text(errors="replace") if server.log_path else "").splitlines():
        if "prompt eval time =" in line:
            ms, _, rest = line.partition("prompt eval time =")[2].partition(" ms /")
            prompt_ms += float(ms)
            prompt += int(rest.split("tokens")[0])
        elif " eval time =" in line:
            ms, _, rest = line.partition(" eval time =")[2].partition(" ms /")
            generated_ms += float(ms)
            generated += int(rest.split("tokens")[0])
    return prompt, generated, prompt_ms / 1000, generated_ms / 1000


def grade(server: LlamaServer, args: argparse.Namespace, number: int) -> tuple[float, str]:
    grader = LLMGrader(
        base_url=server.base_url,
        model=ALIAS,
        max_turns=args.turns,
        request_timeout=600,
        max_retries=0,
        request={"temperature": 0, "seed": args.seed, "max_tokens": args.max_tokens},
    )
    try:
        started = time.monotonic()
        result = grader.grade(workspace(args.seed, number))
        return time.monotonic() - started, f"{result.status}:{result.usage['turns']}"
    finally:
        grader.close()


def main() -> None:
    args = parse_args()
    threads = args.threads or usable_cores()
    print(
        f"machine: {platform.machine()} {cpu_model()}, {usable_cores()} usable cores, {memory_gib()}, load {load_average():.2f}"
    )
    print(
        f"model: SmolLM2-135M-Instruct Q4_1 on llama-server (-t {threads}), native tool calls, {args.turns} calls "
        f"of <= {args.max_tokens} tokens a conversation, temperature 0\n"
    )
    header = (
        f"{'slots':>5} {'conv':>5} {'cold s':>7} {'wall s':>7} {'conv/min':>8} {'prompt tok':>10} {'prompt t/s':>10} "
        f"{'gen tok':>8} {'gen t/s':>8} {'mean conv s':>11} outcomes"
    )
    print(header)
    for slots in [int(s) for s in args.slots.split(",")]:
        try:
            server = LlamaServer.from_environment(slots=slots, context=slots * args.slot_context, threads=threads)
        except NotBuilt as exc:
            sys.exit(f"no model server: {exc}")
        server.start()
        try:
            cold, _ = grade(server, args, 10_000)
            before = server_tokens(server)
            n = slots * args.per_slot
            started = time.monotonic()
            with ThreadPoolExecutor(max_workers=n) as pool:
                done = list(pool.map(grade, [server] * n, [args] * n, range(n)))
            wall = time.monotonic() - started
            after = server_tokens(server)
            prompt, generated = after[0] - before[0], after[1] - before[1]
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/health", timeout=10) as health:
                assert json.load(health)["status"] == "ok"
        finally:
            server.stop()
        outcomes = ",".join(sorted({o for _, o in done}))
        print(
            f"{slots:>5} {n:>5} {cold:>7.1f} {wall:>7.1f} {60 * n / wall:>8.2f} {prompt:>10} {prompt / wall:>10.1f} "
            f"{generated:>8} {generated / wall:>8.1f} {statistics.mean(s for s, _ in done):>11.1f} {outcomes}"
        )


if __name__ == "__main__":
    main()
