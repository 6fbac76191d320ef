"""A bench to compare: four groups of run r1 in acme, each graded by heuristic@1, ext@1 and a
jury of the two (`jury:j@1`, stored as the jury helper stores it), and judged by bob. ext@1
grades from elsewhere: on groups EXT_UNCITED it cited nothing, so its T2 and T3 are uncited."""

from __future__ import annotations

import numpy as np

from tests.factories import make_group, make_judgment, make_run, make_step, make_verdict

CODE = {"T1": 1, "T2": 2, "T3": 3}
GRADERS = ("heuristic@1", "ext@1", "jury:j@1")
# per group: heuristic, ext, jury, bob's tiers of rollouts 0..3
GROUPS = [
    (("T1", "T2", "T3", "T3"), ("T1", "T3", "T3", "T2"), ("T1", "T2", "T3", "T3"), ("T1", "T2", "T3", "T2")),
    (("T2", "T2", "T1", "T3"), ("T2", "T1", "T1", "T3"), ("T2", "T2", "T1", "T3"), ("T2", "T1", "T1", "T3")),
    (("T3", "T1", "T2", "T2"), ("T3", "T1", "T1", "T2"), ("T3", "T1", "T2", "T2"), ("T3", "T1", "T2", "T1")),
    (("T1", "T1", "T2", "T3"), ("T2", "T1", "T2", "T3"), ("T1", "T1", "T2", "T3"), ("T1", "T2", "T2", "T3")),
]
EXT_USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.01}
EXT_UNCITED = (2, 3)


def ranked(tiers) -> dict:
    order = sorted(range(len(tiers)), key=lambda i: (tiers[i], i))
    return {i: (tiers[i], order.index(i) + 1) for i in range(len(tiers))}


def make_bench(project, person) -> None:
    step = make_step(make_run(project))
    for n, (heuristic, ext, jury, tiers) in enumerate(GROUPS):
        group = make_group(f"t-{n}@1", step=step, rewards=(1, 0, 1, 0))
        make_verdict(group, grader="heuristic@1", tiers=ranked(heuristic), raw={"usage": {"prompt_tokens": 0}})
        posted = make_verdict(group, grader="ext@1", tiers=ranked(ext), raw={"usage": EXT_USAGE})
        if n in EXT_UNCITED:
            posted.grades.exclude(tier="T1").update(uncited=True)
        make_verdict(group, grader="jury:j@1", tiers=ranked(jury), raw={"jury": {"members": ["heuristic@1", "ext@1"]}})
        make_judgment(group, person, tiers=ranked(tiers))


def flat(column: int) -> np.ndarray:
    """One column of GROUPS (0 heuristic, 1 ext, 2 jury, 3 bob) as tier codes, group by group."""
    return np.array([CODE[t] for group in GROUPS for t in group[column]])
