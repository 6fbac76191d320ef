"""rLLM: a test of our side of its contract (rLLM is not on PyPI; shapes read from
rllm-org/rllm's source: `rllm/types.py`, `rllm/trainer/algorithms/transform.py`, `advantage.py`).

The contract: an `Episode`'s id is `"{task_id}:{rollout_idx}"`; rLLM's transform groups
trajectories by `"{task_id}:{trajectory.name}"` in episode order, leaving out the episodes compact
filtering masks, and writes `metadata[j] = {"task_id", "rollout_idx", ...}` for trajectory j;
with `use_precomputed_advantage` a float `step.advantage` is broadcast to the step's
`response_ids`, and the flattened per-token advantages are what trains.
"""

from __future__ import annotations

import random
from collections import defaultdict
from enum import Enum
from types import SimpleNamespace

import pytest

from tests.helpers.trainers import GROUPS_OF_FOUR

pytestmark = pytest.mark.trainers

from gagar_client.adapters import MissingAdvantage, groups_from_ids  # noqa: E402
from gagar_client.adapters import rllm as gagar_rllm  # noqa: E402


class TerminationReason(Enum):  # the values of rllm.workflows.workflow.TerminationReason used here
    ENV_DONE = "env_done"
    TIMEOUT = "timeout"


def _episodes(seed=0):
    rng, episodes = random.Random(seed), []
    for group in GROUPS_OF_FOUR:
        task_id = group.uid.split("@")[0]
        for j, reward in enumerate(group.rewards):
            steps = [SimpleNamespace(response_ids=[1] * rng.randint(1, 4), advantage=None) for _ in range(rng.randint(1, 3))]
            episodes.append(
                SimpleNamespace(
                    id=f"{task_id}:{j}",
                    termination_reason=TerminationReason.ENV_DONE,
                    trajectories=[SimpleNamespace(name="solver", steps=steps, reward=float(reward))],
                )
            )
    rng.shuffle(episodes)  # episodes finish in any order
    return episodes


def _groups(episodes, masked=(TerminationReason.TIMEOUT,)):
    """rLLM's transform: one group per task and trajectory name, compact filtering applied."""
    trajectories, metadata = defaultdict(list), defaultdict(list)
    for episode in episodes:
        if episode.termination_reason in masked:
            continue
        task_id, rollout_idx = episode.id.split(":")
        for trajectory in episode.trajectories:
            trajectories[f"{task_id}:{trajectory.name}"].append(trajectory)
            metadata[f"{task_id}:{trajectory.name}"].append(
                {"task_id": task_id, "rollout_idx": rollout_idx, "termination_reason": episode.termination_reason}
            )
    return [SimpleNamespace(group_id=name, trajectories=trajs, metadata=metadata[name]) for name, trajs in trajectories.items()]


def _a_star(a_star_four):
    return {(f"{uid.split('@')[0]}:solver", j): value for (uid, j), value in a_star_four.items()}


def test_every_step_carries_its_trajectorys_a_star(a_star_four):
    episodes = _episodes()
    timed_out = next(e for e in episodes if e.id == "mixed-tiers:3")
    timed_out.termination_reason = TerminationReason.TIMEOUT
    groups = _groups(episodes)
    a_star = _a_star(a_star_four)

    dropped = gagar_rllm.dropped_episodes(episodes, groups)
    assert dropped == {("mixed-tiers:solver", 3): "timeout"}
    ids = [key for group in groups for key in gagar_rllm.sample_ids(group)]
    posted = groups_from_ids(ids + list(dropped), [0.0] * (len(ids) + 1), dropped=dropped)
    assert sum(len(g["rollouts"]) for g in posted) == 24 and len(ids) == 23

    gagar_rllm.check_config({"use_precomputed_advantage": True, "stepwise_advantage_mode": "broadcast"})
    gagar_rllm.apply_to_groups(groups, a_star)
    for group in groups:
        for trajectory, key in zip(group.trajectories, gagar_rllm.sample_ids(group)):
            # rLLM's broadcast of a float step.advantage over the step's response tokens
            tokens = [step.advantage for step in trajectory.steps for _ in step.response_ids]
            assert tokens == [a_star[key]] * sum(len(step.response_ids) for step in trajectory.steps)


def test_settings_and_shapes_that_lose_a_star_are_refused(a_star_four):
    with pytest.raises(ValueError, match="use_precomputed_advantage=false"):
        gagar_rllm.check_config({"use_precomputed_advantage": False})
    with pytest.raises(ValueError, match="stepwise_advantage_mode=per_step"):
        gagar_rllm.check_config({"use_precomputed_advantage": True, "stepwise_advantage_mode": "per_step"})
    group = _groups(_episodes())[0]
    with pytest.raises(MissingAdvantage):
        gagar_rllm.apply_to_groups([group], {})
    group.metadata.pop()
    with pytest.raises(ValueError, match="metadata entries"):
        gagar_rllm.sample_ids(group)
