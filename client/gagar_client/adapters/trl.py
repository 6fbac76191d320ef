"""TRL: a `GRPOTrainer` reward function that returns A*.

With `GRPOConfig(scale_rewards="none")` TRL's advantage is `reward - mean(reward of the
group)` (its `num_generations` completions of one prompt); A* sums to zero over a group,
so the trainer's advantages are A* itself. Use it as the only reward function (or give
the others weight 0)::

    from gagar_client.adapters.trl import reward_function

    trainer = GRPOTrainer(model=..., reward_funcs=[reward_function(lookup)],
                          args=GRPOConfig(scale_rewards="none", ...), train_dataset=dataset)

The dataset carries the Gagar group uid of each prompt in a column (default `gagar_uid`);
TRL passes dataset columns to reward functions as keyword arguments. The rollout index of
a completion comes from a column you name with `index_column` (e.g. filled by a
`rollout_func`'s extra fields, where the completions are made). A dataset row is a prompt,
not a completion, so without such a column the index can only be counted in call order
(TRL's sampler puts a prompt's completions next to each other and scores them before
anything reorders them): ask for that by name, `by_batch_order=True`; it warns
(`BatchOrderWarning`) on every call.

`lookup` is either a mapping `{(uid, index): A*}` or a callable
`lookup(uids=..., indexes=..., prompts=..., completions=..., **kwargs) -> mapping`, called
once per batch: the place to post the step to Gagar and wait for it, e.g. with
`from_client`. Keep groups whole on each process: TRL computes rewards on each process's
share of the batch, so use one process, or a per-process batch that is a multiple of
`num_generations`, or an `index_column`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gagar_client.adapters import (
    BATCH_ORDER,
    AdvantageLookup,
    MissingAdvantage,
    group_steps,
    lookup_advantages,
    rollout_indexes,
    sample_indexes,
)

__all__ = ["MissingAdvantage", "from_client", "reward_function", "rollout_indexes"]


def reward_function(
    lookup: AdvantageLookup,
    *,
    uid_column: str = "gagar_uid",
    index_column: str | None = None,
    by_batch_order: bool = False,
    missing: str = "raise",
    name: str = "gagar_advantage",
) -> Callable[..., list[float]]:
    """A TRL reward function `f(prompts, completions, **kwargs) -> list[float]` returning A*."""
    if index_column is None and not by_batch_order:
        raise ValueError(
            "reward_function needs each completion's rollout index: name the column that carries it "
            "(index_column=...), or count it in call order with by_batch_order=True"
        )

    def reward(prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        if uid_column not in kwargs:
            raise KeyError(
                f"the dataset has no {uid_column!r} column (the Gagar group uid of each prompt); "
                f"columns passed: {sorted(k for k in kwargs if not k.startswith(('trainer_', 'log_')))}"
            )
        uids = [str(u) for u in kwargs[uid_column]]
        if len(uids) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(uids)} values in column {uid_column!r}")
        if index_column is not None:
            if index_column not in kwargs:
                raise KeyError(f"the batch has no {index_column!r} column (index_column: each completion's rollout index)")
            indexes = sample_indexes(uids, list(kwargs[index_column]))
        else:
            indexes = sample_indexes(uids, BATCH_ORDER)
        if callable(lookup) and not isinstance(lookup, Mapping):
            table = lookup(uids=uids, indexes=indexes, prompts=prompts, completions=completions, **kwargs)
        else:
            table = lookup
        return lookup_advantages(table, uids, indexes, missing=missing)

    reward.__name__ = reward.__qualname__ = name
    return reward


def from_client(
    client: Any,
    run: str,
    *,
    score: Callable[..., Sequence[float]],
    step_of: Callable[[Any], int] | None = None,
    group_fields: Callable[..., Mapping] | None = None,
    rollout_fields: Callable[..., Mapping] | None = None,
    timeout: float = 600,
) -> Callable[..., Mapping[tuple, float]]:
    """A `lookup` that plays the whole Gagar loop for each batch: score the completions
    with `score(prompts=..., completions=..., **kwargs) -> [0/1, ...]` (your tests), post
    them as the step `step_of(trainer_state)` (default: `global_step`), wait until the step
    is final and return its `{(uid, index): A*}`.

    `group_fields(uid=..., **kwargs)` may return extra group fields (e.g. `task`),
    `rollout_fields(uid=..., index=..., prompt=..., completion=...)` extra rollout fields
    (`patch`, `messages`, ...) for the grader."""

    def lookup(*, uids, indexes, prompts, completions, **kwargs) -> Mapping[tuple, float]:
        state = kwargs.get("trainer_state")
        step = step_of(state) if step_of else int(getattr(state, "global_step", 0))
        rewards = score(prompts=prompts, completions=completions, **kwargs)
        extra = {}
        if group_fields is not None:
            for uid in dict.fromkeys(uids):
                extra[uid] = dict(group_fields(uid=uid, **kwargs))
        if rollout_fields is not None:
            for i, (uid, index) in enumerate(zip(uids, indexes)):
                extra[(uid, index)] = dict(rollout_fields(uid=uid, index=index, prompt=prompts[i], completion=completions[i]))
        client.post_step(run, step, group_steps(uids, rewards, indexes=indexes, extra=extra))
        rows = client.wait_for_step(run, step, timeout=timeout)
        return client.advantages(run, step, inputs_version=rows.inputs_version)

    return lookup


def metrics_callback(client: Any, run: str) -> Any:
    """A transformers `TrainerCallback` that logs what TRL logs (loss, reward, entropy,
    completion lengths, clip ratios…) to the run's timeline at the trainer's global step, from
    the main process: `trainer.add_callback(metrics_callback(client, "my-run"))`. Text and
    non-finite values are left out (`Client.log_metrics`)."""
    from transformers import TrainerCallback

    class GagarMetrics(TrainerCallback):
        def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
            if logs and state.is_world_process_zero:
                client.log_metrics(run, state.global_step, logs)

    return GagarMetrics()
