#!/usr/bin/env python
"""Agreement benchmark: every figure of docs/method.md section 5 with 1000 bootstrap resamples.

    .venv/bin/python benchmarks/agreement.py                # 10,000 labeled groups
    .venv/bin/python benchmarks/agreement.py --repeat 5 --naive-groups 300 --naive-boot 20

1. Generates one long frame (one row per judged rollout and rater, as the calibration
   page builds it): groups of 16 rollouts, of which Binomial(16, 0.625) pass (at least
   2; ~10 on average) and only passes are judged; every group by the grader and one
   person, 20 % of groups by a second person (30 reviewers in all). A latent quality per
   rollout; each rater sees it with its own noise and gives a tier (T1/T2/T3 by fixed
   cuts) and a rank (ties where its noisy scores round equal). 3 % of passes cheat; the
   grader and the people flag cheats imperfectly; flagged rollouts carry an audit.
2. Times `reviews.stats.agreement`: `group_statistics` (the frame reduced to per-group
   counts), the point figures, 1000 bootstrap resamples of every figure, and
   `agreement_report` end to end; then `ceiling_report` (the two-person groups).
   Each `--repeat` times; the median is reported.
3. On a smaller frame (`--naive-groups`) times the straightforward path the tests hold
   the vectorised one to (`tests/helpers/naive_agreement.py`: figures group by group,
   every resample rebuilt as a frame), `--naive-boot` resamples, checks that both paths
   give the same figures and intervals (1e-9), and scales its time to the full load
   (linear in groups and in resamples) for the ratio.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _support import cpu_model, load_average, memory_gib, usable_cores  # benchmarks/_support.py

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from reviews.stats.agreement.figures import FIGURES  # noqa: E402  (pure modules, no Django)
from reviews.stats.agreement.groups import group_statistics  # noqa: E402
from reviews.stats.agreement.report import agreement_report, ceiling_report, report_from_statistics  # noqa: E402
from tests.helpers import naive_agreement as naive  # noqa: E402

TOLERANCE = 1e-9


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", type=int, default=10_000)
    p.add_argument("--boot", type=int, default=1000, help="bootstrap resamples")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--naive-groups", type=int, default=200)
    p.add_argument("--naive-boot", type=int, default=10)
    p.add_argument("--seed", type=int, default=2024)
    return p.parse_args()


def make_frame(
    *,
    groups: int,
    seed: int,
    size: int = 16,
    pass_rate: float = 0.625,
    overlap: float = 0.2,
    reviewers: int = 30,
    cheat_rate: float = 0.03,
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    passing = np.maximum(rng.binomial(size, pass_rate, groups), 2)
    group = np.repeat(np.arange(groups), passing)
    rollout = np.concatenate([rng.permutation(size)[:k] for k in passing])
    n = len(group)
    quality = rng.normal(0.0, 1.0, n)
    cheat = rng.random(n) < cheat_rate
    second = rng.random(groups) < overlap
    # two distinct reviewers per group; the second only on overlap groups
    first_person = rng.integers(0, reviewers, groups)
    second_person = (first_person + rng.integers(1, reviewers, groups)) % reviewers

    def judge(noise: float, flag_hit: float, flag_false: float):
        seen = quality + rng.normal(0.0, noise, n)
        tier = np.where(seen > 0.5, "T1", np.where(seen > -0.5, "T2", "T3"))
        rounded = -np.round(seen, 1)  # higher quality, better (smaller) rank; equal roundings tie
        rank = pd.Series(rounded).groupby(group).rank(method="min").to_numpy().astype(np.int64)
        flag = np.where(cheat, rng.random(n) < flag_hit, rng.random(n) < flag_false)
        return tier, rank, flag

    parts = []
    for rater, mask, noise, hit, false in (
        ("grader", np.ones(n, dtype=bool), 0.7, 0.8, 0.01),
        ("first", np.ones(n, dtype=bool), 0.4, 0.9, 0.005),
        ("second", second[group], 0.4, 0.9, 0.005),
    ):
        tier, rank, flag = judge(noise, hit, false)
        if rater == "grader":
            name = np.full(n, "grader", dtype=object)
        else:
            who = first_person if rater == "first" else second_person
            name = np.array([f"reviewer{r:02d}" for r in range(reviewers)], dtype=object)[who[group]]
        parts.append(
            pd.DataFrame(
                {
                    "group": group[mask],
                    "rollout": rollout[mask],
                    "rater": name[mask],
                    "tier": tier[mask],
                    "rank": rank[mask],
                    "cheat": flag[mask],
                }
            )
        )
    frame = pd.concat(parts, ignore_index=True)
    flagged_any = frame.groupby(["group", "rollout"])["cheat"].transform("any").to_numpy()
    truth = pd.Series(cheat, index=pd.MultiIndex.from_arrays([group, rollout]))
    audited = truth.reindex(pd.MultiIndex.from_arrays([frame["group"], frame["rollout"]])).to_numpy()
    frame["audit"] = pd.array(np.where(flagged_any, audited, False), dtype="boolean")
    frame.loc[~flagged_any, "audit"] = pd.NA
    frame["group"] = "g" + frame["group"].astype(str)  # labels as the page gives them (uids)
    return frame.sort_values(["group", "rater"], kind="stable").reset_index(drop=True)


def timed(fn, repeat: int):
    runs, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), runs, result


def same(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= TOLERANCE


def main() -> None:
    args = parse_args()
    frame = make_frame(groups=args.groups, seed=args.seed)
    people = frame["rater"] != "grader"
    two = frame[people].groupby("group")["rater"].nunique()
    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, {memory_gib()}, load {load_average():.1f}; "
        f"Python {platform.python_version()}, NumPy {np.__version__}, pandas {pd.__version__}"
    )
    print(
        f"Load: {args.groups:,} groups, {len(frame):,} judgments ({int((~people).sum()):,} grader, "
        f"{int(people.sum()):,} people), {int((two >= 2).sum()):,} groups with two people; "
        f"{args.boot} resamples; median of {args.repeat}\n"
    )

    t_stats, _, stats = timed(lambda: group_statistics(frame), args.repeat)
    t_point, _, _ = timed(lambda: report_from_statistics(stats, n_boot=0), args.repeat)
    t_boot, _, _ = timed(lambda: report_from_statistics(stats, n_boot=args.boot, seed=0), args.repeat)
    t_total, runs, report = timed(lambda: agreement_report(frame, n_boot=args.boot, seed=0), args.repeat)
    t_ceiling, _, ceiling = timed(lambda: ceiling_report(frame, n_boot=args.boot, seed=0), args.repeat)

    print(f"{'step':<52}{'seconds':>9}")
    print(f"{'group_statistics (per-group counts)':<52}{t_stats:>9.3f}")
    print(f"{'point figures':<52}{t_point:>9.3f}")
    print(f"{f'{args.boot} bootstrap resamples, every figure':<52}{t_boot:>9.3f}")
    print(f"{'agreement_report, total':<52}{t_total:>9.3f}   runs {', '.join(f'{r:.3f}' for r in runs)}")
    print(f"{'ceiling_report (two-person groups), total':<52}{t_ceiling:>9.3f}")
    print(f"goal <= 2 s for agreement_report: {'met' if t_total <= 2.0 else 'NOT met'}\n")

    print(f"{'figure':<20}{'grader vs people':>30}{'people vs people':>30}")
    for name in FIGURES[:9]:
        a, c = report[name], ceiling[name]
        print(f"{name:<20}{a.value:>10.3f} [{a.lo:.3f}, {a.hi:.3f}] n={a.n:<6}{c.value:>7.3f} [{c.lo:.3f}, {c.hi:.3f}] n={c.n}")

    # the straightforward path, smaller
    small = make_frame(groups=args.naive_groups, seed=args.seed + 1)
    t_naive_point, _, naive_point = timed(lambda: naive.figures(small), 1)
    t_naive_boot, _, naive_boot = timed(lambda: naive.bootstrap(small, n_boot=args.naive_boot, seed=0), 1)
    t_fast_small, _, fast = timed(lambda: agreement_report(small, n_boot=args.naive_boot, seed=0), args.repeat)
    mismatched = [
        name
        for name in FIGURES
        if not (
            same(fast[name].value, naive_point[name])
            and same(fast[name].lo, naive_boot[name][0])
            and same(fast[name].hi, naive_boot[name][1])
        )
    ]
    scale = (args.groups / args.naive_groups) * (args.boot / args.naive_boot)
    naive_full = t_naive_point * args.groups / args.naive_groups + t_naive_boot * scale
    print(
        f"\nStraightforward path on {args.naive_groups} groups ({len(small):,} judgments), "
        f"{args.naive_boot} resamples: point {t_naive_point:.3f} s, resamples {t_naive_boot:.3f} s "
        f"({t_naive_boot / args.naive_boot * 1000:.0f} ms each); vectorised on the same: {t_fast_small:.4f} s "
        f"({(t_naive_point + t_naive_boot) / t_fast_small:,.0f}x)"
    )
    print(
        f"Scaled to {args.groups:,} groups x {args.boot} resamples: {naive_full:,.0f} s "
        f"= {naive_full / t_total:,.0f}x the vectorised {t_total:.3f} s"
    )
    print("Same figures and intervals (1e-9): " + ("yes" if not mismatched else f"NO: {mismatched}"))
    if mismatched:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
