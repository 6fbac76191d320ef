#!/usr/bin/env python
"""Advantage engine benchmark: `redistribute()` vs verl's GRPO estimators and per-group Python loops.

    .venv/bin/python benchmarks/advantage.py --repeat 5     # 62,500 groups x 16 = 1M rollouts
    .venv/bin/python benchmarks/advantage.py --baseline grpo --repeat 5

1. Generates one long table (one row per rollout, groups contiguous, integer group ids
   as `grading.method.services.computation.step_inputs` gives the engine): per group a pass rate
   drawn uniformly from [0, 1] (so some groups all pass or all fail and are filtered),
   binary rewards, a tier T1/T2/T3 and a group-wide rank with ties for every pass,
   a few confirmed cheats (tier/rank left on them, as a grader would), a share of
   ungraded groups (no valid verdict: fallback) and a few verdicts that skipped a pass
   (also fallback).
2. Times `grading.method.advantage.redistribute(frame)` and two per-group loops written here
   the way a careful engineer would without vectorising (one in plain Python over
   lists, one with small NumPy arrays per group), each from the same DataFrame to its
   natural output (the engine: its result DataFrame; the loops: per-row arrays),
   `--repeat` times back to back; reports every run and the median.
3. In the same process, when verl is installed (`make install-trainers`), times verl's own
   GRPO outcome estimators from `verl.trainer.ppo.core_algos` on the same rewards (cheats
   zeroed, as the engine sees them) and groups, with the tensors verl's trainer passes:
   `token_level_rewards` [rollouts, --response-length] float32 holding each reward on its
   rollout's last valid token (lengths drawn from 1..--response-length), `response_mask`
   int64 (a slice of the attention mask in verl) and `index` the `uid` array. verl's trainer
   makes uids with `str(uuid.uuid4())` per prompt; the vectorised estimator is timed with
   those and with integer group ids (its fast path, leaving the per-group statistics
   alone). A short response keeps the comparison on the per-group statistics rather than
   on broadcasting over tokens. The per-row loop `compute_grpo_outcome_advantage` takes
   ~25 s on 1M rollouts, so it runs `--verl-loop-repeat` times (default 1).
4. Checks that the engine and both loops give the same status, advantage, factor, lambda,
   A* and discount-only values on every row (to 1e-9), and that verl's advantages on every
   valid token equal the engine's `grpo` baseline advantage (the `advantage` column of
   `redistribute(frame, baseline="grpo")`, before redistribution; to 1e-5, verl computes in
   float32) on every row: every group here has 16 rollouts, and a group with no pass or
   no fail is 0 in both. Masked tokens must be 0. Then prints the machine and a table of
   seconds, rollouts/s and the ratios (goals: >= 10x over the faster loop, <= 50 ms, >= 5x
   over verl's `grpo_vectorized`).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from _support import (  # benchmarks/_support.py (this folder is on sys.path when a script runs)
    cpu_model,
    load_average,
    usable_cores,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grading.method.advantage import (  # noqa: E402  (pure module, no Django)
    DEFAULT_MAPPING,
    FALLBACK,
    FILTERED,
    GRADED,
    GRPO_EPSILON,
    MappingSpec,
    redistribute,
)

TOLERANCE = 1e-9
VERL_TOLERANCE = 1e-5  # verl's estimators compute in float32
GOAL_SECONDS = 0.050
GOAL_OVER_VERL = 5.0
COMPARED = ("advantage", "factor", "lambda", "redistributed_advantage", "discount_only_advantage")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--groups", type=int, default=62_500)
    p.add_argument("--size", type=int, default=16, help="rollouts per group")
    p.add_argument("--baseline", choices=("mean", "loo", "grpo"), default="mean")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each implementation (median reported)")
    p.add_argument("--cheat-rate", type=float, default=0.02, help="share of passing rollouts confirmed as cheats")
    p.add_argument("--ungraded-rate", type=float, default=0.15, help="share of groups without a valid verdict")
    p.add_argument("--partial-rate", type=float, default=0.01, help="share of verdicts that skipped one pass")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--response-length", type=int, default=4, help="tokens per response in verl's tensors")
    p.add_argument("--verl-loop-repeat", type=int, default=1, help="timed runs of verl's per-row GRPO loop")
    p.add_argument("--no-verl", action="store_true", help="skip verl even when it is installed")
    p.add_argument(
        "--profile", action="store_true", help="also print cProfile's top entries for --repeat calls of redistribute()"
    )
    return p.parse_args()


# --- the load ------------------------------------------------------------------------


def make_frame(
    *, groups: int, size: int, cheat_rate: float, ungraded_rate: float, partial_rate: float, seed: int
) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = groups * size
    group = np.repeat(np.arange(groups, dtype=np.int64), size)
    index = np.tile(np.arange(size, dtype=np.int64), groups)
    pass_rate = rng.uniform(0.0, 1.0, groups)[group]
    reward = (rng.uniform(size=n) < pass_rate).astype(np.int64)
    passed = reward == 1

    # Grader output for every pass: a tier, and a group-wide rank (1 = best) from a
    # coarse quality score, so equal scores tie. Failing rollouts get neither.
    tier_code = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    quality = tier_code * 4 + rng.integers(0, 4, size=n)  # ties inside a tier
    order = pd.DataFrame({"group": group, "quality": np.where(passed, quality, np.nan)})
    rank = order.groupby("group")["quality"].rank(method="min").to_numpy()  # NaN where failing
    tier = np.where(passed, np.array(["T1", "T2", "T3"], dtype=object)[tier_code], None)

    cheat = passed & (rng.uniform(size=n) < cheat_rate)
    graded = (rng.uniform(size=groups) >= ungraded_rate)[group]
    # A verdict that skipped a pass: drop tier and rank of the first pass of some groups.
    skip_group = rng.uniform(size=groups) < partial_rate
    first_pass = passed & (pd.Series(passed.astype(int)).groupby(group).cumsum().to_numpy() == 1)
    skipped = first_pass & skip_group[group]
    tier = np.where(skipped, None, tier)
    rank = np.where(skipped, np.nan, rank)

    return pd.DataFrame(
        {
            "group": group,
            "index": index,
            "reward": reward,
            "cheat": cheat,
            # Categorical, as grading.method.services.computation.step_inputs hands tiers over.
            "tier": pd.Categorical(tier, categories=["T1", "T2", "T3"]),
            "rank": rank,  # float, NaN where the grader gave none (as step_inputs hands it over)
            "graded": graded,
        }
    )


# --- the loops -----------------------------------------------------------------------


def tier_objects(tiers: pd.Series) -> np.ndarray:
    """Tier strings (None where missing) from the categorical column, the fastest way we know,
    so the loops do not pay for pandas' slow categorical-to-list conversion."""
    if isinstance(tiers.dtype, pd.CategoricalDtype):
        lookup = np.array([*list(tiers.cat.categories), None], dtype=object)
        return lookup[tiers.cat.codes.to_numpy()]
    return tiers.to_numpy(dtype=object)


def _bands(mapping: MappingSpec) -> dict[str, tuple[float, float]]:
    return {t: mapping.band(t) for t in ("T1", "T2", "T3")}


def _python_baseline(rewards: list[float], baseline: str) -> list[float]:
    n = len(rewards)
    total = sum(rewards)
    mean = total / n
    if baseline == "mean":
        return [r - mean for r in rewards]
    if baseline == "loo":
        return [r - (total - r) / (n - 1) for r in rewards]
    std = (sum((r - mean) ** 2 for r in rewards) / (n - 1)) ** 0.5
    return [(r - mean) / (std + GRPO_EPSILON) for r in rewards]


def loop_python(frame: pd.DataFrame, mapping: MappingSpec = DEFAULT_MAPPING, baseline: str = "mean") -> dict[str, np.ndarray]:
    """Per group, plain Python on lists: baseline, band factors, lambda, A*."""
    bands = _bands(mapping)
    groups = frame["group"].tolist()
    rewards = frame["reward"].tolist()
    cheats = frame["cheat"].tolist()
    tiers = tier_objects(frame["tier"]).tolist()
    ranks = [None if r != r else r for r in frame["rank"].tolist()]  # NaN -> None
    graded_flags = frame["graded"].tolist()

    rows_of: dict = {}
    for i, g in enumerate(groups):
        rows_of.setdefault(g, []).append(i)

    n_rows = len(groups)
    advantage = [0.0] * n_rows
    factor = [1.0] * n_rows
    lam_out = [1.0] * n_rows
    redistributed = [0.0] * n_rows
    discount_only = [0.0] * n_rows
    status = [FILTERED] * n_rows

    for rows in rows_of.values():
        r = [0.0 if cheats[i] else float(rewards[i]) for i in rows]
        passes = [k for k, x in enumerate(r) if x == 1.0]
        if not 0 < len(passes) < len(r):
            continue  # filtered: zeros, factor 1, lambda 1 (the defaults above)
        a = _python_baseline(r, baseline)
        complete = all(tiers[rows[k]] is not None and ranks[rows[k]] is not None for k in passes)
        if not (graded_flags[rows[0]] and complete):
            for k, i in enumerate(rows):
                advantage[i] = redistributed[i] = discount_only[i] = a[k]
                status[i] = FALLBACK
            continue

        # Band rule: the k distinct ranks of a tier among the passes, in ascending order.
        f = [1.0] * len(r)
        distinct: dict[str, set] = {}
        for k in passes:
            distinct.setdefault(tiers[rows[k]], set()).add(ranks[rows[k]])
        position = {t: {rank: j for j, rank in enumerate(sorted(rs))} for t, rs in distinct.items()}
        for k in passes:
            t = tiers[rows[k]]
            hi, lo = bands[t]
            count = len(position[t])
            f[k] = hi if count == 1 else hi - (hi - lo) * position[t][ranks[rows[k]]] / (count - 1)

        s_plus = sum(a[k] for k in passes)
        sum_f_a = sum(f[k] * a[k] for k in passes)
        lam = s_plus / sum_f_a if sum_f_a != 0 else 1.0
        pass_factors = [f[k] for k in passes]
        rescale = min(pass_factors) != max(pass_factors)
        pass_set = set(passes)
        for k, i in enumerate(rows):
            advantage[i] = a[k]
            factor[i] = f[k]
            lam_out[i] = lam
            redistributed[i] = lam * f[k] * a[k] if (rescale and k in pass_set) else a[k]
            discount_only[i] = f[k] * a[k]
            status[i] = GRADED
    return {
        "advantage": np.array(advantage),
        "factor": np.array(factor),
        "lambda": np.array(lam_out),
        "redistributed_advantage": np.array(redistributed),
        "discount_only_advantage": np.array(discount_only),
        "status": np.array(status, dtype=object),
    }


def loop_numpy(frame: pd.DataFrame, mapping: MappingSpec = DEFAULT_MAPPING, baseline: str = "mean") -> dict[str, np.ndarray]:
    """Per group, NumPy on that group's slice: the same steps with array operations."""
    bands = _bands(mapping)
    hi_of = {t: b[0] for t, b in bands.items()}
    lo_of = {t: b[1] for t, b in bands.items()}
    group = frame["group"].to_numpy()
    reward = frame["reward"].to_numpy(dtype=float)
    cheat = frame["cheat"].to_numpy(dtype=bool)
    tier = tier_objects(frame["tier"])
    rank = frame["rank"].to_numpy(dtype=float, na_value=np.nan)
    graded = frame["graded"].to_numpy(dtype=bool)

    # Rows of each group (stable, so any row order works).
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.diff(group[order])) + 1
    slices = np.split(order, bounds)

    n_rows = len(group)
    out = {name: np.zeros(n_rows) for name in COMPARED}
    out["factor"][:] = 1.0
    out["lambda"][:] = 1.0
    status = np.full(n_rows, FILTERED, dtype=object)
    for rows in slices:
        r = np.where(cheat[rows], 0.0, reward[rows])
        passed = r == 1.0
        n, n_passed = len(r), int(passed.sum())
        if not 0 < n_passed < n:
            continue
        mean = r.mean()
        if baseline == "mean":
            a = r - mean
        elif baseline == "loo":
            a = r - (r.sum() - r) / (n - 1)
        else:
            a = (r - mean) / (r.std(ddof=1) + GRPO_EPSILON)
        t, k_rank = tier[rows][passed], rank[rows][passed]
        if not graded[rows[0]] or any(x is None for x in t) or np.isnan(k_rank).any():
            out["advantage"][rows] = out["redistributed_advantage"][rows] = out["discount_only_advantage"][rows] = a
            status[rows] = FALLBACK
            continue
        f_pass = np.empty(n_passed)
        for name in np.unique(t):
            in_tier = t == name
            distinct, j = np.unique(k_rank[in_tier], return_inverse=True)
            hi, lo = hi_of[name], lo_of[name]
            f_pass[in_tier] = hi - (hi - lo) * j / (len(distinct) - 1) if len(distinct) > 1 else hi
        f = np.ones(n)
        f[passed] = f_pass
        s_plus = a[passed].sum()
        sum_f_a = (f_pass * a[passed]).sum()
        lam = s_plus / sum_f_a if sum_f_a != 0 else 1.0
        a_star = a.copy()
        if f_pass.min() != f_pass.max():
            a_star[passed] = lam * f_pass * a[passed]
        out["advantage"][rows] = a
        out["factor"][rows] = f
        out["lambda"][rows] = lam
        out["redistributed_advantage"][rows] = a_star
        out["discount_only_advantage"][rows] = f * a
        status[rows] = GRADED
    out["status"] = status
    return out


def vectorised(frame: pd.DataFrame, mapping: MappingSpec = DEFAULT_MAPPING, baseline: str = "mean") -> pd.DataFrame:
    """The engine as the app calls it; its output is a DataFrame (converted untimed by `as_arrays`)."""
    return redistribute(frame, mapping=mapping, baseline=baseline)


def as_arrays(out) -> dict[str, np.ndarray]:
    if isinstance(out, dict):
        return out
    arrays = {name: out[name].to_numpy(dtype=float) for name in COMPARED}
    arrays["status"] = out["status"].to_numpy(dtype=object)
    return arrays


# --- verl's estimators ------------------------------------------------------------------

VERL_INSTALL = "verl is not installed: `make install-trainers` puts it in the venv (the `trainers` extra)"


def import_verl() -> Any | None:
    try:
        from verl.trainer.ppo import core_algos
    except ImportError:
        return None
    return core_algos


def verl_inputs(frame: pd.DataFrame, *, response_length: int, seed: int) -> dict[str, Any]:
    """The tensors verl's trainer hands an outcome estimator, for the engine's rewards and groups."""
    import torch

    rng = np.random.default_rng(seed + 1)
    n = len(frame)
    reward = np.where(frame["cheat"].to_numpy(dtype=bool), 0, frame["reward"].to_numpy()).astype(np.float32)
    lengths = rng.integers(1, response_length + 1, n)
    token_level_rewards = torch.zeros(n, response_length, dtype=torch.float32)
    token_level_rewards[torch.arange(n), torch.from_numpy(lengths - 1)] = torch.from_numpy(reward)
    response_mask = (torch.arange(response_length)[None, :] < torch.from_numpy(lengths)[:, None]).to(torch.int64)
    group = frame["group"].to_numpy()
    ids, first = np.unique(group, return_inverse=True)
    prompt_uids = np.array([str(uuid.UUID(int=int(x), version=4)) for x in rng.integers(0, 2**62, len(ids))], dtype=object)
    return {
        "token_level_rewards": token_level_rewards,
        "response_mask": response_mask,
        "uid": prompt_uids[first],  # what verl's trainer stores in non_tensor_batch["uid"]
        "group_id": group.copy(),  # integer ids (writable, as torch.from_numpy wants): the fast path
    }


def verl_estimators(core_algos: Any, inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    def call(fn: Callable[..., Any], index: np.ndarray) -> Callable[[], Any]:
        def run() -> Any:
            advantages, _returns = fn(
                token_level_rewards=inputs["token_level_rewards"],
                response_mask=inputs["response_mask"],
                index=index,
                epsilon=GRPO_EPSILON,
                norm_adv_by_std_in_grpo=True,
            )
            return advantages

        return run

    vectorized = core_algos.compute_grpo_vectorized_outcome_advantage
    return {
        "verl grpo_vectorized, int ids": call(vectorized, inputs["group_id"]),
        "verl grpo_vectorized, uuid uids": call(vectorized, inputs["uid"]),
        "verl grpo (per-row loop), uids": call(core_algos.compute_grpo_outcome_advantage, inputs["uid"]),
    }


def check_verl(name: str, advantages: Any, grpo_advantage: np.ndarray, inputs: dict[str, Any]) -> float:
    """verl's advantage on every valid token equals the engine's grpo baseline; masked tokens are 0."""
    values = advantages.double().numpy()
    mask = inputs["response_mask"].numpy().astype(bool)
    if np.any(values[~mask] != 0.0):
        raise SystemExit(f"{name}: a masked token has a non-zero advantage")
    diff = np.abs(values - grpo_advantage[:, None])[mask]
    worst = float(diff.max()) if diff.size else 0.0
    if not worst <= VERL_TOLERANCE:
        raise SystemExit(f"{name}: differs from the engine's grpo baseline by {worst:g} (> {VERL_TOLERANCE:g})")
    return worst


def time_runs(fn: Callable[[], Any], repeat: int) -> tuple[list[float], Any]:
    """`repeat` timed calls back to back; the first call's output is kept for the checks."""
    times, first = [], None
    for run in range(repeat):
        gc.collect()
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
        if run == 0:
            first = out
        del out
    return times, first


# --- checks and report ---------------------------------------------------------------


def compare(name: str, ref: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> float:
    """Largest absolute difference over every compared column; raises past TOLERANCE."""
    if not np.array_equal(ref["status"], other["status"]):
        bad = int((ref["status"] != other["status"]).sum())
        raise SystemExit(f"{name}: status differs on {bad} rows")
    worst = 0.0
    for column in COMPARED:
        diff = float(np.max(np.abs(ref[column] - other[column]))) if len(ref[column]) else 0.0
        if not diff <= TOLERANCE:  # also catches NaN
            raise SystemExit(f"{name}: {column} differs by {diff:g} (> {TOLERANCE:g})")
        worst = max(worst, diff)
    return worst


def profile_engine(frame: pd.DataFrame, baseline: str, repeat: int) -> None:
    """Where redistribute()'s time goes: cProfile over `repeat` calls, top entries by own time, per call."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    for _ in range(repeat):
        gc.collect()
        profiler.enable()
        out = redistribute(frame, baseline=baseline)
        profiler.disable()
        del out
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:14]  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.stats.values()) / repeat  # type: ignore[attr-defined]
    print(f"profile of redistribute() (cProfile, mean of {repeat} calls, {total * 1000:.1f} ms a call with its overhead):")
    for (path, line, name), (_, calls, own, _cumulative, _) in rows:
        where = f"{Path(path).name}:{line}({name})" if line else name
        print(f"  {own / repeat * 1000:7.2f} ms  {calls // repeat:4d} calls  {where}")


def machine() -> str:
    model, usable = cpu_model(), usable_cores()
    load_now = f" / load {load_average():.2f}"
    return (
        f"{usable} cores ({os.cpu_count()} online), {model}{load_now}; Python {platform.python_version()}, "
        f"NumPy {np.__version__}, pandas {pd.__version__}, {platform.system()} {platform.machine()}"
    )


def main() -> None:
    args = parse_args()
    print(f"machine: {machine()}")
    t0 = time.perf_counter()
    frame = make_frame(
        groups=args.groups,
        size=args.size,
        cheat_rate=args.cheat_rate,
        ungraded_rate=args.ungraded_rate,
        partial_rate=args.partial_rate,
        seed=args.seed,
    )
    print(
        f"input: {len(frame):,} rollouts in {args.groups:,} groups of {args.size}, baseline {args.baseline}, "
        f"{int(frame['cheat'].sum()):,} cheats (built in {time.perf_counter() - t0:.1f} s)"
    )

    impls = {
        "vectorised redistribute()": vectorised,
        "loop, plain Python per group": loop_python,
        "loop, NumPy per group": loop_numpy,
    }
    times: dict[str, list[float]] = {}
    outputs: dict[str, dict[str, np.ndarray]] = {}
    for name, fn in impls.items():
        # Back to back, as timeit does: the first call of each pays for lazy imports and for the
        # allocator handing out fresh pages; the median is the steady state. All runs are printed.
        times[name], out = time_runs(lambda fn=fn: fn(frame, DEFAULT_MAPPING, args.baseline), args.repeat)
        outputs[name] = as_arrays(out)
        print(f"  {name}: " + " ".join(f"{t:.3f}" for t in times[name]) + " s")

    ref = outputs["vectorised redistribute()"]
    worst = max(compare(name, ref, outputs[name]) for name in impls if name != "vectorised redistribute()")
    counts = pd.Series(ref["status"]).value_counts()
    print(
        f"check: all three agree on every row (status equal; max |difference| {worst:.3g} <= {TOLERANCE:g}); "
        f"rows graded {counts.get(GRADED, 0):,} / fallback {counts.get(FALLBACK, 0):,} / filtered {counts.get(FILTERED, 0):,}"
    )

    if args.profile:
        profile_engine(frame, args.baseline, args.repeat)

    # verl after the engine: torch's worker threads keep spinning a while after each call.
    core_algos = None if args.no_verl else import_verl()
    verl_names: list[str] = []
    if core_algos is None:
        print("verl: skipped (--no-verl)" if args.no_verl else f"verl: {VERL_INSTALL}; its estimators are left out")
    else:
        import torch
        import verl

        inputs = verl_inputs(frame, response_length=args.response_length, seed=args.seed)
        grpo = as_arrays(redistribute(frame, baseline="grpo"))["advantage"]
        print(
            f"verl {verl.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads): "
            f"token_level_rewards {tuple(inputs['token_level_rewards'].shape)} float32, response lengths "
            f"1..{args.response_length}, {len(set(inputs['uid'][:: args.size])):,} uids"
        )
        for name, fn in verl_estimators(core_algos, inputs).items():
            repeat = args.verl_loop_repeat if "loop" in name else args.repeat
            times[name], advantages = time_runs(fn, repeat)
            worst_verl = check_verl(name, advantages, grpo, inputs)
            verl_names.append(name)
            print(
                f"  {name}: " + " ".join(f"{t:.3f}" for t in times[name]) + " s; equals the engine's grpo "
                f"baseline on every valid token (max |difference| {worst_verl:.3g} <= {VERL_TOLERANCE:g})"
            )

    medians = {name: statistics.median(ts) for name, ts in times.items()}
    vec = medians["vectorised redistribute()"]
    fastest_loop = min(medians[name] for name in impls if name != "vectorised redistribute()")
    print()
    print(f"{'implementation':<34} {'median s':>9} {'runs (s)':>34} {'rollouts/s':>12} {'/ redistribute()':>17}")
    for name in [*impls, *verl_names]:
        runs = " ".join(f"{t:.3f}" for t in times[name])
        print(f"{name:<34} {medians[name]:>9.4f} {runs:>34} {len(frame) / medians[name]:>12,.0f} {medians[name] / vec:>16.1f}x")
    ratio = fastest_loop / vec
    print()
    print(f"speed-up of redistribute() over the faster loop: {ratio:.1f}x (goal >= 10x: {'met' if ratio >= 10 else 'MISSED'})")
    if len(frame) >= 1_000_000:
        met = "met" if vec <= GOAL_SECONDS else "MISSED"
        print(
            f"redistribute() median on {len(frame):,} rollouts: {vec * 1000:.1f} ms (goal <= {GOAL_SECONDS * 1000:.0f} ms: {met})"
        )
    if verl_names:
        over = medians["verl grpo_vectorized, int ids"] / vec
        over_uids = medians["verl grpo_vectorized, uuid uids"] / vec
        print(
            f"speed-up of redistribute() over verl's grpo_vectorized: {over:.1f}x with integer ids, {over_uids:.1f}x with "
            f"uuid uids (goal >= {GOAL_OVER_VERL:.0f}x: {'met' if over >= GOAL_OVER_VERL else 'MISSED'})"
        )
    print(f"load average at the end: {load_average():.2f}")


if __name__ == "__main__":
    main()
