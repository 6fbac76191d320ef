"""AReaL: A* as each trajectory's reward, which `PPOActor.compute_advantages` gives back unchanged
when its shaping is off (no critic, discount 1, GAE lambda 1, no KL in the reward, no reward or
advantage normalisation): the advantage of every loss-mask token is then the reward itself.

AReaL's batches are dicts of tensors, so a sample's `(uid, index)` rides in two int64 columns,
`gagar_uid` (a code of `SampleIds`) and `gagar_index`, stamped where the group is made. AReaL's
`GroupedRolloutWorkflow` runs `group_size` episodes and silently drops those that return None, so
the stamp goes on each episode's result before that: `run_group` does what it does, stamping
rollout j of the group with j and naming the ones that returned nothing::

    from gagar_client.adapters import areal as gagar_areal

    ids = gagar_areal.SampleIds()
    batch, dropped = await gagar_areal.run_group(workflow, engine, data, group_size=n, uid=data["gagar_uid"],
                                                 ids=ids, concat=concat_padded_tensors)
    ...                                                  # the step's batch: groups concatenated, filtered
    gagar.post_step(run, step, gagar_areal.groups_from_ids(ids.of(batch), batch["rewards"].tolist(), dropped=dropped))
    a_star = gagar.advantages(run, step, inputs_version=gagar.wait_for_step(run, step).inputs_version)
    gagar_areal.check_config(actor.config)
    gagar_areal.apply_to_batch(batch, a_star, ids, actor=actor.config)   # then actor.compute_advantages(batch)

Nothing here imports AReaL; `SampleIds.stamp` and `apply_to_batch` need torch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from gagar_client.adapters import MissingAdvantage, groups_from_ids, lookup_advantages, setting

__all__ = ["MissingAdvantage", "SampleIds", "apply_to_batch", "check_config", "groups_from_ids", "run_group"]

UID_KEY, INDEX_KEY = "gagar_uid", "gagar_index"


class SampleIds:
    """Gagar uids as int codes, so `(uid, index)` can ride in AReaL's tensor dicts. One table per
    trainer process: the one that makes groups and looks A* up."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._uids: list[str] = []

    def code(self, uid: str) -> int:
        uid = str(uid)
        if uid not in self._codes:
            self._codes[uid] = len(self._uids)
            self._uids.append(uid)
        return self._codes[uid]

    def stamp(self, episode: dict, uid: str, index: int) -> dict:
        """Stamp one episode's result (a tensor dict, batch dimension first) as rollout `index` of `uid`."""
        import torch

        rows = int(episode["attention_mask"].shape[0])
        if rows != 1:
            raise ValueError(f"an episode to stamp holds one trajectory, this one {rows}")
        if UID_KEY in episode or INDEX_KEY in episode:
            raise ValueError(f"the episode is stamped already ({UID_KEY}, {INDEX_KEY}): stamp once, where the group is made")
        episode[UID_KEY] = torch.tensor([self.code(uid)], dtype=torch.int64)
        episode[INDEX_KEY] = torch.tensor([int(index)], dtype=torch.int64)
        return episode

    def of(self, batch: Any) -> list[tuple[str, int]]:
        """`(uid, index)` of every trajectory of `batch`, in its current order: a list of
        per-trajectory dicts (what `PPOActor.compute_advantages` takes) or one batched dict."""
        parts = batch if isinstance(batch, list) else [batch]
        out = []
        for part in parts:
            if UID_KEY not in part or INDEX_KEY not in part:
                raise ValueError(
                    f"a trajectory has no {UID_KEY}/{INDEX_KEY}: make its group with run_group "
                    "(or SampleIds.stamp each episode where the group is made)"
                )
            out += [(self._uids[int(code)], int(index)) for code, index in zip(part[UID_KEY].tolist(), part[INDEX_KEY].tolist())]
        return out


async def run_group(
    workflow: Any,
    engine: Any,
    data: Mapping[str, Any],
    *,
    group_size: int,
    uid: str,
    ids: SampleIds,
    concat: Callable[[list], dict],
    reason: str = "error",
) -> tuple[dict | None, dict[tuple[str, int], str]]:
    """Run `group_size` episodes of `workflow` on `data` (as AReaL's `GroupedRolloutWorkflow` does),
    stamp episode j's result with `(uid, j)` and concatenate the results with AReaL's
    `concat_padded_tensors` (`concat`). Returns the group's batch (None if no episode returned
    one) and `{(uid, j): reason}` for the episodes that returned None."""
    results = await asyncio.gather(*[workflow.arun_episode(engine, data) for _ in range(group_size)])
    kept, dropped = [], {}
    for index, result in enumerate(results):
        if result is None:
            dropped[(str(uid), index)] = reason
        else:
            kept.append(ids.stamp(result, uid, index))
    return (concat(kept) if kept else None), dropped


def check_config(actor: Any) -> None:
    """Refuse AReaL `actor` (PPOActorConfig) settings that would change A*, naming the setting."""
    refusals = [
        (
            setting(actor, "kl_ctl", 0.1) != 0,
            "actor.kl_ctl={} puts a KL penalty into the reward: set it to 0 (a KL term belongs in the loss)",
            "kl_ctl",
        ),
        (
            setting(actor, "reward_norm") is not None,
            "actor.reward_norm normalises the reward (group or batch mean and std): set it to null",
            None,
        ),
        (
            setting(actor, "adv_norm") is not None,
            "actor.adv_norm normalises the advantages over tokens (token-weighted mean and std): set it to null",
            None,
        ),
        (setting(actor, "reward_bias", 0.0) != 0, "actor.reward_bias={} shifts A*: set it to 0", "reward_bias"),
        (setting(actor, "reward_scaling", 1.0) != 1, "actor.reward_scaling={} scales A*: set it to 1", "reward_scaling"),
        (setting(actor, "discount", 1.0) != 1, "actor.discount={} discounts A* along the response: set it to 1", "discount"),
        (setting(actor, "gae_lambda", 1.0) != 1, "actor.gae_lambda={} mixes in the value baseline: set it to 1", "gae_lambda"),
        (
            bool(setting(actor, "overlong_reward_penalty", False)),
            "actor.overlong_reward_penalty=true adds a length "
            "penalty to A*: set it to false (post an overlong rollout as dropped instead)",
            None,
        ),
        (
            bool(setting(actor, "mask_no_eos_with_zero", False)),
            "actor.mask_no_eos_with_zero=true zeroes the A* of "
            "truncated trajectories: set it to false (post them as dropped instead)",
            None,
        ),
    ]
    for refused, message, name in refusals:
        if refused:
            raise ValueError(message.format(setting(actor, name)) if name else message)


def apply_to_batch(
    batch: Any, advantages: Mapping[tuple, float], ids: SampleIds, *, actor: Any = None, missing: str = "raise"
) -> Any:
    """Set each trajectory's `rewards` to its A*, looked up by its stamped `(uid, index)`, in a list
    of per-trajectory dicts or one batched dict. With `actor` (the PPOActorConfig) given, A* beyond
    its `reward_clip` is refused. Returns `batch`."""
    import torch

    keys = ids.of(batch)
    values = lookup_advantages(advantages, [u for u, _ in keys], [i for _, i in keys], missing=missing)
    clip = setting(actor, "reward_clip") if actor is not None else None
    if clip is not None and values and max(abs(v) for v in values) > clip:
        raise ValueError(f"actor.reward_clip={clip} would clip A* (largest |A*| {max(abs(v) for v in values):.4f}): raise it")
    at = 0
    for part in batch if isinstance(batch, list) else [batch]:
        if "values" in part:
            raise ValueError("the batch carries critic values: AReaL's GAE would subtract them from A*; train without a critic")
        rows = int(part[INDEX_KEY].shape[0])
        dtype = part["rewards"].dtype if "rewards" in part else torch.float32
        part["rewards"] = torch.tensor(values[at : at + rows], dtype=dtype)
        at += rows
    return batch
