"""slime: A* through `--custom-reward-post-process-path` and `--custom-advantage-function-path`.

slime stamps every sample where its group is made: its data source gives the g-th group's n
samples `Sample.group_index = g` and `Sample.index = g * n + j` for j = 0..n-1 (both counters
advance together and are saved with the data source). Gagar's `(uid, index)` is `(uid_of(sample),
j)`, decoded from those stamps (`sample_id`, which refuses samples that break the rule), never
from a sample's place in a list.

Two hooks, both loaded by slime from their dotted paths::

    # gagar_hooks.py
    from gagar_client.adapters import slime as gagar_slime

    reward_post_process = gagar_slime.reward_post_process(resolve=post_and_wait, n=8)
    advantages = gagar_slime.advantages          # the advantage function: A* on every response token

    --custom-reward-post-process-path gagar_hooks.reward_post_process
    --custom-advantage-function-path gagar_hooks.advantages

`reward_post_process` runs on the rollout side with the step's samples (slime calls it instead
of its group normalisation): it posts them (`resolve(samples, groups)` posts the groups, waits
and returns `{(uid, index): A*}`) and returns A* as the samples' rewards, which slime carries to
each training rank with its sample. `advantages(args, rollout_data)` runs on the training side
after slime's KL computation and sets every sample's advantages and returns to its A* on every
response token: no group mean, no std, no KL. `check_args` refuses `--normalize-advantages`
(whitening over the data-parallel group) and `--use-opd` (adds a KL term to the advantages).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gagar_client.adapters import MissingAdvantage, groups_from_ids, lookup_advantages, setting

__all__ = ["MissingAdvantage", "advantages", "check_args", "reward_post_process", "sample_id"]


def sample_id(sample: Any, n: int, uid_of: Callable[[Any], str]) -> tuple[str, int]:
    """`(uid, j)` of a slime `Sample` from its stamps: j = index - group_index * n."""
    group, index = sample.group_index, sample.index
    if group is None or index is None:
        raise ValueError(
            "a sample has no group_index/index: slime's data source stamps them where it makes the group; "
            "a custom data source must too"
        )
    j = int(index) - int(group) * n
    if not 0 <= j < n:
        raise ValueError(
            f"sample index {index} is not in group {group}'s range {group * n}..{group * n + n - 1} "
            f"(n_samples_per_prompt={n}): its stamps do not follow slime's data source"
        )
    return str(uid_of(sample)), j


def check_args(args: Any) -> None:
    """Refuse slime arguments that would change A*, naming each."""
    if setting(args, "normalize_advantages", False):
        raise ValueError("--normalize-advantages whitens A* over the data-parallel group: leave it off")
    if setting(args, "use_opd", False):
        raise ValueError("--use-opd adds an on-policy-distillation KL term to the advantages: leave it off")
    if setting(args, "custom_reward_post_process_path") is None:
        raise ValueError(
            "no --custom-reward-post-process-path: rollout_data['rewards'] are slime's normalised test "
            "rewards, not A*; point it at gagar_slime.reward_post_process"
        )


def reward_post_process(
    resolve: Callable[[list, list[dict]], Mapping[tuple, float]],
    *,
    n: int | None = None,
    uid_of: Callable[[Any], str] = lambda sample: str(sample.group_index),
    dropped_reason: Callable[[Any], str | None] = lambda sample: None,
    missing: str = "raise",
) -> Callable[[Any, list], tuple[list, list]]:
    """slime's reward post-process hook `(args, samples) -> (raw_rewards, rewards)` with A* as
    the rewards. `resolve(samples, groups)` posts `groups` (gagar-group/1, one per uid) as the
    step and returns its `{(uid, index): A*}`; `dropped_reason(sample)` names why a sample does not
    train (e.g. "timeout" for a sample slime marks `remove_sample`), None for kept ones."""

    def post_process(args: Any, samples: list) -> tuple[list, list]:
        size = n or int(setting(args, "n_samples_per_prompt", 1))
        raw = [float(s.get_reward_value(args)) if hasattr(s, "get_reward_value") else float(s.reward) for s in samples]
        ids = [sample_id(s, size, uid_of) for s in samples]
        dropped = {key: reason for key, s in zip(ids, samples) if (reason := dropped_reason(s))}
        table = resolve(samples, groups_from_ids(ids, raw, dropped=dropped))
        values = lookup_advantages(table, [u for u, _ in ids], [j for _, j in ids], missing=missing)
        return raw, values

    return post_process


def advantages(args: Any, rollout_data: dict) -> None:
    """slime's custom advantage function: every sample's A* (its reward, set by
    `reward_post_process`) on each of its response tokens, as advantages and returns."""
    check_args(args)
    rewards: Sequence[float] = rollout_data["rewards"]
    kl = rollout_data["kl"]  # one tensor per sample over its response tokens (slime sets it before this call)
    if len(rewards) != len(kl):
        raise ValueError(f"{len(rewards)} rewards but {len(kl)} samples in rollout_data")
    values = [k.new_full(k.shape, float(r)) for r, k in zip(rewards, kl)]
    rollout_data["advantages"] = values
    rollout_data["returns"] = [v.clone() for v in values]
