"""slime: a test of our side of its contract (slime is not on PyPI; shapes read from THUDM/slime's
source: `slime/rollout/data_source.py`, `slime/ray/rollout.py`, `slime/backends/megatron_utils/loss.py`).

The contract: the data source makes the g-th group's n samples with `Sample.group_index = g`
and `Sample.index = g * n + j`; `--custom-reward-post-process-path` is called as
`f(args, samples) -> (raw_rewards, rewards)` with the step's samples; slime carries each
sample's reward to a training rank with its sample (`rollout_data[key] = [data[key][j] for j in
partition]`), and `--custom-advantage-function-path` is called as `f(args, rollout_data)` after
`rollout_data["kl"]` is set (one tensor per sample over its response tokens) and must set
`rollout_data["advantages"]` and `["returns"]`, lists of tensors of those shapes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from tests.helpers.trainers import GROUPS_OF_FOUR, require

pytestmark = pytest.mark.trainers

torch = require("torch")

from gagar_client.adapters import MissingAdvantage  # noqa: E402
from gagar_client.adapters import slime as gagar_slime  # noqa: E402

N = 4


@dataclass
class Sample:  # the fields of slime.utils.types.Sample the hooks read
    group_index: int | None = None
    index: int | None = None
    reward: float | None = None
    response_length: int = 0
    remove_sample: bool = False

    def get_reward_value(self, args):
        return self.reward


def _args(**overrides):
    return SimpleNamespace(
        **{
            "n_samples_per_prompt": N,
            "normalize_advantages": False,
            "use_opd": False,
            "custom_reward_post_process_path": "gagar_hooks.reward_post_process",
            "custom_advantage_function_path": "gagar_hooks.advantages",
            **overrides,
        }
    )


def _samples(seed=0):
    """As slime's RolloutDataSource makes them: group by group, the two counters in step."""
    rng, samples, index = random.Random(seed), [], 0
    for g, group in enumerate(GROUPS_OF_FOUR):
        for reward in group.rewards:
            samples.append(Sample(group_index=g, index=index, reward=float(reward), response_length=rng.randint(1, 7)))
            index += 1
    rng.shuffle(samples)  # partial rollouts and the buffer hand samples back in any order
    return samples


def uid_of(sample):
    return GROUPS_OF_FOUR[sample.group_index].uid


def test_rewards_and_advantages_are_each_samples_a_star(a_star_four):
    samples = _samples()
    samples[0].remove_sample = True  # slime zeroes its loss mask; it is posted as dropped
    posted = []

    def resolve(step_samples, groups):
        posted.extend(groups)
        return a_star_four

    post_process = gagar_slime.reward_post_process(
        resolve, uid_of=uid_of, dropped_reason=lambda s: "removed" if s.remove_sample else None
    )
    args = _args()
    raw, rewards = post_process(args, samples)
    ids = [(uid_of(s), s.index - s.group_index * N) for s in samples]
    assert raw == [s.reward for s in samples]
    assert rewards == [a_star_four[key] for key in ids]
    assert sorted(g["uid"] for g in posted) == sorted(g.uid for g in GROUPS_OF_FOUR)
    flagged = [r for g in posted for r in g["rollouts"] if "dropped" in r]
    assert flagged == [{"index": ids[0][1], "reward": samples[0].reward, "dropped": "removed"}]

    # A training rank's share: slime partitions the step's samples; rewards travel with them.
    partition = [5, 0, 17, 9, 2]
    rollout_data = {
        "rewards": [rewards[j] for j in partition],
        "kl": [torch.zeros(samples[j].response_length) for j in partition],
    }
    gagar_slime.advantages(args, rollout_data)
    for j, adv, ret, kl in zip(partition, rollout_data["advantages"], rollout_data["returns"], rollout_data["kl"]):
        assert adv.shape == kl.shape and torch.equal(adv, ret)
        assert torch.allclose(adv, torch.full_like(kl, a_star_four[ids[j]]), atol=1e-6, rtol=0)


def test_stamps_that_do_not_follow_the_data_source_are_refused(a_star_four):
    with pytest.raises(ValueError, match=r"not in group 1's range 4..7"):
        gagar_slime.sample_id(Sample(group_index=1, index=9), N, uid_of)
    with pytest.raises(ValueError, match="no group_index/index"):
        gagar_slime.sample_id(Sample(), N, uid_of)
    post_process = gagar_slime.reward_post_process(lambda samples, groups: {}, uid_of=uid_of)
    with pytest.raises(MissingAdvantage):
        post_process(_args(), _samples())


@pytest.mark.parametrize(
    "overrides, named",
    [
        ({"normalize_advantages": True}, "--normalize-advantages"),
        ({"use_opd": True}, "--use-opd"),
        ({"custom_reward_post_process_path": None}, "--custom-reward-post-process-path"),
    ],
)
def test_settings_that_change_a_star_are_refused_by_name(overrides, named):
    with pytest.raises(ValueError, match=named):
        gagar_slime.advantages(_args(**overrides), {"rewards": [0.5], "kl": [torch.zeros(3)]})
