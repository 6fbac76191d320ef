"""verl: A* as the outcome reward, so verl's GRPO advantage gives A* back.

Configure verl with::

    algorithm.adv_estimator=grpo            # or grpo_vectorized
    algorithm.norm_adv_by_std_in_grpo=False

verl then computes, per sample, `score_i - mean(score of the samples with the same uid)`
where score_i is the sum of the sample's token-level rewards. Putting A*_i (which sums to
zero over a group) on the sample's last response token makes that A*_i itself.

Where it goes: after the rollouts of a step are generated and their tests run, post the
step to Gagar (uid = the batch's `uid`, index = the sample's position in its group, as
`rollout_indexes` counts it), wait for it, and replace the batch's rewards before
`compute_advantage`::

    from gagar_client.adapters import verl as gagar_verl

    rows = gagar.wait_for_step(run, step)
    a_star = gagar.advantages(run, step, inputs_version=rows.inputs_version)
    gagar_verl.apply_to_batch(batch, a_star)   # token_level_scores / token_level_rewards

Nothing here imports verl; `reward_tensor` and `apply_to_batch` need torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gagar_client.adapters import MissingAdvantage, lookup_advantages, rollout_indexes

__all__ = [
    "MissingAdvantage", "advantages_for_batch", "apply_to_batch", "group_steps", "reward_tensor", "rollout_indexes",
    "token_level_rewards",
]


def advantages_for_batch(uids: Sequence[Any], advantages: Mapping[tuple, float], *,
                         indexes: Sequence[int] | None = None, missing: str = "raise") -> list[float]:
    """A* per sample of a batch, from its `uid` column (verl's `non_tensor_batch["uid"]`).

    `indexes`: each sample's rollout index; by default its occurrence number within its uid
    (verl repeats a prompt's samples next to each other, in generation order).
    """
    return lookup_advantages(advantages, list(uids), indexes, missing=missing)


def token_level_rewards(values: Sequence[float], response_mask: Any):
    """A (batch, response_length) float32 tensor with each value on its sample's last valid
    response token, as verl's reward managers place an outcome reward."""
    import torch

    mask = torch.as_tensor(response_mask)
    if mask.dim() != 2 or mask.shape[0] != len(values):
        raise ValueError(f"response_mask must be (batch={len(values)}, length), got {tuple(mask.shape)}")
    out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    lengths = mask.to(torch.long).sum(dim=-1)
    last = (lengths - 1).clamp(min=0)
    rows = torch.arange(mask.shape[0], device=mask.device)
    out[rows, last] = torch.as_tensor(values, dtype=torch.float32, device=mask.device)
    return out


def _response_mask(data: Any):
    batch = data.batch
    if "response_mask" in batch.keys():
        return batch["response_mask"]
    response_length = batch["responses"].shape[-1]
    return batch["attention_mask"][:, -response_length:]


def reward_tensor(data: Any, advantages: Mapping[tuple, float], *, uid_key: str = "uid",
                  index_key: str | None = None, missing: str = "raise"):
    """Token-level A* for a verl `DataProto` (uses `non_tensor_batch[uid_key]` and, when
    given, `non_tensor_batch[index_key]` as rollout indexes)."""
    uids = list(data.non_tensor_batch[uid_key])
    indexes = list(data.non_tensor_batch[index_key]) if index_key else None
    values = advantages_for_batch(uids, advantages, indexes=indexes, missing=missing)
    return token_level_rewards(values, _response_mask(data))


def apply_to_batch(data: Any, advantages: Mapping[tuple, float], **kwargs: Any):
    """Set `token_level_scores` and `token_level_rewards` of a verl `DataProto` to A*
    (no KL penalty in the reward: use `use_kl_loss` if you want KL). Returns `data`."""
    rewards = reward_tensor(data, advantages, **kwargs)
    data.batch["token_level_scores"] = rewards
    data.batch["token_level_rewards"] = rewards.clone()
    return data


def group_steps(uids: Sequence[Any], rewards: Sequence[float], *, indexes: Sequence[int] | None = None,
                extra: Mapping[Any, Mapping[str, Any]] | None = None) -> list[dict]:
    """`gagar-group/1` group dicts (without run/step: `Client.post_step` adds them) from a
    batch's uids and binary test rewards. `extra[uid]` adds fields to a group (its `task`,
    at least `{"instance_id": ...}`; default: the uid), `extra[(uid, index)]` to a rollout
    (`patch`, `messages`, ...)."""
    uids = [str(u) for u in uids]
    indexes = rollout_indexes(uids) if indexes is None else [int(i) for i in indexes]
    extra = extra or {}
    groups: dict[str, dict] = {}
    for uid, index, reward in zip(uids, indexes, rewards):
        group = groups.get(uid)
        if group is None:
            group = {"uid": uid, "task": {"instance_id": uid}, "rollouts": []}
            group.update(extra.get(uid, {}))
            groups[uid] = group
        rollout = {"index": index, "reward": float(reward)}
        rollout.update(extra.get((uid, index), {}))
        group["rollouts"].append(rollout)
    return list(groups.values())
