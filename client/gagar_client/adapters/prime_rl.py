"""prime-rl: A* from an algorithm's `score_group`.

prime-rl assigns credit in an `Algorithm` subclass (`prime_rl.orchestrator.algo`): its
`async score_group(episodes)` gets a finished cohort (the episodes of one group, in the order
they finished) and calls `assign_advantages(trace, value)` for each trainable trace (a scalar
goes on every sampled token). Its GRPO skips traces with errors, untrainable agents and traces
without sampled tokens, and gives the rest `reward - mean`. There is no config hook that points
at user code: an algorithm is a named class registered in `ALGORITHM_CLASSES`::

    from prime_rl.orchestrator.algo.base import Algorithm
    from prime_rl.orchestrator.algo.routing import assign_advantages
    from gagar_client.adapters import prime_rl as gagar_prime_rl

    class GagarAlgorithm(Algorithm):
        async def score_group(self, episodes):
            await gagar_prime_rl.score_group(episodes, resolve=post_and_wait, assign=assign_advantages)

`score_group` is where the group is complete, so the identity is made there: the group's uid
is `episode.group.id` (prime-rl's dispatcher stamps it), and each trace's index is the rank of
its `(episode.id, trace.id)` in the cohort, which does not depend on the order episodes finished.
Traces prime-rl would skip are posted as dropped with their reason (`error`, `untrainable`,
`empty`) and get no advantage; `resolve(uid, groups)` posts the group, waits, and returns its
`{(uid, index): A*}`; every kept trace gets its A* as is: no mean, no std, no length penalty.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from gagar_client.adapters import MissingAdvantage, groups_from_ids, lookup_advantages

__all__ = ["MissingAdvantage", "sample_ids", "score_group", "skip_reason"]


def skip_reason(trace: Any) -> str | None:
    """Why prime-rl would not train on `trace` (as its `iter_trainable_traces` decides), or None."""
    if trace.has_error:
        return "error"
    if not trace.agent.trainable:
        return "untrainable"
    if not any(any(node.mask) for node in trace.nodes):
        return "empty"
    return None


def sample_ids(episodes: Sequence[Any]) -> tuple[str, list[tuple[Any, tuple[str, int]]]]:
    """The cohort's uid and `[(trace, (uid, index))]`, indexes ranked by `(episode.id, trace.id)`."""
    uids = {str(episode.group.id) for episode in episodes if episode.group is not None}
    if len(uids) != 1 or any(episode.group is None for episode in episodes):
        raise ValueError(
            f"a cohort is one group: its episodes carry group ids {sorted(uids)} (prime-rl's dispatcher sets episode.group)"
        )
    uid = uids.pop()
    traces = sorted(((str(e.id), str(t.id)), t) for e in episodes for t in e.traces)
    if len({key for key, _ in traces}) != len(traces):
        raise ValueError("two traces of the cohort share an (episode.id, trace.id)")
    return uid, [(trace, (uid, index)) for index, (_, trace) in enumerate(traces)]


async def score_group(
    episodes: Sequence[Any],
    *,
    resolve: Callable[[str, list[dict]], Awaitable[Mapping[tuple, float]]],
    assign: Callable[[Any, float], None],
    missing: str = "raise",
) -> dict[tuple[str, int], float]:
    """Post the cohort, wait for its A* and `assign(trace, A*)` each trainable trace. Returns
    `{(uid, index): A*}` of the traces it assigned."""
    uid, traces = sample_ids(episodes)
    dropped = {key: reason for trace, key in traces if (reason := skip_reason(trace))}
    ids = [key for _, key in traces]
    table = await resolve(uid, groups_from_ids(ids, [float(trace.reward) for trace, _ in traces], dropped=dropped))
    kept = [(trace, key) for trace, key in traces if key not in dropped]
    values = lookup_advantages(table, [u for _, (u, _) in kept], [i for _, (_, i) in kept], missing=missing)
    for (trace, _), value in zip(kept, values):
        assign(trace, value)
    return {key: value for (_, key), value in zip(kept, values)}
