"""rLLM: A* as precomputed step advantages (`rllm.algorithm.use_precomputed_advantage: true`).

rLLM names every episode `"{task_id}:{rollout_idx}"` where its rollouts are made, builds one
`TrajectoryGroup` per `"{task_id}:{trajectory.name}"` (its `group_id`) with `metadata[j]` holding
trajectory j's `task_id` and `rollout_idx`, and leaves out the episodes its compact filtering
masks (by `termination_reason`). With `use_precomputed_advantage` it takes `step.advantage`
as it is, a float broadcast to the step's `response_ids`, instead of its estimator (GRPO, or the
RLOO DeepSWE used); without it rLLM overwrites them, which `check_config` refuses.

Gagar's `(uid, index)` is `(group_id, int(rollout_idx))`: the group id names the task and the
trajectory's role, the rollout index the sample::

    from gagar_client.adapters import rllm as gagar_rllm

    ids = [key for group in groups for key in gagar_rllm.sample_ids(group)]
    dropped = gagar_rllm.dropped_episodes(episodes, groups)            # compact filtering's, with reasons
    gagar.post_step(run, step, groups_from_ids(ids + list(dropped), rewards + [0.0] * len(dropped), dropped=dropped))
    gagar_rllm.apply_to_groups(groups, a_star)                        # step.advantage = A* on every step

Call it between rLLM's transform of episodes into trajectory groups and its advantage
collection (`collect_reward_and_advantage_from_trajectory_groups`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gagar_client.adapters import MissingAdvantage, lookup_advantages, setting

__all__ = ["MissingAdvantage", "apply_to_groups", "check_config", "dropped_episodes", "sample_ids"]


def check_config(algorithm: Any) -> None:
    """Refuse rLLM `rllm.algorithm` settings under which A* is not what trains, naming each."""
    if not setting(algorithm, "use_precomputed_advantage", False):
        raise ValueError(
            "rllm.algorithm.use_precomputed_advantage=false: rLLM overwrites step.advantage with its "
            "estimator (GRPO, RLOO): set it to true"
        )
    mode = setting(algorithm, "stepwise_advantage_mode", "broadcast")
    if mode != "broadcast":
        raise ValueError(
            f"rllm.algorithm.stepwise_advantage_mode={mode}: A* is one value per trajectory, broadcast "
            "to its steps: use broadcast"
        )


def sample_ids(group: Any) -> list[tuple[str, int]]:
    """`(group_id, rollout_idx)` of each trajectory of an rLLM `TrajectoryGroup`, from its metadata."""
    if len(group.metadata) != len(group.trajectories):
        raise ValueError(
            f"group {group.group_id!r} has {len(group.trajectories)} trajectories but "
            f"{len(group.metadata)} metadata entries: rLLM's transform writes one per trajectory"
        )
    return [(str(group.group_id), int(meta["rollout_idx"])) for meta in group.metadata]


def dropped_episodes(episodes: Iterable[Any], groups: Sequence[Any]) -> dict[tuple[str, int], str]:
    """`{(group_id, rollout_idx): reason}` for each trajectory of `episodes` that no group holds
    (rLLM's compact filtering left its episode out): the reason is its termination reason."""
    kept = {key for group in groups for key in sample_ids(group)}
    out = {}
    for episode in episodes:
        task_id, rollout_idx = str(episode.id).split(":")[:2]
        reason = getattr(episode.termination_reason, "value", episode.termination_reason) or "unknown"
        for trajectory in episode.trajectories:
            key = (f"{task_id}:{trajectory.name}", int(rollout_idx))
            if trajectory.steps and key not in kept:
                out[key] = str(reason).lower()
    return out


def apply_to_groups(groups: Iterable[Any], advantages: Mapping[tuple, float], *, missing: str = "raise") -> None:
    """Set `step.advantage` of every step of every trajectory to the trajectory's A* (a float,
    which rLLM broadcasts to the step's tokens), looked up by `(group_id, rollout_idx)`."""
    for group in groups:
        ids = sample_ids(group)
        values = lookup_advantages(advantages, [u for u, _ in ids], [i for _, i in ids], missing=missing)
        for trajectory, value in zip(group.trajectories, values):
            for step in trajectory.steps:
                step.advantage = float(value)
