"""ART (OpenPipe's Agent Reinforcement Trainer): A* as each trajectory's reward.

ART has no estimator to register: `tokenize_trajectory_groups` takes `reward - mean(reward of
the group)`, divided by the group's std unless `scale_rewards=False`. A* sums to zero over a
whole group, so with `scale_rewards=False` ART's advantage is A* itself; a group that lost
trajectories (ART keeps a group whose rollouts raised, as exceptions) sums to zero only if the
run recomputes it without them: the run's `drop_policy` must say `recompute` for the reasons
ART groups lose rollouts to, and `apply_to_groups` refuses a group that does not sum to zero.

Identity rides in each trajectory's `metadata` (`gagar_uid`, `gagar_index`), stamped where the
group is made::

    from gagar_client.adapters import art as gagar_art

    groups = await art.gather_trajectory_groups(
        art.TrajectoryGroup(gagar_art.stamped(rollout(model, scenario), uid=scenario.uid, index=j) for j in range(n))
        for scenario in batch)
    gagar.post_step(run, step, groups_from_ids(ids, rewards, dropped=...))   # gagar_art.sample_ids(group), lost(...)
    gagar_art.apply_to_groups(groups, a_star)
    await model.train(groups, _config={"scale_rewards": False})            # check_config refuses the rest
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from typing import Any

from gagar_client.adapters import MissingAdvantage, check_zero_sum, groups_from_ids, lookup_advantages, setting

__all__ = [
    "MissingAdvantage",
    "apply_to_groups",
    "check_config",
    "groups_from_ids",
    "lost",
    "sample_id",
    "sample_ids",
    "stamp",
    "stamped",
]

UID_KEY, INDEX_KEY = "gagar_uid", "gagar_index"
SETTING = "ART's tokenize_trajectory_groups (reward minus the group's mean)"


def stamp(trajectory: Any, uid: str, index: int) -> Any:
    """Stamp `trajectory.metadata` with its `(uid, index)`, once. Returns the trajectory."""
    metadata = trajectory.metadata
    if UID_KEY in metadata or INDEX_KEY in metadata:
        raise ValueError(f"the trajectory is stamped already ({UID_KEY}, {INDEX_KEY}): stamp once, where the group is made")
    metadata[UID_KEY] = str(uid)
    metadata[INDEX_KEY] = int(index)
    return trajectory


async def stamped(rollout: Awaitable[Any], *, uid: str, index: int) -> Any:
    """`await rollout`, then `stamp` it: wrap each rollout where `art.TrajectoryGroup(...)` is made."""
    return stamp(await rollout, uid, index)


def sample_id(trajectory: Any) -> tuple[str, int]:
    metadata = trajectory.metadata
    if UID_KEY not in metadata or INDEX_KEY not in metadata:
        raise ValueError(
            f"a trajectory carries no {UID_KEY}/{INDEX_KEY} in its metadata: stamp it where its group is "
            "made (gagar_client.adapters.art.stamped)"
        )
    return str(metadata[UID_KEY]), int(metadata[INDEX_KEY])


def sample_ids(group: Any) -> list[tuple[str, int]]:
    """`(uid, index)` of each trajectory of an `art.TrajectoryGroup`, in its order."""
    return [sample_id(t) for t in group.trajectories]


def lost(group: Any, uid: str, n: int, reason: str = "error") -> dict[tuple[str, int], str]:
    """`{(uid, j): reason}` for the rollouts 0..n-1 of `uid` that the group holds no trajectory
    for (ART keeps a rollout that raised as one of the group's `exceptions`)."""
    have = {index for u, index in sample_ids(group) if u == str(uid)}
    return {(str(uid), j): reason for j in range(n) if j not in have}


def check_config(dev_config: Mapping[str, Any] | None) -> None:
    """Refuse ART training settings (`model.train(..., _config=...)`, `art.dev.TrainConfig`) that
    would change A*, naming the setting. `scale_rewards` defaults to True in ART: say False."""
    if setting(dev_config, "scale_rewards", True):
        raise ValueError(
            "scale_rewards=True (ART's default) divides A* by its group's std: pass _config={'scale_rewards': False}"
        )
    if setting(dev_config, "kl_penalty_coef", 0.0):
        raise ValueError("kl_penalty_coef adds a KL term to A* per token: set it to 0")
    if setting(dev_config, "kimi_k2_tau") is not None:
        raise ValueError("kimi_k2_tau subtracts a log-probability term from A*: leave it unset")
    if setting(dev_config, "advantage_balance", 0.0):
        raise ValueError("advantage_balance reweights negative against positive A*: set it to 0.0")
    if setting(dev_config, "scale_learning_rate_by_reward_std_dev", False):
        raise ValueError("scale_learning_rate_by_reward_std_dev scales each step by the std of A*: set it to False")


def apply_to_groups(groups: Iterable[Any], advantages: Mapping[tuple, float], *, missing: str = "raise") -> list[Any]:
    """Set every trajectory's `reward` to its A*, looked up by its stamp. A group whose A* do not
    sum to zero is refused (ART subtracts the group mean). Returns the groups."""
    groups = list(groups)
    for group in groups:
        ids = sample_ids(group)
        values = lookup_advantages(advantages, [u for u, _ in ids], [i for _, i in ids], missing=missing)
        check_zero_sum(dict(zip(ids, values)), ids, setting=SETTING)
        for trajectory, value in zip(group.trajectories, values):
            trajectory.reward = value
    return groups
