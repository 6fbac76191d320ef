"""verl's own code on A* the live service returns: the `gagar` estimator, a batch that verl's
`_balance_batch` reordering permutes, and groups a filter left partial.

The batch is built as `RayPPOTrainer.fit` builds it: one uuid per prompt, `repeat(n,
interleave=True)`, the sample ids stamped right after, responses of different lengths. It is
then reordered the way `_balance_batch` reorders it (verl's `calculate_workload` and
`get_seqlen_balanced_partitions`, then `DataProto.reorder`), two rows are filtered out with
`select_idxs` (a timed-out failure, masked by the run's default policy, and an overlong pass
that the policy recomputes without), the step is posted to a live Gagar server with the drops
named, graded, and pulled back. verl's registry gives the `gagar` estimator for
`algorithm.adv_estimator=gagar` and every kept row trains on the service's A* to 1e-6.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from tests.helpers.trainers import STEP_PROMPTS, N, grade_step, require

pytestmark = [pytest.mark.trainers, pytest.mark.django_db(transaction=True)]

torch = require("torch")
verl = require("verl")
core_algos = require("verl.trainer.ppo.core_algos")
seqlen_balancing = require("verl.utils.seqlen_balancing")
verl_config = require("verl.trainer.config")

import gagar_client.adapters.verl_estimator  # noqa: E402  (registers "gagar" with verl)
from gagar_client.adapters import BATCH_ORDER, BatchOrderWarning  # noqa: E402
from gagar_client.adapters import verl as gagar_verl  # noqa: E402
from gagar_client.adapters.verl import SampleIdentityError  # noqa: E402

TOL = 1e-6  # verl computes in float32


def _fit_batch(seed: int = 0):
    """What fit() holds after repeat + union: uids, stamped ids, responses and masks."""
    generator = torch.Generator().manual_seed(seed)
    prompts, prompt_length, response_length = len(STEP_PROMPTS), 3, 9
    batch = verl.DataProto.from_dict(
        tensors={"input_ids": torch.randint(0, 50, (prompts, prompt_length), generator=generator)},
        non_tensors={"uid": np.array([str(uuid.UUID(int=seed * 100 + p)) for p in range(prompts)], dtype=object)},
    )
    batch = batch.repeat(repeat_times=N, interleave=True)
    gagar_verl.stamp_sample_ids(batch)
    lengths = torch.randint(1, response_length + 1, (prompts * N,), generator=generator)
    response_mask = (torch.arange(response_length)[None, :] < lengths[:, None]).to(torch.int64)
    batch.batch["responses"] = torch.randint(0, 50, (prompts * N, response_length), generator=generator)
    batch.batch["attention_mask"] = torch.cat([torch.ones(prompts * N, prompt_length, dtype=torch.int64), response_mask], 1)
    batch.batch["response_mask"] = response_mask
    rewards = [STEP_PROMPTS[p][0][i] for p in range(prompts) for i in range(N)]
    batch.non_tensor_batch["test_reward"] = np.array(rewards, dtype=np.float64)
    return batch


def _balance(batch, dp_size: int = 2):
    """The reordering of RayPPOTrainer._balance_batch (default branch), with verl's own helpers."""
    seqlen = batch.batch["attention_mask"].view(len(batch), -1).sum(-1)
    workload = seqlen_balancing.calculate_workload(seqlen)
    partitions = seqlen_balancing.get_seqlen_balanced_partitions(workload, k_partitions=dp_size, equal_size=True)
    for at, partition in enumerate(partitions):
        partition.sort(key=lambda x: (workload[x], x))
        partitions[at] = partition[::2] + partition[1::2][::-1]
    order = torch.tensor([j for partition in partitions for j in partition])
    batch.reorder(order)
    return order


def test_a_balanced_filtered_batch_trains_on_the_services_a_star(gagar):
    gagar.create_run("verl-gagar", auto_grade="none", drop_policy={"overlong": "recompute"})
    batch = _fit_batch()
    stamped = gagar_verl.sample_ids(batch)
    order = _balance(batch)
    assert order.tolist() != sorted(order.tolist()), "verl's balancing permuted this batch"
    assert gagar_verl.sample_ids(batch) == [stamped[i] for i in order.tolist()]  # ids travel with their samples

    # A filter takes two rows out: a timed-out failure of prompt 0, an overlong pass of prompt 1.
    by_id = {key: row for row, key in enumerate(gagar_verl.sample_ids(batch))}
    prompt_uid = {p: str(uuid.UUID(int=p)) for p in range(len(STEP_PROMPTS))}
    timeout_row, overlong_row = by_id[(prompt_uid[0], 3)], by_id[(prompt_uid[1], 2)]
    kept = batch.select_idxs([row not in (timeout_row, overlong_row) for row in range(len(batch))])
    dropped = {
        **gagar_verl.dropped_between(batch.select_idxs([timeout_row]), kept, "timeout"),
        **gagar_verl.dropped_between(batch.select_idxs([overlong_row]), kept, "overlong"),
    }
    assert dropped == {(prompt_uid[0], 3): "timeout", (prompt_uid[1], 2): "overlong"}

    # Post what was generated, with the drops named; grade; pull A* back.
    ids = gagar_verl.sample_ids(batch)
    groups = gagar_verl.group_steps(
        [u for u, _ in ids], batch.non_tensor_batch["test_reward"].tolist(), indexes=[i for _, i in ids], dropped=dropped
    )
    gagar.post_step("verl-gagar", 1, groups)
    grade_step(1)
    rows = gagar.wait_for_step("verl-gagar", 1, timeout=60)
    a_star = gagar.advantages("verl-gagar", 1, inputs_version=rows.inputs_version)
    by_key = {(row["uid"], row["index"]): row for row in rows}
    assert by_key[(prompt_uid[0], 3)]["drop_mode"] == "mask"
    assert by_key[(prompt_uid[1], 2)]["status"] == "dropped"

    # verl's fallback, grpo without std, subtracts each group's mean: prompt 0 lost a rollout
    # the run masks, so its kept A* do not sum to zero and the batch is refused, naming it.
    fallback = verl_config.AlgoConfig(adv_estimator="grpo", norm_adv_by_std_in_grpo=False)
    with pytest.raises(ValueError, match=rf"adv_estimator=grpo subtracts .*'{prompt_uid[0]}' sums to"):
        gagar_verl.apply_to_batch(kept, a_star, algorithm=fallback)

    # verl: the estimator its registry gives for algorithm.adv_estimator=gagar.
    config = verl_config.AlgoConfig(adv_estimator="gagar")
    gagar_verl.apply_to_batch(kept, a_star, algorithm=config)
    estimator = core_algos.get_adv_estimator_fn(config.adv_estimator)
    assert estimator is gagar_client.adapters.verl_estimator.compute_gagar_advantage
    advantages, returns = estimator(
        token_level_rewards=kept.batch["token_level_rewards"],
        response_mask=kept.batch["response_mask"],
        config=config,
        index=kept.non_tensor_batch["uid"],
    )
    mask = kept.batch["response_mask"].float()
    expected = torch.tensor([a_star[key] for key in gagar_verl.sample_ids(kept)])
    assert torch.allclose(advantages, expected[:, None] * mask, atol=TOL, rtol=0)
    assert torch.equal(advantages, returns)

    # The service's numbers for what was kept, worked out here with the method module:
    # prompt 0 masks its timed-out failure (full group), prompt 1 is recomputed without its pass.
    from grading.method.advantage import redistribute_group

    full0 = redistribute_group([1, 1, 0, 0], tiers=["T1", "T3", None, None], ranks=[1, 2, None, None])
    kept1 = redistribute_group([1, 0, 1], tiers=["T2", None, "T3"], ranks=[2, None, 3])
    for index in range(4):
        assert a_star[(prompt_uid[0], index)] == pytest.approx(float(full0.redistributed_advantage[index]), abs=1e-9)
    for index, value in zip((0, 1, 3), kept1.redistributed_advantage.tolist()):
        assert a_star[(prompt_uid[1], index)] == pytest.approx(value, abs=1e-9)
    assert a_star[(prompt_uid[1], 2)] == 0.0

    # Had the lookup counted indexes in batch order, it would be wrong here, and it says so.
    with pytest.warns(BatchOrderWarning):
        by_order = gagar_verl.advantages_for_batch(kept.non_tensor_batch["uid"], a_star, indexes=BATCH_ORDER, missing="zero")
    assert by_order != pytest.approx(expected.tolist(), abs=1e-3)


def test_stamp_once_and_only_in_repeat_order():
    batch = _fit_batch()
    with pytest.raises(SampleIdentityError, match="stamped already"):
        gagar_verl.stamp_sample_ids(batch)
    batch.non_tensor_batch.pop("gagar_index")
    _balance(batch)
    with pytest.raises(SampleIdentityError, match="reordered since repeat"):
        gagar_verl.stamp_sample_ids(batch)
    with pytest.raises(SampleIdentityError, match="stamp_sample_ids"):
        gagar_verl.apply_to_batch(batch, {})


@pytest.mark.parametrize(
    "settings, named",
    [
        ({"adv_estimator": "gagar", "use_kl_in_reward": True}, "algorithm.use_kl_in_reward"),
        ({"adv_estimator": "grpo", "norm_adv_by_std_in_grpo": True}, "algorithm.norm_adv_by_std_in_grpo"),
        ({"adv_estimator": "rloo"}, "algorithm.adv_estimator=rloo"),
    ],
)
def test_settings_that_change_a_star_are_refused_by_name(settings, named):
    config = verl_config.AlgoConfig(**settings)
    with pytest.raises(ValueError, match=named):
        gagar_verl.check_config(config)
    if settings["adv_estimator"] == "gagar":  # the estimator checks the config verl hands it
        mask = torch.ones(2, 3)
        with pytest.raises(ValueError, match=named):
            core_algos.get_adv_estimator_fn("gagar")(token_level_rewards=mask, response_mask=mask, config=config)
