#!/usr/bin/env python
"""A trainer's loop with nothing but the Gagar client: set the run's policy, then per step
post the groups, wait until the step is final and take the redistributed advantages.

    GAGAR_URL=http://127.0.0.1:8000 GAGAR_TOKEN=gagar_... GAGAR_PROJECT=demo \
        python client/examples/train_loop.py --run my-run --steps 3

The groups here are toy ones (a two-line fix sampled 8 times, some passing: clean, cluttered
or with a stray script, so the grader sorts them into tiers); a real trainer posts its own
rollouts in the same shape (docs/formats.md, `gagar-group/1`). It prints one line per step —
the tiers the grader gave and on how many rollouts A* differs from the plain advantage A —
and exits non-zero if a step does not become final in time.
"""

import argparse
import os
import random
import sys

from gagar_client import Client, StepNotFinal

# A passing fix comes in one of three shapes, so the heuristic grader has something to tell
# apart: the two-line fix alone; the fix with leftover clutter (a debug print and notes);
# the fix plus a stray reproduce script at the repository root (out of scope). The grader
# ranks them T1, T2 and T3, and the step's A* moves credit from the last to the first.
FIX = " def add(a, b):\n-    return a - b\n+    return a + b\n"
CLUTTER = "".join(f"+    # note {k}: checked the operator again\n" for k in range(12)) + "+    print('debug', a, b)\n"
REPRODUCE = (
    "diff --git a/reproduce.py b/reproduce.py\nnew file mode 100644\n--- /dev/null\n+++ b/reproduce.py\n@@ -0,0 +1,30 @@\n"
    + "".join(f"+print('case {k}', __import__('calc.ops').ops.add({k}, {k}))\n" for k in range(30))
)


def toy_patch(shape: str) -> str:
    extra = CLUTTER if shape == "cluttered" else ""
    patch = (
        "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"
        f"@@ -1,2 +1,{2 + extra.count(chr(10))} @@\n{FIX}{extra}"
    )
    return patch + (REPRODUCE if shape == "stray" else "")


def toy_group(rng: random.Random, step: int, task: int, n: int = 8) -> dict:
    rollouts = []
    for index in range(n):
        passed = rng.random() < 0.5
        shape = rng.choice(("clean", "cluttered", "stray")) if passed else "clean"
        rollouts.append(
            {
                "index": index,
                "reward": 1.0 if passed else 0.0,
                "patch": toy_patch(shape),
                "messages": [
                    {"role": "user", "content": f"Task {task}: add() subtracts."},
                    {"role": "assistant", "content": "Fixing the operator.", "action": "sed -i s/-/+/ calc/ops.py"},
                ],
                "tests": {"FAIL_TO_PASS": {"success": ["test_add"] if passed else [], "failure": [] if passed else ["test_add"]}},
            }
        )
    return {
        "uid": f"task-{task}@{step}",
        "task": {"instance_id": f"task-{task}", "repo": "toy/calc", "problem_statement": "add() subtracts"},
        "rollouts": rollouts,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", default="toy-run")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--groups", type=int, default=6)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    gagar = Client(os.environ["GAGAR_URL"], os.environ["GAGAR_TOKEN"], project=os.environ["GAGAR_PROJECT"])
    gagar.ensure_run(args.run, auto_grade="heuristic", grading_deadline_seconds=600)
    rng = random.Random(0)
    for step in range(1, args.steps + 1):
        gagar.post_step(args.run, step, [toy_group(rng, step, task) for task in range(args.groups)])
        try:
            rows = gagar.wait_for_step(args.run, step, timeout=args.timeout)
        except StepNotFinal as exc:
            print(f"step {step}: not final in time ({exc})", file=sys.stderr)
            return 1
        a_star = gagar.advantages(args.run, step, inputs_version=rows.inputs_version)
        tiers = sorted({row["tier"] for row in rows if row.get("tier")})
        moved = sum(
            1
            for row in rows
            if None not in (row.get("advantage"), row.get("redistributed_advantage"))
            and abs(row["redistributed_advantage"] - row["advantage"]) > 1e-9
        )
        print(
            f"step {step}: final, inputs_version {rows.inputs_version}, {len(a_star)} advantages, "
            f"tiers {','.join(tiers) or '-'}, A* != A on {moved}, sum of A* {sum(a_star.values()):+.6f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
