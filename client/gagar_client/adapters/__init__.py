"""Feed Gagar's redistributed advantages A* to trainer libraries.

Trainers whose GRPO advantage is `r_i - mean(r of the group)` (no std scaling) give back
A* unchanged when A* is fed in as the reward, because the A* of a group sum to zero
(METHOD.md: every baseline sums to zero per group and the redistribution keeps the
passing total and the failing values). Set:

* verl: `algorithm.adv_estimator=grpo` (or `grpo_vectorized`) and
  `algorithm.norm_adv_by_std_in_grpo=False` -> `gagar_client.adapters.verl`;
* TRL: `GRPOConfig(scale_rewards="none")` -> `gagar_client.adapters.trl`.

With std scaling on, the trainer would divide A* by the group's std: do not.

Rollout index: Gagar names a rollout (uid, index). Both verl (`batch.repeat(n,
interleave=True)`) and TRL (`RepeatSampler`) put a group's n samples next to each other in
generation order, so by default the index of a sample is its occurrence number among the
samples of the same uid in the batch, as `rollout_indexes` counts it. Post the step to
Gagar with the same order, or pass explicit indexes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Union

AdvantageLookup = Union[Mapping[tuple, float], Callable[..., Mapping[tuple, float]]]
MISSING_POLICIES = ("raise", "zero")


class MissingAdvantage(KeyError):
    """A sample whose (uid, index) the export does not hold."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


def rollout_indexes(uids: Iterable[Any]) -> list[int]:
    """0, 1, 2, ... within each uid, in batch order: `["a", "a", "b", "a"] -> [0, 1, 0, 2]`."""
    seen: dict[Any, int] = {}
    out = []
    for uid in uids:
        n = seen.get(uid, 0)
        out.append(n)
        seen[uid] = n + 1
    return out


def lookup_advantages(advantages: Mapping[tuple, float], uids: Sequence[Any], indexes: Sequence[int] | None = None,
                      *, missing: str = "raise") -> list[float]:
    """A* per sample: `advantages[(uid, index)]`, indexes counted by `rollout_indexes` if not given.

    `missing="raise"` (default) raises `MissingAdvantage` naming the first missing keys;
    `missing="zero"` gives such samples 0.0 (no learning signal).
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {MISSING_POLICIES}, got {missing!r}")
    uids = [str(u) for u in uids]
    if indexes is None:
        indexes = rollout_indexes(uids)
    else:
        indexes = [int(i) for i in indexes]
        if len(indexes) != len(uids):
            raise ValueError(f"{len(uids)} uids but {len(indexes)} indexes")
    values, absent = [], []
    for key in zip(uids, indexes):
        value = advantages.get(key)
        if value is None:
            absent.append(key)
            value = 0.0
        values.append(float(value))
    if absent and missing == "raise":
        shown = ", ".join(f"({u!r}, {i})" for u, i in absent[:5])
        more = f" and {len(absent) - 5} more" if len(absent) > 5 else ""
        raise MissingAdvantage(f"no advantage for {len(absent)} of {len(uids)} samples: {shown}{more}"
                               " (was the step posted with these uids and indexes, and is it final?)")
    return values


__all__ = ["AdvantageLookup", "MissingAdvantage", "lookup_advantages", "rollout_indexes"]
