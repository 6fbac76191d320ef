"""Feed Gagar's redistributed advantages A* to trainer libraries.

Trainers whose GRPO advantage is `r_i - mean(r of the group)` (no std scaling) give back
A* unchanged when A* is fed in as the reward, because the A* of a group sum to zero
(METHOD.md: every baseline sums to zero per group and the redistribution keeps the
passing total and the failing values). Set:

* verl: `algorithm.adv_estimator=grpo` (or `grpo_vectorized`) and
  `algorithm.norm_adv_by_std_in_grpo=False` -> `gagar_client.adapters.verl`;
* TRL: `GRPOConfig(scale_rewards="none")` -> `gagar_client.adapters.trl`.

With std scaling on, the trainer would divide A* by the group's std: do not. Where a
trainer lets us register an advantage estimator, the adapter registers one that *is* A*
(verl: `algorithm.adv_estimator=gagar`, `gagar_client.adapters.verl_estimator`).

Sample identity: Gagar names a rollout (uid, index). The index is stamped once, where the
group is made (verl: `adapters.verl.stamp_sample_ids` right after `repeat(interleave=True)`;
SkyRL: its `TrajectoryID`; Agent Lightning: its rollout manager's `_create_rollouts`; slime:
the group list its data source makes; rLLM: the episode's `task_id:rollout_idx`), travels with
the sample and is the key of every lookup. Batch order is not a key: trainers reorder batches
(verl's `trainer.balance_batch`) and filters drop rows. Counting occurrences in batch order
(`rollout_indexes`) is only done when asked for by name, `indexes=BATCH_ORDER`, and warns
(`BatchOrderWarning`).

One adapter per trainer (docs/api.md has a recipe for each): `verl`, `verl_estimator`, `trl`,
`skyrl`, `openrlhf`, `areal`, `art`, `rllm`, `slime`, `prime_rl`, `agent_lightning` (verl's
`gagar` estimator, keyed by the rollout ids Agent Lightning makes). Those that feed A* through
the trainer's group mean (TRL, OpenRLHF `dr_grpo`, ART) check with `check_zero_sum` that every
group they train on sums to zero, which a group that lost rollouts under the `mask` drop
policy does not.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Union

AdvantageLookup = Union[Mapping[tuple, float], Callable[..., Mapping[tuple, float]]]
MISSING_POLICIES = ("raise", "zero")
BATCH_ORDER = "batch-order"  # `indexes=BATCH_ORDER`: count a sample's index in batch order (warns)


class BatchOrderWarning(UserWarning):
    """Rollout indexes were counted from batch order, which reordering or filtering breaks."""


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


def sample_indexes(uids: Sequence[Any], indexes: Sequence[int] | str | None, *, where: str = "") -> list[int]:
    """The rollout index of each sample: `indexes` as given, or counted in batch order when
    `indexes=BATCH_ORDER` (with a `BatchOrderWarning`). None is refused: say which."""
    if indexes is None:
        raise ValueError(
            f"no sample indexes{where}: stamp them where the group is made (verl: "
            f"adapters.verl.stamp_sample_ids right after repeat(interleave=True)) or pass them; "
            f"indexes={BATCH_ORDER!r} counts them in batch order, which reordering and filtering break"
        )
    if isinstance(indexes, str):
        if indexes != BATCH_ORDER:
            raise ValueError(f"indexes must be a sequence of ints or {BATCH_ORDER!r}, got {indexes!r}")
        warnings.warn(
            "rollout indexes counted from batch order: right only if the batch was neither reordered nor "
            "filtered since its groups were made",
            BatchOrderWarning,
            stacklevel=3,
        )
        return rollout_indexes(uids)
    out = [int(i) for i in indexes]
    if len(out) != len(uids):
        raise ValueError(f"{len(uids)} uids but {len(out)} indexes")
    return out


def lookup_advantages(
    advantages: Mapping[tuple, float], uids: Sequence[Any], indexes: Sequence[int] | str | None, *, missing: str = "raise"
) -> list[float]:
    """A* per sample: `advantages[(uid, index)]`; `indexes` per sample, or `BATCH_ORDER`.

    `missing="raise"` (default) raises `MissingAdvantage` naming the first missing keys;
    `missing="zero"` gives such samples 0.0 (no learning signal).
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {MISSING_POLICIES}, got {missing!r}")
    uids = [str(u) for u in uids]
    indexes = sample_indexes(uids, indexes)
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
        raise MissingAdvantage(
            f"no advantage for {len(absent)} of {len(uids)} samples: {shown}{more}"
            " (was the step posted with these uids and indexes, and is it final?)"
        )
    return values


def dropped_ids(before: Iterable[tuple[str, int]], after: Iterable[tuple[str, int]], reason: str) -> dict[tuple[str, int], str]:
    """`{(uid, index): reason}` for the sample ids of `before` (a filter's input) that `after`
    (its output) no longer holds, for `group_steps(dropped=...)`."""
    kept = set(after)
    return {key: reason for key in before if key not in kept}


def check_zero_sum(advantages: Mapping[tuple, float], keys: Iterable[tuple], *, setting: str, tol: float = 1e-6) -> None:
    """Refuse groups whose A* over `keys` (the samples a trainer trains on) do not sum to zero.

    For trainers that subtract the group mean from the reward (`setting` names the one that
    does it): A* comes back unchanged only if the group's A* sum to zero. A whole group does;
    a group that lost rollouts under the `mask` drop policy does not (its kept rows carry the
    full group's A*)."""
    sums: dict[Any, float] = {}
    for uid, index in keys:
        key = (str(uid), int(index))
        if key not in advantages:
            raise MissingAdvantage(f"no advantage for ({key[0]!r}, {key[1]})")
        sums[key[0]] = sums.get(key[0], 0.0) + float(advantages[key])
    off = [(uid, total) for uid, total in sums.items() if abs(total) > tol]
    if off:
        shown = ", ".join(f"{uid!r} sums to {total:+.6f}" for uid, total in off[:5])
        raise ValueError(
            f"{setting} subtracts each group's mean, which gives A* back only for a group whose A* sum to "
            f"zero: {shown}. A group that lost rollouts sums to zero under the run's drop_policy "
            f"'recompute' for that reason, not under 'mask'"
        )


def setting(config: Any, name: str, default: Any = None) -> Any:
    """`config`'s setting `name` (dotted for nested: "algo.kl.use_loss"): attribute or key, of
    dataclasses, namespaces, dicts and OmegaConf alike; `default` when absent or `config` is None."""
    value = config
    for part in name.split("."):
        if value is None:
            break
        if isinstance(value, Mapping):
            value = value.get(part)
        elif hasattr(value, part):
            value = getattr(value, part)
        elif callable(getattr(value, "get", None)):
            value = value.get(part, None)
        else:
            value = None
    return default if value is None else value


def group_steps(
    uids: Sequence[Any],
    rewards: Sequence[float],
    *,
    indexes: Sequence[int] | str | None,
    dropped: Mapping[tuple[str, int], str] | None = None,
    extra: Mapping[Any, Mapping[str, Any]] | None = None,
) -> list[dict]:
    """`gagar-group/1` group dicts (without run/step: `Client.post_step` adds them) from a
    batch's uids, rollout indexes (verl: `non_tensor_batch["gagar_index"]`; or `BATCH_ORDER`) and
    binary test rewards. `dropped[(uid, index)]` is the reason a rollout was taken out of the
    batch (`dropped_between`). `extra[uid]` adds fields to a group (its `task`, at least
    `{"instance_id": ...}`; default: the uid), `extra[(uid, index)]` to a rollout (`patch`,
    `messages`, ...)."""
    uids = [str(u) for u in uids]
    indexes = sample_indexes(uids, indexes, where=" for group_steps")
    extra = extra or {}
    dropped = dropped or {}
    groups: dict[str, dict] = {}
    for uid, index, reward in zip(uids, indexes, rewards):
        group = groups.get(uid)
        if group is None:
            group = {"uid": uid, "task": {"instance_id": uid}, "rollouts": []}
            group.update(extra.get(uid, {}))
            groups[uid] = group
        rollout: dict[str, Any] = {"index": index, "reward": float(reward)}
        if (uid, index) in dropped:
            rollout["dropped"] = dropped[(uid, index)]
        rollout.update(extra.get((uid, index), {}))
        group["rollouts"].append(rollout)
    return list(groups.values())


def groups_from_ids(
    ids: Sequence[tuple[str, int]],
    rewards: Sequence[float],
    *,
    dropped: Mapping[tuple[str, int], str] | None = None,
    extra: Mapping[Any, Mapping[str, Any]] | None = None,
) -> list[dict]:
    """`group_steps` from `(uid, index)` sample ids, as the adapters' `sample_ids` give them."""
    return group_steps([u for u, _ in ids], rewards, indexes=[i for _, i in ids], dropped=dropped, extra=extra)


__all__ = [
    "BATCH_ORDER",
    "AdvantageLookup",
    "BatchOrderWarning",
    "MissingAdvantage",
    "check_zero_sum",
    "dropped_ids",
    "group_steps",
    "groups_from_ids",
    "lookup_advantages",
    "rollout_indexes",
    "sample_indexes",
    "setting",
]
