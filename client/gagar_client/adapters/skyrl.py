"""SkyRL: a `gagar` advantage estimator in SkyRL's `AdvantageEstimatorRegistry` that *is* A*.

SkyRL stamps every trajectory where its group is made (`prepare_generator_input`:
`TrajectoryID(instance_id=uid, repetition_id=j)` for the j-th sample of a prompt), and the
generator hands the ids back with its output (`generator_output["trajectory_ids"]`). Gagar's
`(uid, index)` is that pair, so A* is looked up by it, never by the row's place in the batch::

    from gagar_client.adapters import skyrl as gagar_skyrl

    gagar_skyrl.register()                      # in the trainer's process, before fit()
    # cfg.trainer.algorithm.advantage_estimator = "gagar"; use_kl_in_reward=False;
    # advantage_batch_normalize=False (check_config refuses either, naming it)

    class GagarTrainer(RayPPOTrainer):
        def postprocess_generator_output(self, generator_output, uids, *args, **kwargs):
            ids = gagar_skyrl.sample_ids(generator_output)
            gagar.post_step(run, self.global_step, gagar_skyrl.groups_from_ids(ids, test_rewards))
            rows = gagar.wait_for_step(run, self.global_step)
            a_star = gagar.advantages(run, self.global_step, inputs_version=rows.inputs_version)
            gagar_skyrl.apply_to_generator_output(generator_output, a_star)
            return super().postprocess_generator_output(generator_output, uids, *args, **kwargs)

`apply_to_generator_output` sets each trajectory's response-level reward to its A*; SkyRL puts
it on the last response token, and the `gagar` estimator spreads it over the response mask:
no group mean is subtracted and nothing is scaled, so dynamic sampling, dropped trajectories
and groups of any size train on the A* the service returned for what was kept. SkyRL keeps a
group's rows together and n of them (its mini-batch boundaries assume it): a trajectory your
filter drops stays as a row with a zeroed loss mask (`mask_dropped`), posted with its reason.

Nothing here imports SkyRL or torch at import time; `register` imports SkyRL's registry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gagar_client.adapters import MissingAdvantage, groups_from_ids, lookup_advantages, setting

__all__ = [
    "NAME",
    "MissingAdvantage",
    "apply_to_generator_output",
    "check_config",
    "compute_gagar_advantage",
    "groups_from_ids",
    "mask_dropped",
    "register",
    "sample_ids",
]

NAME = "gagar"


def check_config(algorithm: Any) -> None:
    """Refuse SkyRL `trainer.algorithm` settings that would change A*, naming the setting."""
    if setting(algorithm, "use_kl_in_reward", False):
        raise ValueError(
            "trainer.algorithm.use_kl_in_reward=true adds a KL penalty to A* before the advantage is taken: "
            "set it to false (use_kl_loss keeps a KL term in the loss)"
        )
    if setting(algorithm, "advantage_batch_normalize", False):
        raise ValueError(
            "trainer.algorithm.advantage_batch_normalize=true whitens A* over the batch (token-weighted std): set it to false"
        )
    estimator = str(setting(algorithm, "advantage_estimator", NAME))
    if estimator == "grpo" and setting(algorithm, "grpo_norm_by_std", True):
        raise ValueError(
            "trainer.algorithm.grpo_norm_by_std=true divides A* by its group's std: set it to false, "
            "or use trainer.algorithm.advantage_estimator=gagar"
        )
    if estimator not in (NAME, "grpo"):
        raise ValueError(f"trainer.algorithm.advantage_estimator={estimator} does not give A* back: use gagar")


def compute_gagar_advantage(token_level_rewards: Any, response_mask: Any, index: Any = None, config: Any = None, **kwargs: Any):
    """SkyRL's estimator signature: `(advantages, returns)`, both A*_i on every response token of
    trajectory i (its reward, summed over its tokens) and 0 off the mask. `config` is the
    `trainer.algorithm` SkyRL hands every estimator, checked by `check_config`."""
    check_config(config)
    if tuple(token_level_rewards.shape) != tuple(response_mask.shape):
        raise ValueError(
            f"token_level_rewards {tuple(token_level_rewards.shape)} and response_mask "
            f"{tuple(response_mask.shape)} differ in shape"
        )
    advantages = token_level_rewards.sum(dim=-1, keepdim=True) * response_mask
    return advantages, advantages


def register(registry: Any = None) -> None:
    """Register `gagar` with SkyRL's `AdvantageEstimatorRegistry` (again is a no-op; a different
    function already under the name is refused)."""
    if registry is None:
        from skyrl.backends.skyrl_train.utils.ppo_utils import AdvantageEstimatorRegistry

        registry = AdvantageEstimatorRegistry
    if NAME in registry.list_available():
        if registry.get(NAME) is not compute_gagar_advantage:
            raise ValueError(f"SkyRL's AdvantageEstimatorRegistry already holds another {NAME!r} estimator")
        return
    registry.register(NAME, compute_gagar_advantage)


def sample_ids(generator_output: Mapping[str, Any]) -> list[tuple[str, int]]:
    """`(uid, index)` of every row: its `TrajectoryID`'s `(instance_id, repetition_id)`."""
    ids = generator_output.get("trajectory_ids")
    if ids is None:
        raise ValueError(
            "generator_output has no trajectory_ids: SkyRL's generator passes back the TrajectoryID "
            "each trajectory got in prepare_generator_input; a custom generator must too"
        )
    return [(str(t.instance_id), int(t.repetition_id)) for t in ids]


def mask_dropped(generator_output: dict, dropped: Mapping[tuple[str, int], str]) -> dict[tuple[str, int], str]:
    """Zero the loss mask of each trajectory `dropped` names (`{(uid, index): reason}`), as SkyRL's
    own filters do: SkyRL keeps every row of a group in the batch. Returns the drops it found,
    for `groups_from_ids(dropped=...)`; a key the batch does not hold is refused."""
    ids = sample_ids(generator_output)
    at = {key: row for row, key in enumerate(ids)}
    absent = [key for key in dropped if key not in at]
    if absent:
        raise KeyError(f"no trajectory {absent[0]!r} in generator_output to drop")
    for key in dropped:
        mask = generator_output["loss_masks"][at[key]]
        generator_output["loss_masks"][at[key]] = [0] * len(mask)
    return {key: dropped[key] for key in ids if key in dropped}


def apply_to_generator_output(generator_output: dict, advantages: Mapping[tuple, float], *, missing: str = "raise") -> dict:
    """Set `generator_output["rewards"]` to each trajectory's A* (response-level, one float per
    row), looked up by its `TrajectoryID`. Call it before SkyRL's `postprocess_generator_output`
    turns rewards into per-token rewards. Returns `generator_output`."""
    ids = sample_ids(generator_output)
    generator_output["rewards"] = lookup_advantages(advantages, [u for u, _ in ids], [i for _, i in ids], missing=missing)
    return generator_output
