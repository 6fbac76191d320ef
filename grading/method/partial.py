"""Partial groups: rollouts the trainer dropped, and what the run's drop policy makes of them.

A trainer may keep only some of a group's rollouts (an errored or timed-out trace, a
length filter, rLLM's compact filtering). It says which it dropped, and why, by a short
reason on the rollout (`"dropped": "timeout"`). The run's drop policy maps each reason to
a mode (docs/method.md section 8):

* `mask` (the default for every reason): the dropped rollout stays in the group for the
  method's numbers, so every kept rollout gets the full group's A*, and the dropped one
  carries no loss in the trainer, which no longer has it. Drops that follow the outcome
  (timed-out traces are mostly failures) would otherwise raise R̄ and shrink every pass's
  credit.
* `recompute`: the dropped rollout leaves the group; baseline, dynamic-sampling filter and
  redistribution run on the kept members alone, so a group left all-pass (or all-fail) is
  filtered. The dropped row is exported with A = A* = 0 and status `dropped`.

Worked example: R = [1, 1, 0, 0], rollout 3 dropped for `timeout`, passes graded T1, T3.

>>> import pandas as pd
>>> frame = pd.DataFrame({"group": ["g"] * 4, "reward": [1, 1, 0, 0], "cheat": [False] * 4,
...                       "tier": ["T1", "T3", None, None], "rank": [1, 2, None, None], "graded": [True] * 4,
...                       "dropped": [None, None, None, "timeout"]})
>>> redistribute_kept(frame, policy={})["redistributed_advantage"].round(6).tolist()   # mask
[0.666667, 0.333333, -0.5, -0.5]
>>> out = redistribute_kept(frame, policy={"timeout": "recompute"})
>>> out["redistributed_advantage"].round(6).tolist(), out["status"].tolist()
([0.444444, 0.222222, -0.666667, 0.0], ['graded', 'graded', 'graded', 'dropped'])
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from grading.method.advantage import DEFAULT_MAPPING, MappingSpec, redistribute

MASK, RECOMPUTE = "mask", "recompute"
DROP_MODES = (MASK, RECOMPUTE)
DROPPED = "dropped"  # the status of a rollout that left its group under `recompute`
ANY_REASON = "*"  # a policy key that sets the mode of reasons not named
REASON_PATTERN = re.compile(r"[a-z][a-z0-9_.-]{0,39}")
MAX_REASONS = 50


def check_reason(value: Any, field: str = "dropped") -> str:
    """A drop reason as stored: a short lower-case identifier (`timeout`, `error`, `overlong`)."""
    if not isinstance(value, str) or not REASON_PATTERN.fullmatch(value):
        raise ValueError(
            f"{field} must be a drop reason: 1-40 characters of a-z, 0-9, '_', '.' or '-', "
            f"starting with a letter (e.g. 'timeout'), got {value!r}"
        )
    return value


def check_policy(value: Any, field: str = "drop_policy") -> dict[str, str]:
    """`{reason: "mask" | "recompute"}`, `"*"` for every reason not named; unnamed reasons mask."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f'{field} must be an object mapping drop reasons to {" or ".join(DROP_MODES)}, e.g. {{"timeout": "{RECOMPUTE}"}}'
        )
    if len(value) > MAX_REASONS:
        raise ValueError(f"{field} names at most {MAX_REASONS} reasons")
    out = {}
    for reason, mode in value.items():
        if reason != ANY_REASON:
            check_reason(reason, f"{field} key")
        if mode not in DROP_MODES:
            raise ValueError(f"{field}[{reason!r}] must be one of {', '.join(DROP_MODES)}, got {mode!r}")
        out[reason] = mode
    return dict(sorted(out.items()))


def mode_of(reason: str | None, policy: Mapping[str, str]) -> str | None:
    """The mode the policy gives a rollout dropped for `reason`; None for a kept rollout."""
    if not reason:
        return None
    return policy.get(reason, policy.get(ANY_REASON, MASK))


# What a drop does, in the words the group and step pages use (docs/method.md §8).
MODE_WORDS = {
    MASK: "masked: it stays in the group's numbers, so the kept rollouts get the full group's A*, and it carries no loss",
    RECOMPUTE: "recomputed without it: the group's numbers use the kept rollouts only, and it gets no advantage (A* = 0)",
}


@dataclass(frozen=True)
class Drop:
    """A rollout the trainer dropped: why (its reason) and what the run's policy makes of it."""

    reason: str
    mode: str

    @property
    def words(self) -> str:
        return MODE_WORDS[self.mode]


def drop_of(reason: str | None, policy: Mapping[str, str]) -> Drop | None:
    """The drop of a rollout dropped for `reason` under `policy`; None for a kept rollout.

    >>> drop_of("timeout", {"timeout": "recompute"}).words
    "recomputed without it: the group's numbers use the kept rollouts only, and it gets no advantage (A* = 0)"
    >>> drop_of("error", {"timeout": "recompute"}).mode, drop_of("", {})
    ('mask', None)
    """
    mode = mode_of(reason, policy)
    return Drop(reason, mode) if reason and mode else None


def redistribute_kept(
    rollouts: pd.DataFrame, *, policy: Mapping[str, str], mapping: MappingSpec = DEFAULT_MAPPING, baseline: str = "mean"
) -> pd.DataFrame:
    """`redistribute` with the drop policy applied; rows stay in their order.

    Input: `redistribute`'s columns plus `dropped` (a reason, or None/"" for a kept
    rollout; the column may be absent). Adds `drop_mode` (None, "mask" or "recompute").
    Rows dropped under `recompute` are left out of their group's numbers and come back
    with advantage, A* and discount-only 0, factor and lambda 1, status `dropped`.
    """
    reasons = rollouts["dropped"].tolist() if "dropped" in rollouts.columns else [None] * len(rollouts)
    modes = np.array([mode_of(r if isinstance(r, str) else None, policy) for r in reasons], dtype=object)
    out_of_group = modes == RECOMPUTE
    if not out_of_group.any():
        return redistribute(rollouts, mapping=mapping, baseline=baseline).assign(
            drop_mode=pd.Series(modes, index=rollouts.index, dtype=object)
        )
    kept = redistribute(rollouts[~out_of_group], mapping=mapping, baseline=baseline)
    left = rollouts[out_of_group]
    reward = pd.to_numeric(left["reward"]).to_numpy(dtype=float)
    gone = left.assign(
        reward_used=np.where(left["cheat"].eq(True).to_numpy(), 0.0, reward),
        advantage=0.0,
        factor=1.0,
        redistributed_advantage=0.0,
        discount_only_advantage=0.0,
        status=DROPPED,
    )
    gone["passed"] = gone["reward_used"] == 1.0
    gone["lambda"] = 1.0
    kept["status"] = kept["status"].astype(object)
    out = pd.concat([kept, gone[kept.columns]]).loc[rollouts.index]
    marked: pd.DataFrame = out.assign(drop_mode=pd.Series(modes, index=rollouts.index, dtype=object))
    return marked
