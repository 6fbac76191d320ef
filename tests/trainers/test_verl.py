"""verl's own GRPO advantage code, fed A* as the outcome reward, gives A* back.

Runs verl's real `compute_grpo_outcome_advantage` and `compute_grpo_vectorized_outcome_advantage`
(`verl.trainer.ppo.core_algos`) with `norm_adv_by_std_in_grpo=False` on token-level rewards
built by `gagar_client.adapters.verl` from A* of synthetic groups (computed by
`grading.method.advantage`): graded groups with failing rollouts, a fallback group, a cheat,
all-fail and all-pass groups, a 16-rollout group with ties, the `loo` and `grpo` baselines
and a group of one.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from tests.helpers.trainers import GROUPS_OF_FOUR, MORE_GROUPS, require, verl_batch

pytestmark = pytest.mark.trainers

torch = require("torch")
core_algos = require("verl.trainer.ppo.core_algos")
verl = require("verl")

from gagar_client.adapters import BatchOrderWarning, MissingAdvantage  # noqa: E402
from gagar_client.adapters import verl as gagar_verl  # noqa: E402

ESTIMATORS = {
    "grpo": core_algos.compute_grpo_outcome_advantage,
    "grpo_vectorized": core_algos.compute_grpo_vectorized_outcome_advantage,
}
TOL = 1e-6  # verl computes in float32


def _batch(groups, *, shuffle: bool, seed: int = 0, response_length: int = 7):
    """uids (verl's `non_tensor_batch["uid"]`, one per sample), each group's samples in
    generation order, and a response mask with random response lengths."""
    uids = [g.uid for g in groups for _ in g.rewards]
    indexes = [i for g in groups for i in range(len(g.rewards))]
    order = list(range(len(uids)))
    if shuffle:  # verl may reorder a batch (balance_batch); uids travel with their samples
        random.Random(seed).shuffle(order)
    uids = [uids[i] for i in order]
    indexes = [indexes[i] for i in order]
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, response_length + 1, (len(uids),), generator=generator)
    mask = (torch.arange(response_length)[None, :] < lengths[:, None]).to(torch.float32)
    return uids, indexes, mask


def _check(advantages, returns, mask, expected):
    expected = torch.tensor(expected, dtype=torch.float32)
    per_sample = (advantages * mask).sum(-1) / mask.sum(-1)
    assert torch.allclose(per_sample, expected, atol=TOL, rtol=0), (per_sample, expected)
    # broadcast over the response tokens, zero on padding
    assert torch.allclose(advantages, expected[:, None] * mask, atol=TOL, rtol=0)
    assert torch.equal(advantages, returns)


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_grpo_without_std_returns_a_star(estimator, a_star_all):
    uids, indexes, mask = _batch(GROUPS_OF_FOUR + MORE_GROUPS, shuffle=False)
    with pytest.warns(BatchOrderWarning):
        values = gagar_verl.advantages_for_batch(uids, a_star_all, indexes=gagar_verl.BATCH_ORDER)  # asked for by name
    assert values == [a_star_all[(u, i)] for u, i in zip(uids, indexes)]
    rewards = gagar_verl.token_level_rewards(values, mask)
    advantages, returns = ESTIMATORS[estimator](
        token_level_rewards=rewards,
        response_mask=mask,
        index=np.array(uids, dtype=object),
        norm_adv_by_std_in_grpo=False,
    )
    _check(advantages, returns, mask, values)


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
def test_shuffled_batch_with_explicit_indexes(estimator, a_star_all):
    uids, indexes, mask = _batch(GROUPS_OF_FOUR + MORE_GROUPS, shuffle=True, seed=3)
    values = gagar_verl.advantages_for_batch(uids, a_star_all, indexes=indexes)
    rewards = gagar_verl.token_level_rewards(values, mask)
    advantages, returns = ESTIMATORS[estimator](
        token_level_rewards=rewards,
        response_mask=mask,
        index=np.array(uids, dtype=object),
        norm_adv_by_std_in_grpo=False,
    )
    _check(advantages, returns, mask, [a_star_all[(u, i)] for u, i in zip(uids, indexes)])


def test_on_a_verl_dataproto(a_star_four):
    """The batch as verl builds it: one uid per prompt, `repeat(n, interleave=True)`, then
    A* set on the DataProto by `apply_to_batch`, then verl's estimator."""
    n = 4
    prompts = len(GROUPS_OF_FOUR)
    data, response_mask, lengths = verl_batch(a_star_four, n=n)
    expected = [a_star_four[(g.uid, i)] for g in GROUPS_OF_FOUR for i in range(n)]
    last = lengths - 1
    assert data.batch["token_level_rewards"][torch.arange(prompts * n), last].tolist() == pytest.approx(expected, abs=TOL)

    for estimator in ESTIMATORS.values():
        advantages, returns = estimator(
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=response_mask.float(),
            index=data.non_tensor_batch["uid"],
            norm_adv_by_std_in_grpo=False,
        )
        _check(advantages, returns, response_mask.float(), expected)


def test_with_std_normalisation_a_star_is_not_preserved(a_star_four):
    """The reason for norm_adv_by_std_in_grpo=False: with it on, verl rescales A*."""
    uids, _, mask = _batch(GROUPS_OF_FOUR, shuffle=False)
    values = gagar_verl.advantages_for_batch(
        uids, a_star_four, indexes=[i for g in GROUPS_OF_FOUR for i in range(len(g.rewards))]
    )
    advantages, _ = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=gagar_verl.token_level_rewards(values, mask),
        response_mask=mask,
        index=np.array(uids, dtype=object),
        norm_adv_by_std_in_grpo=True,
    )
    per_sample = (advantages * mask).sum(-1) / mask.sum(-1)
    assert not torch.allclose(per_sample, torch.tensor(values, dtype=torch.float32), atol=1e-3)


def test_missing_rollout_is_named(a_star_four):
    uids = ["mixed-tiers@1"] * 5  # a fifth sample the export does not hold
    with pytest.raises(MissingAdvantage, match=r"\('mixed-tiers@1', 4\)"):
        gagar_verl.advantages_for_batch(uids, a_star_four, indexes=range(5))
    assert gagar_verl.advantages_for_batch(uids, a_star_four, indexes=range(5), missing="zero")[4] == 0.0
    with pytest.raises(ValueError, match="no sample indexes"):  # batch order is never the silent default
        gagar_verl.advantages_for_batch(uids, a_star_four, indexes=None)


def test_group_steps_builds_ingest_lines():
    groups = gagar_verl.group_steps(
        ["b", "a", "b", "a"], [1, 0, 0, 1], indexes=[0, 0, 1, 1], extra={"a": {"task": {"instance_id": "t-a"}}}
    )
    assert groups == [
        {"uid": "b", "task": {"instance_id": "b"}, "rollouts": [{"index": 0, "reward": 1.0}, {"index": 1, "reward": 0.0}]},
        {"uid": "a", "task": {"instance_id": "t-a"}, "rollouts": [{"index": 0, "reward": 0.0}, {"index": 1, "reward": 1.0}]},
    ]
