#!/usr/bin/env python
"""Importer text patterns on pathological input: time vs N, the old patterns beside the new code.

    .venv/bin/python benchmarks/importer_regex.py                    # N = 100 .. 10,000 (and 1,000,000 for the new code)
    .venv/bin/python benchmarks/importer_regex.py --budget 30 --sizes 100 200 400 600

Every case is text an agent or a file controls, shaped to make a backtracking pattern fail
as slowly as it can:

- `problem_statement_of`: `<pr_description>` followed by N spaces and no closing tag. The
  old pattern (`\\s*(?:preamble)?\\s*(.*?)\\s*</pr_description>`) splits the spaces between
  three quantifiers and the lazy group: O(N^4) (the security review measured 15 s at N = 600).
- the mini-swe-agent action: a fenced ```` ```bash ```` followed by N newlines and no closing
  fence. The old `\\s*\\n(.*?)```` backtracks `\\s*` over the newlines and rescans: O(N^2).
- `repo_of`: N underscores. The old `^(?P<owner>[...]+?)__(?P<name>[...]+)-\\d+$` tries every
  owner length and then every name length: O(N^2).

For each N the script times one call (the best of --repeat) of the old pattern and of the code the
importers use now, and checks the new code gives what the old pattern gives on well-formed
input. An old pattern is not run past N once one of its calls took longer than --budget
seconds (the next size would take minutes to hours); the table says "skipped".
The new code must stay linear: its time at the largest N over its time at the smallest,
divided by the ratio of the sizes, is printed as "growth vs linear" (about 1 is linear).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grading.ingest.importers import mini_swe_agent
from grading.ingest.importers.common import problem_statement_of, repo_of

try:
    from benchmarks._support import cpu_model, memory_gib
except ImportError:  # psycopg missing: the machine line is all we need
    import platform

    def cpu_model() -> str:
        return platform.processor() or platform.machine()

    def memory_gib() -> str:
        return ""


OLD_PR_DESCRIPTION = re.compile(
    r"<pr_description>\s*(?:Consider the following PR description:)?\s*(.*?)\s*</pr_description>", re.DOTALL
)
OLD_FENCED_BASH = re.compile(r"```(?:bash|sh|mswea_bash_command)\s*\n(.*?)```", re.DOTALL)
OLD_REPO = re.compile(r"^(?P<owner>[A-Za-z0-9_.-]+?)__(?P<name>[A-Za-z0-9_.-]+)-\d+$")


def old_problem_statement(prompt: str) -> str:
    match = OLD_PR_DESCRIPTION.search(prompt)
    return match.group(1).strip() if match else ""


def old_action(content: str) -> str:
    match = OLD_FENCED_BASH.search(content)
    return match.group(1).strip() if match else ""


def new_action(content: str) -> str:
    match = mini_swe_agent._FENCED_BASH.search(content)
    return match.group(1).strip() if match else ""


def old_repo(instance_id: str) -> str:
    match = OLD_REPO.match(instance_id)
    return f"{match['owner']}/{match['name']}" if match else ""


CASES = [
    # name, pathological input for N, old, new, well-formed inputs both must agree on
    (
        "pr_description: N spaces, no closing tag",
        lambda n: "<pr_description>" + " " * n,
        old_problem_statement,
        problem_statement_of,
        [
            "<pr_description>\nConsider the following PR description:\n  Fix it \n</pr_description>",
            "x <pr_description>a</pr_description> <pr_description>b</pr_description>",
            "<pr_description> </pr_description>",
            "no tags",
            "<pr_description>open only",
            "</pr_description><pr_description>  two  </pr_description>",
        ],
    ),
    (
        "fenced bash: N newlines, no closing fence",
        lambda n: "```bash" + "\n" * n,
        old_action,
        new_action,
        [
            "THOUGHT\n```bash\nls -la\n```",
            "```bash  \n\n  cd /x && ls\n```",
            "```sh\necho\n```",
            "```bash ls```",
            "```bash\r\nls\r\n```",
            "```mswea_bash_command\npython -c 'print(1)'\n```",
        ],
    ),
    (
        "repo_of: N underscores",
        lambda n: "_" * n,
        old_repo,
        repo_of,
        [
            "scikit-learn__scikit-learn-14141",
            "django__django-1",
            "a___b-1",
            "___b-1",
            "a__-1",
            "a___-1",
            "a__b__c-12",
            "no-repo-1",
            "o__r-x",
            "o__r-",
            "o__r-1-2",
            "o__r.-1",
        ],
    ),
]


def best_time(fn, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 400, 600, 1000, 3000, 10000])
    parser.add_argument("--big", type=int, default=1_000_000, help="one more size, for the new code only")
    parser.add_argument("--budget", type=float, default=5.0, help="seconds after which an old pattern is not run at larger N")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print(
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs{', ' + memory_gib() if memory_gib() else ''}; Python "
        f"{sys.version.split()[0]}"
    )
    failures = 0
    for name, make, old, new, samples in CASES:
        for sample in samples:
            if old(sample) != new(sample):
                failures += 1
                print(f"MISMATCH {name}: {sample!r}: old {old(sample)!r}, new {new(sample)!r}")
        print(f"\n{name}")
        print(f"{'N':>10}  {'old (s)':>12}  {'new (s)':>12}")
        over_budget = False
        new_times: list[tuple[int, float]] = []
        for n in [*args.sizes, args.big]:
            text = make(n)
            old_cell = "skipped"
            if n != args.big and not over_budget:
                t_old = best_time(old, text, 1 if n > args.sizes[0] else args.repeat)
                old_cell = f"{t_old:.6f}"
                over_budget = t_old > args.budget
            t_new = best_time(new, text, args.repeat)
            new_times.append((n, t_new))
            print(f"{n:>10,}  {old_cell:>12}  {t_new:>12.6f}")
        (n0, t0), (n1, t1) = new_times[0], new_times[-1]
        growth = (t1 / max(t0, 1e-9)) / (n1 / n0)
        print(
            f"new code, N {n0:,} -> {n1:,}: x{t1 / max(t0, 1e-9):,.0f} time for x{n1 / n0:,.0f} input (growth vs linear "
            f"{growth:.2f})"
        )
    if failures:
        sys.exit(f"{failures} well-formed input(s) gave a different result")
    print("\nwell-formed inputs: the new code gives what the old patterns gave")


if __name__ == "__main__":
    main()
