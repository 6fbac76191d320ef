"""prime-rl: a test of our side of its contract (prime-rl is not on PyPI; shapes read from
PrimeIntellect-ai/prime-rl's source: `src/prime_rl/orchestrator/algo/base.py`, `grpo.py`,
`routing.py`, `dispatcher.py`).

The contract: an `Algorithm`'s `async score_group(episodes)` gets one finished cohort, in the
order its episodes finished; each episode has an `id`, the `group` the dispatcher stamped
(`episode.group.id`) and `traces`, each with `id`, `reward`, `has_error`, `agent.trainable` and
`nodes` whose `mask` marks sampled tokens. Credit goes on with
`assign_advantages(trace, scalar)`, which gives the scalar to every sampled token; prime-rl's
own GRPO skips errored, untrainable and empty traces.
"""

from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

import pytest

from tests.helpers.trainers import GROUPS_OF_FOUR

pytestmark = pytest.mark.trainers

from gagar_client.adapters import MissingAdvantage  # noqa: E402
from gagar_client.adapters import prime_rl as gagar_prime_rl  # noqa: E402


def assign_advantages(trace, value):
    """prime-rl's contract for a scalar: every sampled token of the trace's nodes gets it."""
    for node in trace.nodes:
        if any(node.mask):
            node.advantages = [float(value)] * sum(node.mask)


def _cohort(group, *, errored=None, seed=0):
    rng = random.Random(seed)
    episodes = []
    for j, reward in enumerate(group.rewards):
        trace = SimpleNamespace(
            id=f"trace-{j}",
            reward=float(reward),
            has_error=(j == errored),
            agent=SimpleNamespace(trainable=True),
            nodes=[SimpleNamespace(mask=[0, 0], advantages=None), SimpleNamespace(mask=[1] * rng.randint(1, 5), advantages=None)],
        )
        episodes.append(SimpleNamespace(id=f"ep-{j:02d}", group=SimpleNamespace(id=group.uid), traces=[trace]))
    finished = episodes[:]
    rng.shuffle(finished)  # the order episodes finish in
    return episodes, finished


def test_every_trainable_trace_gets_its_own_a_star(a_star_four):
    group = GROUPS_OF_FOUR[0]
    episodes, finished = _cohort(group, errored=2)
    posted = []

    async def resolve(uid, groups):
        posted.extend(groups)
        return {key: value for key, value in a_star_four.items() if key[0] == uid}

    assigned = asyncio.run(gagar_prime_rl.score_group(finished, resolve=resolve, assign=assign_advantages))
    assert assigned == {(group.uid, j): a_star_four[(group.uid, j)] for j in (0, 1, 3)}
    for j, episode in enumerate(episodes):
        nodes = episode.traces[0].nodes
        assert nodes[0].advantages is None
        if j == 2:
            assert nodes[1].advantages is None  # errored: posted as dropped, no credit
        else:
            assert nodes[1].advantages == [a_star_four[(group.uid, j)]] * sum(nodes[1].mask)
    assert posted == [
        {
            "uid": group.uid,
            "task": {"instance_id": group.uid},
            "rollouts": [
                {"index": j, "reward": float(r), **({"dropped": "error"} if j == 2 else {})} for j, r in enumerate(group.rewards)
            ],
        }
    ]


def test_indexes_do_not_depend_on_the_order_episodes_finish():
    group = GROUPS_OF_FOUR[1]
    orders = [gagar_prime_rl.sample_ids(_cohort(group, seed=seed)[1])[1] for seed in range(4)]
    keyed = [{trace.id: key for trace, key in order} for order in orders]
    assert all(k == keyed[0] for k in keyed) and sorted(keyed[0].values()) == [(group.uid, j) for j in range(4)]


def test_skipped_traces_and_mixed_cohorts_are_named(a_star_four):
    group = GROUPS_OF_FOUR[0]
    episodes, _ = _cohort(group)
    episodes[1].traces[0].agent.trainable = False
    episodes[3].traces[0].nodes[1].mask = [0, 0]
    assert [gagar_prime_rl.skip_reason(e.traces[0]) for e in episodes] == [None, "untrainable", None, "empty"]
    other, _ = _cohort(GROUPS_OF_FOUR[1])
    with pytest.raises(ValueError, match="a cohort is one group"):
        gagar_prime_rl.sample_ids(episodes + other)

    async def nothing(uid, groups):
        return {}

    with pytest.raises(MissingAdvantage):
        asyncio.run(gagar_prime_rl.score_group(episodes, resolve=nothing, assign=assign_advantages))
