"""Groups built from the real trajectories of tests/fixtures.

- `load_real_groups()`: the 16 real mini-swe-agent trajectories, one rollout a group;
  `real_groups(folder)` reads either mini-swe-agent folder, `load_real_long_groups()` puts all 64
  real trajectories into groups of several rollouts
- a multi-model group: `multi_model_group()`, its producers' values `producer_values()`,
  and `scratch_files_group()`, the same with a shared change, scratch files and a rollout without tests
"""

from __future__ import annotations

import json
from pathlib import Path

from grading.ingest.importers.mini_swe_agent import rollout_from_trajectory
from tests.helpers.vendored import MINI_SWE_AGENT, MINI_SWE_AGENT_MORE


def load_real_groups() -> list[dict]:
    """The 16 real mini-swe-agent trajectories as gagar-group/1 groups (one rollout each)."""
    return real_groups(MINI_SWE_AGENT)


def real_groups(folder: Path = MINI_SWE_AGENT) -> list[dict]:
    """The real mini-swe-agent trajectories of `folder` (MINI_SWE_AGENT or MINI_SWE_AGENT_MORE:
    trajs/<id>/<id>.traj.json, with logs/<id>/report.json) as gagar-group/1 groups of one
    rollout each, in instance id order, read as `load_real_groups()` reads the first folder
    (for which it gives the same groups)."""
    groups = []
    for traj_path in sorted((folder / "trajs").glob("*/*.traj.json")):
        instance_id = traj_path.parent.name
        traj = json.loads(traj_path.read_text())
        report_path = folder / "logs" / instance_id / "report.json"
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        rollout = rollout_from_trajectory(traj, index=0, report=report, ref=str(traj_path.relative_to(folder)))
        repo = instance_id.split("__")[0] + "/" + instance_id.split("__")[1].rsplit("-", 1)[0]
        problem = next((m["content"] for m in rollout["messages"] if m["role"] == "user"), "")
        groups.append(
            {
                "format": "gagar-group/1",
                "run": "gemini-3-pro-swebench",
                "step": 0,
                "uid": f"{instance_id}@0",
                "task": {"instance_id": instance_id, "repo": repo, "problem_statement": problem},
                "rollouts": [rollout],
            }
        )
    return groups


def load_real_long_groups(size: int = 4) -> list[dict]:
    """All 64 real trajectories (MINI_SWE_AGENT's 16 and MINI_SWE_AGENT_MORE's 48) as
    gagar-group/1 groups of `size` rollouts (16 groups of 4 by default; the last one smaller
    when `size` does not divide 64), in instance id order, for tests that want real lengths
    (33-157 kB of message text a rollout) in groups of several rollouts.

    One attempt per task is all the data has, so a group's rollouts are attempts at
    different tasks: the group and its task get new ids, `real-long-<n>@0` and
    `real-long-<n>` (run `gemini-3-pro-swebench-long`), the task taking the repository and
    problem statement of the group's first rollout; rollouts are indexed 0..size-1 and keep
    their own reward, patch, messages, tests and source ref. The ids differ from
    `load_real_groups()`'s, so both can be ingested into one project."""
    singles = sorted(real_groups(MINI_SWE_AGENT) + real_groups(MINI_SWE_AGENT_MORE), key=lambda g: g["task"]["instance_id"])
    groups = []
    for n, start in enumerate(range(0, len(singles), size)):
        members = singles[start : start + size]
        groups.append(
            {
                "format": "gagar-group/1",
                "run": "gemini-3-pro-swebench-long",
                "step": 0,
                "uid": f"real-long-{n:02d}@0",
                "task": {**members[0]["task"], "instance_id": f"real-long-{n:02d}"},
                "rollouts": [{**g["rollouts"][0], "index": i} for i, g in enumerate(members)],
            }
        )
    return groups


# Producers a multi-model group's rollouts name in their source, metadata and cost:
# a blind judge must meet none of these values anywhere (tests/hostile/test_producer_blind_doors.py).
PRODUCERS = (
    {
        "dir": "results_claude_10",
        "model": "claude-sonnet-4-5-20250929",
        "agent": "claude-code-agent@2.1",
        "llm": "anthropic/claude-sonnet-4-5",
        "checkpoint": "ckpt-claude-step-900",
        "cost": 3.98765,
    },
    {
        "dir": "results_gpt5_snowflake",
        "model": "gpt-5-2025-08-07",
        "agent": "codex-agent@0.9",
        "llm": "openai/gpt-5",
        "checkpoint": "ckpt-gpt5-step-450",
        "cost": 8.76543,
    },
)


def multi_model_group(uid: str = "g1@1", *, run: str = "r1", step: int = 1, size: int = 6) -> dict:
    """A real group (load_real_long_groups' second: long trajectories, five passing of six)
    whose first half of rollouts one model made and the second half another, as a
    multi-model SWE-bench run reads: `source.ref` under `results_claude_10/` or
    `results_gpt5_snowflake/`, the model, agent config and checkpoint in metadata, each
    model's cost in stats."""
    group = load_real_long_groups(size)[1]
    rollouts = []
    for rollout in group["rollouts"]:
        producer = PRODUCERS[0 if rollout["index"] < size // 2 else 1]
        rollouts.append(
            {
                **rollout,
                "source": {"format": rollout["source"]["format"], "ref": f"{producer['dir']}/{rollout['source']['ref']}"},
                "stats": {**rollout["stats"], "cost_usd": producer["cost"]},
                "metadata": {
                    **rollout.get("metadata", {}),
                    "model": producer["model"],
                    "agent": producer["agent"],
                    "llm_config": {"model": producer["llm"], "temperature": 0.7},
                    "checkpoint": producer["checkpoint"],
                    "run_name": f"{producer['dir']}-run",
                },
            }
        )
    return {**group, "run": run, "step": step, "uid": uid, "rollouts": rollouts}


def producer_values(group: dict) -> list[str]:
    """What of `multi_model_group` names its producers: every value a blind judge must not see."""
    values = {p[key] for p in PRODUCERS for key in ("dir", "model", "agent", "llm", "checkpoint")}
    values |= {f"{p['dir']}-run" for p in PRODUCERS}
    values |= {f"{p['cost']:.3f}" for p in PRODUCERS} | {str(p["cost"]) for p in PRODUCERS}
    values |= {r["source"]["ref"] for r in group["rollouts"]} | {r["source"]["format"] for r in group["rollouts"]}
    return sorted(values)


def new_file_diff(path: str, lines: list[str]) -> str:
    """A unified diff adding `path` with `lines`."""
    body = "".join(f"+{text}\n" for text in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def scratch_files_group(uid: str = "g1@1", *, run: str = "r1", step: int = 1, summary_lines: int = 1600) -> dict:
    """multi_model_group (real long trajectories, two models named in source, metadata and
    cost; rollouts 0, 1, 2, 4, 5 pass) with what agents leave behind: rollouts 0, 2 and 4
    make one change (rollout 0's real fix), 4 with three scratch files put in front of it in
    its patch — a FIX_SUMMARY.md of `summary_lines` lines taken from its own trajectory, a
    debug_issue.py and a reproduce_issue.py — and rollout 1 with no test outcomes recorded."""
    group = multi_model_group(uid, run=run, step=step)
    rollouts = {r["index"]: r for r in group["rollouts"]}
    fix = rollouts[0]["patch"]
    text = [line for m in rollouts[4]["messages"] for line in str(m.get("content") or "").splitlines() if line.strip()]
    summary = [text[n % len(text)][:200] for n in range(summary_lines)]
    scratch = (
        new_file_diff("FIX_SUMMARY.md", summary)
        + new_file_diff("debug_issue.py", ["from django.core.management import base", "print(base.__file__)"])
        + new_file_diff("reproduce_issue.py", ["import django", "django.setup()", "print('reproduced')"])
    )
    rollouts[2]["patch"] = fix
    rollouts[4]["patch"] = scratch + fix
    rollouts[1]["tests"] = {}
    return group


# What agents leave in their patches beside the fix, by a rollout's index modulo 5: the
# real-size groups' patches (real_size_group) reach 26-29 files and +1,600 lines this way.
SCRATCH_PLANS = (
    (),
    (("reproduce_issue.py", 30), ("debug_issue.py", 12)),
    (("FIX_SUMMARY.md", 200), ("test_fix.py", 60)),
    tuple((f"debug_step_{n:02d}.py", 20) for n in range(25)),
    (("FIX_SUMMARY.md", 1600), ("reproduce.py", 40)),
)


def real_size_group(number: int, *, size: int = 15, run: str = "real-size", step: int = 1) -> dict:
    """A multi-model group of `size` real rollouts the size a reviewer meets: rollouts are the
    64 real trajectories (load_real_long_groups' order) from `number * size` on, wrapping
    around, so groups 0-3 of 15 share no trajectory; the first half named as one model's and
    the second as another's (source, metadata, cost, as multi_model_group); each rollout's
    real fix with the scratch files SCRATCH_PLANS gives its index put in front of it (their
    lines taken from its own trajectory, up to 120 characters), so patches hold up to 26-29
    files and +1,600 lines. The task is the first rollout's; uid `real-size-<number>@<step>`."""
    singles = sorted(real_groups(MINI_SWE_AGENT) + real_groups(MINI_SWE_AGENT_MORE), key=lambda g: g["task"]["instance_id"])
    members = [singles[(number * size + i) % len(singles)] for i in range(size)]
    rollouts = []
    for index, member in enumerate(members):
        rollout = member["rollouts"][0]
        producer = PRODUCERS[0 if index < size // 2 else 1]
        text = [line[:120] for m in rollout["messages"] for line in str(m.get("content") or "").splitlines() if line.strip()] or [
            "pass"
        ]
        scratch = "".join(
            new_file_diff(path, [text[(n * 7 + k) % len(text)] for k in range(lines)])
            for n, (path, lines) in enumerate(SCRATCH_PLANS[index % len(SCRATCH_PLANS)])
        )
        rollouts.append(
            {
                **rollout,
                "index": index,
                "patch": scratch + (rollout.get("patch") or ""),
                "source": {"format": rollout["source"]["format"], "ref": f"{producer['dir']}/{rollout['source']['ref']}"},
                "stats": {**rollout["stats"], "cost_usd": producer["cost"]},
                "metadata": {
                    **rollout.get("metadata", {}),
                    "model": producer["model"],
                    "agent": producer["agent"],
                    "checkpoint": producer["checkpoint"],
                },
            }
        )
    return {
        "format": "gagar-group/1",
        "run": run,
        "step": step,
        "uid": f"real-size-{number}@{step}",
        "task": {**members[0]["task"], "instance_id": f"real-size-{number}"},
        "rollouts": rollouts,
    }
