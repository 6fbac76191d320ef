"""The `gagar` advantage estimator, registered with verl's own `register_adv_est`.

Import this module in the process that runs verl's trainer (the one calling
`compute_advantage`; with `main_ppo`, the task runner: import it from the module that
defines your reward function or trainer), then select it::

    algorithm.adv_estimator=gagar
    algorithm.use_kl_in_reward=False

The estimator *is* A*: each sample's outcome reward, which `adapters.verl.apply_to_batch`
set to the sample's A* (looked up by its stamped `(uid, gagar_index)`), spread over its
response tokens. No group mean is subtracted and nothing is scaled, so a batch that
`_balance_batch` reordered, a group a filter left partial and groups of any size all train
on the A* the service returned for them.
"""

from __future__ import annotations

from typing import Any

from verl.trainer.ppo.core_algos import register_adv_est

from gagar_client.adapters.verl import check_config

NAME = "gagar"

__all__ = ["NAME", "compute_gagar_advantage"]


@register_adv_est(NAME)
def compute_gagar_advantage(token_level_rewards: Any, response_mask: Any, config: Any = None, index: Any = None, **kwargs: Any):
    """verl's estimator signature: `(advantages, returns)`, both A*_i on every response token of
    sample i and 0 on padding. `config` is verl's `algorithm` config, checked by `check_config`."""
    check_config(config)
    if token_level_rewards.shape != response_mask.shape:
        raise ValueError(
            f"token_level_rewards {tuple(token_level_rewards.shape)} and response_mask "
            f"{tuple(response_mask.shape)} differ in shape"
        )
    scores = token_level_rewards.sum(dim=-1)
    advantages = scores.unsqueeze(-1) * response_mask
    return advantages, advantages
