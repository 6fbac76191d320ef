"""verl: A* per sample, looked up by the sample's own identity, never by its place in the batch.

Two paths, both keyed by `(uid, gagar_index)` carried in the batch's `non_tensor_batch`:

1. **The `gagar` estimator** (preferred): `import gagar_client.adapters.verl_estimator` in the
   process that runs verl's trainer registers it with verl's `register_adv_est`; select it
   with `algorithm.adv_estimator=gagar`. It *is* A*: the sample's outcome reward (A*, put on
   its last response token by `apply_to_batch`) spread over its response tokens, with no
   group mean subtracted and no std scaling, so reordering, filtering and any n survive.
2. A* as the reward with `algorithm.adv_estimator=grpo` and
   `algorithm.norm_adv_by_std_in_grpo=False`: verl subtracts the group mean, which is zero
   only while the group is whole. Kept for verl setups that cannot register an estimator.

Either way `algorithm.use_kl_in_reward` must be False (the KL penalty would be added to A*;
use `actor_rollout_ref.actor.use_kl_loss` instead): `check_config` refuses it by name.

Where it goes, in `RayPPOTrainer.fit` (or your copy of it)::

    batch = batch.repeat(repeat_times=n, interleave=True)
    gagar_verl.stamp_sample_ids(batch)          # once, before _balance_batch reorders
    ...                                         # generate, test, filter
    a_star = gagar.advantages(run, step, inputs_version=rows.inputs_version)
    gagar_verl.apply_to_batch(batch, a_star)    # before compute_advantage

`stamp_sample_ids` gives each sample its index within its group (`non_tensor_batch
["gagar_index"]`); `DataProto.reorder`, `select_idxs` and `union` carry it with the sample.
Post the step with `group_steps(..., indexes=...)` from the same ids; rollouts a filter
took out are posted with their reason (`dropped_between`) so the run's drop policy decides
what they do to their group (docs/method.md section 8).

Nothing here imports verl; `reward_tensor` and `apply_to_batch` need torch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gagar_client.adapters import (
    BATCH_ORDER,
    MissingAdvantage,
    check_zero_sum,
    dropped_ids,
    group_steps,
    lookup_advantages,
    rollout_indexes,
    setting,
)

__all__ = [
    "BATCH_ORDER",
    "INDEX_KEY",
    "MissingAdvantage",
    "advantages_for_batch",
    "apply_to_batch",
    "check_config",
    "dropped_between",
    "group_steps",
    "reward_tensor",
    "rollout_indexes",
    "sample_ids",
    "stamp_sample_ids",
    "token_level_rewards",
]

INDEX_KEY = "gagar_index"  # non_tensor_batch key of a sample's rollout index within its group


class SampleIdentityError(ValueError):
    """The batch cannot be stamped, or carries no stamp to look A* up by."""


def stamp_sample_ids(data: Any, *, uid_key: str = "uid", index_key: str = INDEX_KEY):
    """Stamp each sample's rollout index into `data.non_tensor_batch[index_key]`, once.

    Call it right after `batch.repeat(repeat_times=n, interleave=True)`: there a group's
    samples are next to each other in generation order, so sample j of a run of one uid is
    rollout j. A batch where a uid's samples are not one run (already reordered) or that is
    stamped already is refused, so a wrong identity is never made up. Returns `data`.
    """
    import numpy as np

    non_tensor = data.non_tensor_batch
    if uid_key not in non_tensor:
        raise SampleIdentityError(f"the batch has no non_tensor_batch[{uid_key!r}] (verl adds it before repeat)")
    if index_key in non_tensor:
        raise SampleIdentityError(
            f"the batch is stamped already (non_tensor_batch[{index_key!r}]): stamp once, right after repeat(interleave=True)"
        )
    uids = [str(u) for u in non_tensor[uid_key]]
    finished: set[str] = set()
    for before, uid in zip([None, *uids], uids):
        if uid != before:
            if uid in finished:
                raise SampleIdentityError(
                    f"uid {uid!r} is not one run of samples: the batch was reordered since "
                    "repeat(interleave=True); stamp before _balance_batch or any filter"
                )
            if before is not None:
                finished.add(before)
    non_tensor[index_key] = np.array(rollout_indexes(uids), dtype=np.int64)
    return data


def sample_ids(data: Any, *, uid_key: str = "uid", index_key: str = INDEX_KEY) -> list[tuple[str, int]]:
    """`(uid, index)` of every sample of a stamped batch, in its current order."""
    non_tensor = data.non_tensor_batch
    if index_key not in non_tensor:
        raise SampleIdentityError(
            f"the batch has no non_tensor_batch[{index_key!r}]: call stamp_sample_ids right after "
            f"repeat(interleave=True), or pass index_key={BATCH_ORDER!r} to count in batch order"
        )
    return [(str(u), int(i)) for u, i in zip(non_tensor[uid_key], non_tensor[index_key])]


def dropped_between(
    before: Any, after: Any, reason: str, *, uid_key: str = "uid", index_key: str = INDEX_KEY
) -> dict[tuple[str, int], str]:
    """`{(uid, index): reason}` for the samples of `before` that `after` no longer holds
    (a filter's input and output), for `group_steps(dropped=...)`."""
    return dropped_ids(
        sample_ids(before, uid_key=uid_key, index_key=index_key), sample_ids(after, uid_key=uid_key, index_key=index_key), reason
    )


def check_config(algorithm: Any) -> None:
    """Refuse verl `algorithm` settings that would change A*, naming the setting."""

    def get(name, default=None):
        return setting(algorithm, name, default)

    if get("use_kl_in_reward", False):
        raise ValueError(
            "algorithm.use_kl_in_reward=True adds a KL penalty to A* before the advantage is taken: "
            "set it to False (use actor_rollout_ref.actor.use_kl_loss for a KL term)"
        )
    estimator = str(getattr(get("adv_estimator", "gagar"), "value", get("adv_estimator", "gagar")))
    if estimator in ("grpo", "grpo_vectorized") and get("norm_adv_by_std_in_grpo", True):
        raise ValueError(
            "algorithm.norm_adv_by_std_in_grpo=True divides A* by its group's std: set it to False, "
            "or use algorithm.adv_estimator=gagar"
        )
    if estimator not in ("gagar", "grpo", "grpo_vectorized"):
        raise ValueError(
            f"algorithm.adv_estimator={estimator} does not give A* back: use gagar (or grpo with norm_adv_by_std_in_grpo=False)"
        )


def advantages_for_batch(
    uids: Sequence[Any], advantages: Mapping[tuple, float], *, indexes: Sequence[int] | str | None, missing: str = "raise"
) -> list[float]:
    """A* per sample of a batch, from its `uid` column (verl's `non_tensor_batch["uid"]`) and
    each sample's rollout index (`non_tensor_batch["gagar_index"]`, or `BATCH_ORDER`)."""
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


def reward_tensor(
    data: Any, advantages: Mapping[tuple, float], *, uid_key: str = "uid", index_key: str = INDEX_KEY, missing: str = "raise"
):
    """Token-level A* for a verl `DataProto`, looked up by `non_tensor_batch[uid_key]` and
    `non_tensor_batch[index_key]` (stamped by `stamp_sample_ids`); `index_key=BATCH_ORDER`
    counts indexes in batch order instead, and warns."""
    uids = list(data.non_tensor_batch[uid_key])
    if index_key == BATCH_ORDER:
        indexes: Sequence[int] | str = BATCH_ORDER
    else:
        indexes = [key[1] for key in sample_ids(data, uid_key=uid_key, index_key=index_key)]
    values = advantages_for_batch(uids, advantages, indexes=indexes, missing=missing)
    return token_level_rewards(values, _response_mask(data))


def apply_to_batch(data: Any, advantages: Mapping[tuple, float], *, algorithm: Any = None, **kwargs: Any):
    """Set `token_level_scores` and `token_level_rewards` of a verl `DataProto` to A*
    (no KL penalty in the reward: use `use_kl_loss` if you want KL). Returns `data`.

    With verl's `algorithm` config given it is checked (`check_config`), and on the fallback
    `grpo` path, which subtracts each group's mean, a group of the batch whose A* do not sum
    to zero (one that lost rollouts under the `mask` drop policy) is refused, naming it."""
    if algorithm is not None:
        check_config(algorithm)
        estimator = str(
            getattr(setting(algorithm, "adv_estimator", "gagar"), "value", setting(algorithm, "adv_estimator", "gagar"))
        )
        if estimator != "gagar":
            check_zero_sum(
                advantages,
                sample_ids(data, uid_key=kwargs.get("uid_key", "uid"), index_key=kwargs.get("index_key", INDEX_KEY)),
                setting=f"algorithm.adv_estimator={estimator}",
            )
    rewards = reward_tensor(data, advantages, **kwargs)
    data.batch["token_level_scores"] = rewards
    data.batch["token_level_rewards"] = rewards.clone()
    return data
