"""Real-length rollouts built from the real trajectories in tests/fixtures, for the benchmarks
that need a step of the method's size (benchmarks/training_loop.py --paper) or a search index
of real text (benchmarks/search.py).

The 64 vendored mini-swe-agent trajectories hold 33-157 kB of message text each; the method's
rollouts are longer (47k-114k tokens), so a rollout here is a trajectory with others appended
until it reaches the size asked for, as the importer stores them (messages, patch, tests).
Pure: no Django; importing grading.ingest.importers needs only the repository on sys.path.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
SOURCES = [FIXTURES / "mini-swe-agent-gemini-3-pro", FIXTURES / "mini-swe-agent-gemini-3-pro-more"]
GROUP_FORMAT = "gagar-group/1"


def real_rollouts() -> list[dict]:
    """The real trajectories as the importer makes rollouts of them (messages, patch, tests)."""
    from grading.ingest.importers.mini_swe_agent import rollout_from_trajectory

    out = []
    for folder in SOURCES:
        for path in sorted((folder / "trajs").glob("*/*.traj.json")):
            report = folder / "logs" / path.parent.name / "report.json"
            out.append(
                rollout_from_trajectory(
                    json.loads(path.read_text()),
                    index=0,
                    report=json.loads(report.read_text()) if report.exists() else None,
                    ref=path.name,
                )
            )
    return out


def joined_to_length(
    sources: list[dict], target: int, size: Callable[[dict], int], *, message_size: Callable[[dict], int] | None = None
) -> Iterator[tuple[dict, list[dict]]]:
    """Per source rollout: (it, its messages followed by other sources' until `size` of what
    was joined reaches `target`). The next source joined is 7 further on, so bodies differ.
    Whole sources are joined, unless `message_size` is given: then the last one joined
    contributes only the messages that reach `target` (`message_size` of each)."""
    for i, first in enumerate(sources):
        messages, total, j = list(first["messages"]), size(first), i
        while total < target:
            j = (j + 7) % len(sources)
            if message_size is None:
                messages += sources[j]["messages"]
                total += size(sources[j])
                continue
            for message in sources[j]["messages"]:
                if total >= target:
                    break
                messages.append(message)
                total += message_size(message)
        yield first, messages


def _problem(rollout: dict) -> str:
    return next((m.get("content", "") for m in rollout["messages"] if m.get("role") == "user"), "")


def write_step(
    path: Path,
    *,
    groups: int,
    rollouts: int,
    rollout_bytes: int,
    seed: int,
    mixed_share: float = 0.51,
) -> dict:
    """Write a step of `groups` x `rollouts` real-length rollouts (about `rollout_bytes` of JSON
    each) to `path` as gagar-group/1 JSON Lines without `run` and `step` (the trainer's client
    fills them in), one group at a time (never the step in memory).

    A group is mixed with probability `mixed_share` (the method's runs: ~800 of 1,568), with
    1..n-1 passes; else all fail or all pass. Each rollout is a real-length body drawn at random,
    with one observation of its own (`build check <12 hex digits>`), so no two are the same.
    Returns the sizes and `ends`, each line's end offset, so a prefix of the file is a smaller
    step (the first `k` groups)."""
    sources = real_rollouts()
    bodies = [
        {"messages": messages, "patch": first["patch"], "tests": first.get("tests") or {}, "problem": _problem(first)}
        for first, messages in joined_to_length(
            sources, rollout_bytes, lambda r: len(orjson.dumps(r)), message_size=lambda m: len(orjson.dumps(m)) + 1
        )
    ]
    rng = random.Random(seed)
    ends, mixed, rollout_json = [], 0, 0
    with path.open("wb") as f:
        for g in range(groups):
            if rng.random() < mixed_share:
                passes = rng.randint(1, rollouts - 1)
                mixed += 1
            else:
                passes = rng.choice((0, rollouts))
            rewards = [1] * passes + [0] * (rollouts - passes)
            rng.shuffle(rewards)
            items = []
            for k in range(rollouts):
                body = bodies[rng.randrange(len(bodies))]
                output = f"build check {rng.getrandbits(48):012x}"
                mark = {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{output}\n</output>"}
                item = {
                    "index": k,
                    "reward": rewards[k],
                    "messages": [*body["messages"], mark],
                    "patch": body["patch"],
                    "exit_status": "Submitted",
                }
                if body["tests"]:
                    item["tests"] = body["tests"]
                rollout_json += len(orjson.dumps(item))
                items.append(item)
            task = bodies[g % len(bodies)]
            line = {
                "format": GROUP_FORMAT,
                "uid": f"paper-{g}",
                "task": {"instance_id": f"paper__task-{g}", "problem_statement": task["problem"]},
                "rollouts": items,
            }
            f.write(orjson.dumps(line) + b"\n")
            ends.append(f.tell())
    n = groups * rollouts
    return {"groups": groups, "mixed": mixed, "rollouts": n, "avg_rollout_bytes": rollout_json / n, "ends": ends}


def read_groups(path: Path, count: int, batch: int) -> Iterator[list[dict]]:
    """The first `count` groups of a step file, `batch` at a time, parsed (a trainer's groups in
    memory as its rollouts finish); one batch is held at a time."""
    out: list[dict] = []
    with path.open("rb") as f:
        for n, line in enumerate(f):
            if n >= count:
                break
            out.append(orjson.loads(line))
            if len(out) == batch:
                yield out
                out = []
    if out:
        yield out
