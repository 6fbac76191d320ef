"""Per-token advantages on verl's own tensors and loss (docs/method.md §9).

A multi-turn batch as verl's agent loop hands it over: a DataProto whose `response_mask`
(the response part of the attention mask, as `RayPPOTrainer`'s `compute_response_mask`
makes it, then with the tool-output tokens zeroed, as the agent loop masks them) keeps only
the model's own tokens. The `gagar` estimator puts A* on every
masked token; `token_advantages_batch` then weights each token by its message's turn weight.
verl's `agg_loss` (token-mean) over one sample's row must give A* back, and verl's
`compute_policy_loss_vanilla` over the batch must give the same loss as the plain broadcast,
to 1e-6 (verl computes in float32): the loss sees A* as the mean, only where it sits moved.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.trainers import require

pytestmark = pytest.mark.trainers

torch = require("torch")
verl = require("verl")
core_algos = require("verl.trainer.ppo.core_algos")
verl_config = require("verl.trainer.config")
actor_config = require("verl.workers.config.actor")

import gagar_client.adapters.verl_estimator  # noqa: E402,F401  (registers "gagar" with verl)
from gagar_client.token_weights import token_advantages, token_advantages_batch  # noqa: E402

TOL = 1e-6
PROMPT, RESPONSE = 4, 12
# Per sample: A*, the turn weights of its rollout, its response tokens' messages (-1: padding),
# and which of them are tool output (masked out). Sample 0 is the docs' shape: message 2 cited.
SAMPLES = [
    (0.638298, {"2": 0.5}, [1, 1, 1, 2, 2, 2, 2, 3, 3, 4, 4, -1], {3, 4}),
    (0.319149, {"1": 0.5, "3": 0.5}, [1, 1, 2, 2, 3, 3, 3, 3, 4, -1, -1, -1], {2}),
    (-0.5, {}, [1, 1, 1, 1, 2, 2, 3, 3, 3, -1, -1, -1], {4, 5}),
    (0.542553, {}, [1, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4, 4], set()),
    (0.4, {"1": 0.5}, [1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1], set()),  # every masked token in the cited turn
]


def _batch():
    generator = torch.Generator().manual_seed(7)
    n = len(SAMPLES)
    messages = torch.tensor([s[2] for s in SAMPLES])
    attention = torch.cat([torch.ones(n, PROMPT, dtype=torch.int64), (messages >= 0).to(torch.int64)], dim=1)
    data = verl.DataProto.from_dict(
        tensors={
            "input_ids": torch.randint(0, 50, (n, PROMPT + RESPONSE), generator=generator),
            "responses": torch.randint(0, 50, (n, RESPONSE), generator=generator),
            "attention_mask": attention,
            "gagar_token_messages": messages,
        },
        non_tensors={"uid": np.array([f"g{i}" for i in range(n)], dtype=object)},
    )
    # compute_response_mask (verl.trainer.ppo.ray_trainer, whose imports need ray): the response's attention
    mask = data.batch["attention_mask"][:, -data.batch["responses"].size(1) :].clone()
    for row, (_, _, _, tool) in enumerate(SAMPLES):
        mask[row, sorted(tool)] = 0
    data.batch["response_mask"] = mask
    return data


def _a_star_broadcast(data):
    """What the `gagar` estimator gives: A* on every masked token (verl's registry, our estimator)."""
    rewards = torch.zeros(len(SAMPLES), RESPONSE)
    rewards[:, -1] = torch.tensor([s[0] for s in SAMPLES])
    estimator = core_algos.get_adv_estimator_fn("gagar")
    advantages, _ = estimator(
        token_level_rewards=rewards,
        response_mask=data.batch["response_mask"].float(),
        config=verl_config.AlgoConfig(adv_estimator="gagar"),
        index=data.non_tensor_batch["uid"],
    )
    return advantages


def test_verl_sees_a_star_as_each_rows_token_mean():
    data = _batch()
    mask = data.batch["response_mask"]
    broadcast = _a_star_broadcast(data)
    a_star = torch.tensor([s[0] for s in SAMPLES])
    per_token = token_advantages_batch(a_star, [s[1] for s in SAMPLES], data.batch["gagar_token_messages"], mask)
    data.batch["advantages"] = per_token
    for row, (value, weights, messages, _) in enumerate(SAMPLES):
        one = core_algos.agg_loss(
            loss_mat=data.batch["advantages"][row : row + 1], loss_mask=mask[row : row + 1], loss_agg_mode="token-mean"
        )
        assert float(one) == pytest.approx(value, abs=TOL)
        # the batch form agrees with the one-rollout form on verl's mask
        assert per_token[row].tolist() == pytest.approx(token_advantages(value, weights, messages, mask[row].tolist()), abs=TOL)
        kept = mask[row].bool()
        assert torch.all(torch.sign(per_token[row][kept]) == np.sign(value))  # no sign change
        assert torch.all(per_token[row][~kept] == 0)  # padding and tool output get nothing
    # cited tokens carry half of what the rest of their rollout carries
    assert float(per_token[0, 5]) == pytest.approx(float(per_token[0, 0]) / 2, abs=TOL)
    # a rollout without cited turns trains exactly as before
    assert torch.equal(per_token[2], broadcast[2].to(per_token.dtype)) and torch.equal(
        per_token[3], broadcast[3].to(per_token.dtype)
    )
    assert torch.allclose(per_token[4], broadcast[4], atol=TOL)  # all masked tokens in one cited turn: A* again


def test_verl_policy_loss_equals_the_broadcast_loss():
    """ratio 1 (on-policy): verl's clipped loss is −token-mean(A); per row and over the batch the
    weighted advantages give the broadcast's value."""
    data = _batch()
    mask = data.batch["response_mask"]
    broadcast = _a_star_broadcast(data)
    per_token = token_advantages_batch(
        torch.tensor([s[0] for s in SAMPLES]), [s[1] for s in SAMPLES], data.batch["gagar_token_messages"], mask
    )
    log_prob = torch.randn(len(SAMPLES), RESPONSE, generator=torch.Generator().manual_seed(3))
    config = actor_config.ActorConfig(strategy="fsdp", rollout_n=1, ppo_micro_batch_size_per_gpu=1)
    losses = {}
    for name, advantages in (("broadcast", broadcast), ("per_token", per_token)):
        loss, _ = core_algos.compute_policy_loss_vanilla(
            old_log_prob=log_prob,
            log_prob=log_prob,
            advantages=advantages,
            response_mask=mask,
            loss_agg_mode="token-mean",
            config=config,
        )
        losses[name] = float(loss)
        rows = [
            float(
                core_algos.compute_policy_loss_vanilla(
                    old_log_prob=log_prob[r : r + 1],
                    log_prob=log_prob[r : r + 1],
                    advantages=advantages[r : r + 1],
                    response_mask=mask[r : r + 1],
                    loss_agg_mode="token-mean",
                    config=config,
                )[0]
            )
            for r in range(len(SAMPLES))
        ]
        assert rows == pytest.approx([-s[0] for s in SAMPLES], abs=TOL)
    assert losses["per_token"] == pytest.approx(losses["broadcast"], abs=TOL)
