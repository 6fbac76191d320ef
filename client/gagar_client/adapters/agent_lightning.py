"""Agent Lightning (`agentlightning` 1.0.x): the `gagar` estimator through verl's own registry,
looked up by the rollout ids Agent Lightning stamps, never by a row's place in the batch.

Agent Lightning runs verl. `AgentLightningRayPPOTrainer._train_step` calls verl's
`compute_advantage` (`verl.trainer.ppo.ray_trainer`; with
`algorithm.enable_rollout_level_advantage` once per rollout, through Agent Lightning's
`compute_rollout_level_advantage`), and for any estimator but GAE and GRPO that looks the
estimator up in verl's `register_adv_est` registry. So `adapters.verl_estimator`'s `gagar`
(imported here) is reached as it is: `algorithm.adv_estimator=gagar`, no hook of its own.

Identity: Agent Lightning's rollout manager makes each group in `_create_rollouts`, one
`data_id` (a fresh uuid per prompt and step, which the trainer copies into `uid`) and n
`rollout_id`s for it. Every training row (one per LLM call with `trace_aggregator.level:
transition`, one or more per rollout with `trajectory`) carries both
(`non_tensor_batch["data_id_list"]`, `["rollout_id_list"]`). `stamping` numbers each prompt's
rollouts 0..n-1 there, where the group is made; `stamp_rows` writes that number into the batch
(`gagar_index`) from the row's rollout id, and `adapters.verl.apply_to_batch` sets A* by
`(uid, gagar_index)`. The trainer then drops rows (prompt too long, the floor to a multiple of
the mini-batch, rows of same-reward groups first), balances and shuffles: ids travel with rows.

Where it goes::

    import gagar_client.adapters.agent_lightning as gagar_agl   # registers "gagar" with verl

    class GagarTrainer(AgentLightningRayPPOTrainer):
        gagar_ids = gagar_agl.SampleIds()

        def _make_rollout_manager(self, manager_cls):
            return super()._make_rollout_manager(gagar_agl.stamping(manager_cls, self.gagar_ids))

        def _rollout(self, gen_batch, is_train):
            batch, metrics = super()._rollout(gen_batch, is_train)
            if is_train:
                groups = gagar_agl.groups(batch, self.gagar_ids,
                                          fillna=self.config.agentlightning.reward_fillna_value)
                gagar.post_step(run, self.global_steps, groups)
                rows = gagar.wait_for_step(run, self.global_steps)
                a_star = gagar.advantages(run, self.global_steps, inputs_version=rows.inputs_version)
                gagar_agl.apply_to_batch(batch, a_star, self.gagar_ids, config=self.config)
            return batch, metrics

Why not A* as the reward with `grpo`: rows are LLM calls, so verl's group mean counts a rollout
once per call; the trainer drops rows before the advantage, so groups lose members; and
Agent Lightning puts rewards into `token_level_scores` as bfloat16 (A* to three digits).
`apply_to_batch` writes float32 A* itself and `check_config` refuses every estimator but `gagar`.

Rollouts that reach no training row are posted as dropped, so the run's drop policy decides
what they do to their group: `no_trace` (no LLM call recorded: Agent Lightning skips them) and
`prompt_too_long` (every row marked `is_drop_mask`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import gagar_client.adapters.verl_estimator  # noqa: F401  (registers "gagar" with verl's registry)
from gagar_client.adapters import MissingAdvantage, groups_from_ids, setting
from gagar_client.adapters import verl as gagar_verl
from gagar_client.adapters.verl import INDEX_KEY, SampleIdentityError

__all__ = [
    "INDEX_KEY",
    "MissingAdvantage",
    "SampleIdentityError",
    "SampleIds",
    "apply_to_batch",
    "check_config",
    "groups",
    "stamp_rows",
    "stamping",
]

NO_TRACE, PROMPT_TOO_LONG = "no_trace", "prompt_too_long"


class SampleIds:
    """`rollout_id -> (data_id, index)` for the rollouts of one trainer process, stamped where
    Agent Lightning makes each group, and each finished rollout's reward."""

    def __init__(self) -> None:
        self._ids: dict[str, tuple[str, int]] = {}
        self._rollouts: dict[str, list[str]] = {}  # data_id -> its rollout ids, in creation order
        self._rewards: dict[str, float | None] = {}
        self._classes: dict[type, type] = {}

    def stamp(self, enqueued: Iterable[Any]) -> None:
        """Number the rollouts of each `data_id` 0, 1, ... in the order `_create_rollouts` made
        them (`EnqueuedRollout`s, n per prompt). A group is made once: a data_id or rollout id
        stamped before is refused."""
        made: dict[str, list[str]] = {}
        for rollout in enqueued:
            data_id, rollout_id = str(rollout.data_id), str(rollout.rollout_id)
            if rollout_id in self._ids or rollout_id in made.get(data_id, ()):
                raise SampleIdentityError(f"rollout {rollout_id!r} is stamped already: stamp where the group is made")
            if data_id in self._rollouts:
                raise SampleIdentityError(f"data_id {data_id!r} is stamped already: its group was made before")
            made.setdefault(data_id, []).append(rollout_id)
        for data_id, rollout_ids in made.items():
            self._rollouts[data_id] = rollout_ids
            self._ids.update({rollout_id: (data_id, index) for index, rollout_id in enumerate(rollout_ids)})

    def record(self, completed: Any) -> None:
        """Keep a finished rollout's reward (`CompletedRollout.final_reward`, None when it gave none)."""
        if str(completed.rollout_id) not in self._ids:
            raise SampleIdentityError(
                f"rollout {completed.rollout_id!r} was not stamped: make the rollout manager with stamping(manager_cls, ids)"
            )
        self._rewards[str(completed.rollout_id)] = completed.final_reward

    def of(self, rollout_id: Any) -> tuple[str, int]:
        """`(data_id, index)` of a stamped rollout."""
        try:
            return self._ids[str(rollout_id)]
        except KeyError:
            raise SampleIdentityError(
                f"rollout {rollout_id!r} was not stamped: make the rollout manager with stamping(manager_cls, ids)"
            ) from None

    def group(self, data_id: str) -> list[str]:
        """The rollout ids of `data_id`'s group, index order."""
        return list(self._rollouts[str(data_id)])

    def reward(self, rollout_id: str, fillna: float) -> float:
        if rollout_id not in self._rewards:
            raise SampleIdentityError(f"rollout {rollout_id!r} has not finished (no CompletedRollout recorded)")
        value = self._rewards[rollout_id]
        return float(fillna if value is None else value)


def stamping(manager_cls: type, ids: SampleIds) -> type:
    """A subclass of Agent Lightning's rollout manager class (`AglRolloutManager`,
    `AglAsyncRolloutManager`) that stamps `ids` where it makes the groups (`_create_rollouts`)
    and records each finished rollout's reward (`_build_completed_rollout`)."""
    if manager_cls in ids._classes:
        return ids._classes[manager_cls]

    class Stamping(manager_cls):
        def _create_rollouts(self, data, *, is_train):
            enqueued = super()._create_rollouts(data, is_train=is_train)
            if is_train:
                ids.stamp(enqueued)
            return enqueued

        def _build_completed_rollout(self, enqueued_rollout, rollout):
            completed = super()._build_completed_rollout(enqueued_rollout, rollout)
            if str(completed.rollout_id) in ids._ids:  # training rollouts only
                ids.record(completed)
            return completed

    Stamping.__name__ = Stamping.__qualname__ = f"Gagar{manager_cls.__name__}"
    ids._classes[manager_cls] = Stamping
    return Stamping


def stamp_rows(batch: Any, ids: SampleIds) -> Any:
    """Write each row's `uid` (its data_id) and `gagar_index` (its rollout's index) into
    `batch.non_tensor_batch`, from the row's rollout id. Returns `batch`."""
    import numpy as np

    non_tensor = batch.non_tensor_batch
    for key in ("data_id_list", "rollout_id_list"):
        if key not in non_tensor:
            raise SampleIdentityError(
                f"the batch has no non_tensor_batch[{key!r}]: Agent Lightning's RolloutAdapter puts it on every training row"
            )
    keys = [ids.of(rollout_id) for rollout_id in non_tensor["rollout_id_list"]]
    for row, ((data_id, _), row_data_id) in enumerate(zip(keys, non_tensor["data_id_list"])):
        if data_id != str(row_data_id):
            raise SampleIdentityError(
                f"row {row}: rollout {non_tensor['rollout_id_list'][row]!r} was stamped for "
                f"data_id {data_id!r}, the row says {row_data_id!r}"
            )
    non_tensor["uid"] = np.array([data_id for data_id, _ in keys], dtype=object)
    non_tensor[INDEX_KEY] = np.array([index for _, index in keys], dtype=np.int64)
    return batch


def groups(
    batch: Any, ids: SampleIds, *, fillna: float = 0.0, extra: Mapping[Any, Mapping[str, Any]] | None = None
) -> list[dict]:
    """`gagar-group/1` groups of the prompts `batch` holds rows of: every rollout of each
    prompt's group, with its reward (`fillna`, Agent Lightning's `reward_fillna_value`, when it
    gave none), those that reach no training row marked dropped (`no_trace`, `prompt_too_long`)."""
    stamp_rows(batch, ids)
    rollout_ids = [str(r) for r in batch.non_tensor_batch["rollout_id_list"]]
    is_drop = batch.batch["is_drop_mask"].tolist() if "is_drop_mask" in batch.batch.keys() else [False] * len(rollout_ids)
    trained: dict[str, bool] = {}
    for rollout_id, drop in zip(rollout_ids, is_drop):
        trained[rollout_id] = trained.get(rollout_id, False) or not drop
    keys, rewards, dropped = [], [], {}
    for data_id in dict.fromkeys(str(d) for d in batch.non_tensor_batch["uid"]):
        for index, rollout_id in enumerate(ids.group(data_id)):
            keys.append((data_id, index))
            rewards.append(ids.reward(rollout_id, fillna))
            if rollout_id not in trained:
                dropped[(data_id, index)] = NO_TRACE
            elif not trained[rollout_id]:
                dropped[(data_id, index)] = PROMPT_TOO_LONG
    return groups_from_ids(keys, rewards, dropped=dropped, extra=extra)


def check_config(config: Any) -> None:
    """Refuse Agent Lightning trainer settings (its verl config) that would change A*, naming each."""
    algorithm = setting(config, "algorithm")
    estimator = setting(algorithm, "adv_estimator", "gagar")
    estimator = str(getattr(estimator, "value", estimator))
    if estimator != "gagar":
        raise ValueError(
            f"algorithm.adv_estimator={estimator}: under Agent Lightning rows are LLM calls, so a group "
            "mean counts a rollout once per call, and the trainer drops rows before the advantage: use "
            "algorithm.adv_estimator=gagar"
        )
    gagar_verl.check_config(algorithm)  # algorithm.use_kl_in_reward


def apply_to_batch(
    batch: Any, advantages: Mapping[tuple, float], ids: SampleIds, *, config: Any = None, missing: str = "raise"
) -> Any:
    """Set every row's `token_level_scores` (float32) to its rollout's A*, looked up by its
    stamped `(uid, gagar_index)`, before the trainer takes the advantage. With the trainer's
    `config` given it is checked (`check_config`). Returns `batch`."""
    if config is not None:
        check_config(config)
    stamp_rows(batch, ids)
    return gagar_verl.apply_to_batch(batch, advantages, missing=missing)
