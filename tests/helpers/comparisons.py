"""Two runs of the same tasks made of real trajectories, for the blind comparison's tests.

`two_runs(project)` ingests run `baseline` and run `gagar`, each with the same eight tasks
(`task-0` .. `task-7`) at steps 1 and 2. Side A's groups are load_real_long_groups()' first
eight, side B's the last eight (real mini-swe-agent trajectories, 33-157 kB of messages each,
with their own test verdicts), so a task's two sides hold different real attempts.
"""

from __future__ import annotations

from grading.models import Project
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import load_real_long_groups

RUNS = ("baseline", "gagar")
TASKS = 8


def side_groups(run: str, *, offset: int, steps: tuple[int, ...] = (1, 2)) -> list[dict]:
    groups = load_real_long_groups(4)[offset : offset + TASKS]
    out = []
    for step in steps:
        for n, group in enumerate(groups):
            task = {**group["task"], "instance_id": f"task-{n}"}
            out.append({**group, "run": run, "step": step, "uid": f"task-{n}@{step}", "task": task})
    return out


def two_runs(project: Project, names: tuple[str, str] = RUNS) -> None:
    ingest_groups(project, *side_groups(names[0], offset=0), *side_groups(names[1], offset=TASKS))


def solved(offset: int) -> set[str]:
    """The tasks a side's groups solved: at least one passing rollout."""
    groups = load_real_long_groups(4)[offset : offset + TASKS]
    return {f"task-{n}" for n, g in enumerate(groups) if any(r["reward"] == 1.0 for r in g["rollouts"])}
