"""Generate realistic `gagar-group/1` groups: demo data, test factories and benchmark load.

Pure and deterministic for a given seed (no Django). Groups look like SWE-bench work:
multi-file Python patches, long agent trajectories with commands and outputs, test
outcomes with FAIL_TO_PASS / PASS_TO_PASS, and pass rates that make some groups mixed,
some all-pass and some all-fail.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

REPOS = [
    ("astropy/astropy", "astropy", ["io/fits/card.py", "units/quantity.py", "modeling/separable.py", "table/column.py"]),
    ("django/django", "django", ["db/models/query.py", "forms/fields.py", "utils/text.py", "contrib/admin/options.py"]),
    ("sympy/sympy", "sympy", ["core/expr.py", "printing/latex.py", "sets/sets.py", "polys/polytools.py"]),
    ("psf/requests", "requests", ["sessions.py", "models.py", "utils.py", "adapters.py"]),
    ("scikit-learn/scikit-learn", "sklearn", ["linear_model/_ridge.py", "metrics/_ranking.py", "utils/validation.py"]),
    ("matplotlib/matplotlib", "lib/matplotlib", ["axes/_base.py", "colors.py", "legend.py", "figure.py"]),
    ("pydata/xarray", "xarray", ["core/dataset.py", "core/indexes.py", "core/merge.py"]),
    ("sphinx-doc/sphinx", "sphinx", ["ext/autodoc/__init__.py", "domains/python.py", "util/typing.py"]),
]

IDENTS = ["value", "result", "index", "items", "config", "name", "shape", "units", "data", "key", "node", "expr"]
VERBS = ["normalize", "validate", "resolve", "convert", "format", "parse", "merge", "update", "compute"]


def _code_lines(rng: random.Random, n: int, indent: int = 4) -> list[str]:
    lines = []
    pad = " " * indent
    for _ in range(n):
        a, b = rng.sample(IDENTS, 2)
        kind = rng.random()
        if kind < 0.3:
            lines.append(f"{pad}{a} = {rng.choice(VERBS)}_{b}({a}, {b}={rng.randint(0, 9)})")
        elif kind < 0.5:
            lines.append(f"{pad}if {a} is None:")
            lines.append(f"{pad}    {a} = self._{b}")
        elif kind < 0.7:
            lines.append(f"{pad}for {a} in self.{b}s:")
            lines.append(f"{pad}    {b}.append({rng.choice(VERBS)}({a}))")
        elif kind < 0.85:
            lines.append(f"{pad}# {rng.choice(VERBS)} the {a} before the {b} is used")
        else:
            lines.append(f"{pad}return {a}")
    return lines


def _file_diff(rng: random.Random, path: str, hunks: int) -> str:
    out = [
        f"diff --git a/{path} b/{path}",
        f"index {rng.getrandbits(28):07x}..{rng.getrandbits(28):07x} 100644",
        f"--- a/{path}",
        f"+++ b/{path}",
    ]
    line = rng.randint(10, 60)
    for _ in range(hunks):
        before = _code_lines(rng, 3)
        removed = _code_lines(rng, rng.randint(0, 3))
        added = _code_lines(rng, rng.randint(1, 6))
        after = _code_lines(rng, 3)
        old_len = len(before) + len(removed) + len(after)
        new_len = len(before) + len(added) + len(after)
        out.append(f"@@ -{line},{old_len} +{line},{new_len} @@ def {rng.choice(VERBS)}_{rng.choice(IDENTS)}(self):")
        out += [" " + x for x in before] + ["-" + x for x in removed] + ["+" + x for x in added] + [" " + x for x in after]
        line += old_len + rng.randint(20, 80)
    return "\n".join(out) + "\n"


def make_patch(rng: random.Random, package: str, files: list[str], *, n_files: int, test_edit: bool = False) -> str:
    chosen = rng.sample(files, min(n_files, len(files)))
    parts = [_file_diff(rng, f"{package}/{path}", rng.randint(1, 3)) for path in chosen]
    if test_edit:
        parts.append(_file_diff(rng, f"{package}/tests/test_{rng.choice(IDENTS)}.py", 1))
    return "".join(parts)


SHARED_FIX_RATE = 0.7  # a passing rollout makes one of its group's shared fixes
SCRATCH_FILE_RATE = 0.35  # ... and leaves a scratch file in its patch
SCRATCH_FILES = ("debug_issue.py", "reproduce_issue.py", "final_test.py", "FIX_SUMMARY.md")


def _scratch_file(rng: random.Random) -> str:
    path = rng.choice(SCRATCH_FILES)
    body = (
        ["# notes on the fix", "The bug is fixed."]
        if path.endswith(".md")
        else ["import sys", "print('checking the fix')", "sys.exit(0)"]
    )
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(body)} @@\n"
        + "".join(f"+{line}\n" for line in body)
    )


def _observation(rng: random.Random, command: str, pad_chars: int) -> str:
    if command.startswith("python -m pytest"):
        n = rng.randint(5, 40)
        text = "\n".join(f"tests/test_{rng.choice(IDENTS)}.py::test_{rng.choice(VERBS)}_{i} PASSED" for i in range(n))
        text += f"\n\n======== {n} passed in {rng.uniform(0.5, 9):.2f}s ========"
    elif command.startswith("grep"):
        text = "\n".join(
            f"{rng.choice(IDENTS)}.py:{rng.randint(1, 900)}:{line.strip()}" for line in _code_lines(rng, rng.randint(3, 15))
        )
    else:
        text = "\n".join(_code_lines(rng, rng.randint(10, 60), indent=rng.choice([0, 4, 8])))
    if pad_chars > len(text):
        extra = []
        size = len(text)
        while size < pad_chars:
            chunk = "\n".join(_code_lines(rng, 40))
            extra.append(chunk)
            size += len(chunk)
        text += "\n" + "\n".join(extra)
    return f"<returncode>0</returncode>\n<output>\n{text}\n</output>"


def make_messages(
    rng: random.Random, problem: str, package: str, files: list[str], *, turns: int, target_chars: int = 0
) -> list[dict[str, Any]]:
    messages = [
        {
            "role": "system",
            "content": (
                "You are a helpful assistant that can interact multiple times with a computer shell to solve programming tasks."
            ),
        },
        {"role": "user", "content": f"<pr_description>\n{problem}\n</pr_description>"},
    ]
    per_obs = max(0, target_chars // max(1, turns) - 400)
    for t in range(turns):
        path = f"{package}/{rng.choice(files)}"
        command = rng.choice(
            [
                f"grep -rn '{rng.choice(IDENTS)}' {package} | head -30",
                f"sed -n '{rng.randint(1, 400)},+60p' {path}",
                f"cat {path}",
                "python -m pytest -x -q",
                f"python reproduce_{rng.choice(IDENTS)}.py",
            ]
        )
        thought = f"THOUGHT: I need to {rng.choice(VERBS)} how `{rng.choice(IDENTS)}` flows through {path} (step {t + 1})."
        messages.append({"role": "assistant", "content": f"{thought}\n\n```bash\n{command}\n```", "action": command})
        messages.append({"role": "user", "content": _observation(rng, command, per_obs)})
    messages.append(
        {
            "role": "assistant",
            "content": (
                "THOUGHT: The fix is in place and tests pass.\n\n```bash\n"
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\n```"
            ),
        }
    )
    return messages


def make_tests(rng: random.Random, passed: bool, package: str, f2p: list[str]) -> dict[str, Any]:
    p2p = [f"{package}/tests/test_{rng.choice(IDENTS)}.py::test_{rng.choice(VERBS)}_{i}" for i in range(rng.randint(5, 30))]
    if passed:
        return {"FAIL_TO_PASS": {"success": f2p, "failure": []}, "PASS_TO_PASS": {"success": p2p, "failure": []}}
    broken = rng.randint(1, len(f2p))
    regress = p2p[: rng.randint(0, 2)]
    return {
        "FAIL_TO_PASS": {"success": f2p[broken:], "failure": f2p[:broken]},
        "PASS_TO_PASS": {"success": p2p[len(regress) :], "failure": regress},
    }


def make_group(
    rng: random.Random,
    *,
    run: str,
    step: int,
    task_number: int,
    n_rollouts: int = 8,
    pass_rate: float | None = None,
    turns: tuple[int, int] = (8, 40),
    target_rollout_bytes: int = 0,
) -> dict[str, Any]:
    repo, package, files = REPOS[task_number % len(REPOS)]
    instance_id = f"{repo.split('/')[1]}__{repo.split('/')[1]}-{10000 + task_number * 37}"
    # The task is the same at every step, so its fields come from a per-task generator.
    task_rng = random.Random(task_number * 7919 + 1)
    f2p = [
        f"{package}/tests/test_{task_rng.choice(IDENTS)}.py::test_{task_rng.choice(VERBS)}_{i}"
        for i in range(task_rng.randint(1, 4))
    ]
    base_commit = f"{task_rng.getrandbits(40):010x}"
    problem = (
        f"`{task_rng.choice(VERBS)}_{task_rng.choice(IDENTS)}` returns the wrong {task_rng.choice(IDENTS)} when "
        f"{task_rng.choice(IDENTS)} is empty.\n\nSteps to reproduce:\n```python\nimport {package.split('/')[-1]}\n"
        f"{package.split('/')[-1]}.{task_rng.choice(VERBS)}([])\n```\nExpected an empty result, got a TypeError."
    )
    if pass_rate is None:
        pass_rate = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.25])
    # Agents that pass often converge on the same fix, some leaving scratch files behind: a
    # group's few shared fixes come from a generator of their own, so the rest of the demo
    # draws what it drew before they existed.
    share = random.Random(f"{run}/{step}/{task_number}")
    fixes = [make_patch(share, package, files, n_files=share.choice([1, 1, 2])) for _ in range(share.choice([1, 1, 2]))]
    rollouts = []
    for index in range(n_rollouts):
        passed = rng.random() < pass_rate
        n_turns = rng.randint(*turns)
        patch = make_patch(rng, package, files, n_files=rng.choice([1, 1, 2, 3]), test_edit=rng.random() < 0.1)
        if passed and share.random() < SHARED_FIX_RATE:
            patch = share.choice(fixes)
            if share.random() < SCRATCH_FILE_RATE:
                patch += _scratch_file(share)
        messages = make_messages(rng, problem, package, files, turns=n_turns, target_chars=target_rollout_bytes)
        tests = make_tests(rng, passed, package, f2p)
        rollouts.append(
            {
                "index": index,
                "reward": 1.0 if passed else 0.0,
                "patch": patch,
                "messages": messages,
                "tests": tests,
                "test_log": "\n".join(
                    f"{t} {'PASSED' if passed else rng.choice(['PASSED', 'FAILED'])}" for t in tests["PASS_TO_PASS"]["success"]
                ),
                "exit_status": "Submitted" if rng.random() < 0.9 else "LimitsExceeded",
                "stats": {
                    "tokens": sum(len(str(m.get("content", ""))) for m in messages) // 4,
                    "turns": n_turns,
                    "cost_usd": round(rng.uniform(0.02, 0.6), 4),
                },
                "source": {"format": "gagar-demo", "ref": f"demo/{run}/step-{step}/{instance_id}/{index}"},
                "metadata": {},
            }
        )
    return {
        "format": "gagar-group/1",
        "run": run,
        "step": step,
        "uid": f"{instance_id}@{step}",
        "task": {
            "instance_id": instance_id,
            "repo": repo,
            "base_commit": base_commit,
            "problem_statement": problem,
            "FAIL_TO_PASS": f2p,
        },
        "rollouts": rollouts,
    }


def demo_groups(
    *,
    run: str = "demo-run",
    steps: int = 3,
    groups_per_step: int = 8,
    n_rollouts: int = 8,
    seed: int = 7,
    target_rollout_bytes: int = 0,
    turns: tuple[int, int] = (8, 40),
) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    for step in range(1, steps + 1):
        for task_number in range(groups_per_step):
            yield make_group(
                rng,
                run=run,
                step=step,
                task_number=task_number,
                n_rollouts=n_rollouts,
                target_rollout_bytes=target_rollout_bytes,
                turns=turns,
            )
