"""ART's own `tokenize_trajectory_groups` (its GRPO advantage) on A* the live service returns.

Each prompt's `art.TrajectoryGroup` is made from stamped rollouts (`adapters.art.stamped`, which
is how a rollout enters a group in ART); prompt 0's rollout 3 raises, which ART keeps as one of
the group's exceptions, and a filter takes prompt 1's overlong pass out. The step is posted to a
live Gagar server with both drops named, graded and pulled back, A* is set on each trajectory by
its stamp, and ART tokenizes the groups with a word-level tokenizer built here.

ART subtracts each group's mean, so A* comes back only for groups whose A* sum to zero: whole
groups, and partial ones the run recomputes. Under the default `mask` policy the group that lost
a rollout keeps the full group's A* and is refused, naming it; with `recompute` every result ART
makes carries its trajectory's A* to 1e-6. With ART's default `scale_rewards=True` it does not.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from tests.helpers.trainers import STEP_PROMPTS, N, post_grade_pull, prompt_uid, require, word_tokenizer

pytestmark = [pytest.mark.trainers, pytest.mark.django_db(transaction=True)]


def _import_art():
    """ART patches transformers' `masking_utils._preprocess_mask_arguments` when it is imported
    (for its own model code, with another transformers); TRL's generation in the same process
    then fails. The tokenizer path used here does not need it: restore transformers' own."""
    masking_utils = require("transformers.masking_utils")
    own = masking_utils._preprocess_mask_arguments
    try:
        return require("art"), require("art.preprocessing.tokenize")
    finally:
        masking_utils._preprocess_mask_arguments = own


art, tokenize = _import_art()

from gagar_client.adapters import art as gagar_art  # noqa: E402
from gagar_client.adapters import groups_from_ids  # noqa: E402

TOL = 1e-6
WORDS = ["fix", "the", "bug", "in", "parser", "add", "test", "for", "edge", "case"]


async def _rollout(p: int, j: int, rng: random.Random):
    """A finished rollout as an ART rollout function returns it; prompt 0's rollout 3 raises."""
    await asyncio.sleep(rng.random() / 1000)
    if (p, j) == (0, 3):
        raise TimeoutError("the agent's sandbox timed out")
    answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
    return art.Trajectory(
        messages_and_choices=[{"role": "user", "content": "fix the bug"}, {"role": "assistant", "content": answer}],
        reward=float(STEP_PROMPTS[p][0][j]),
    )


def _groups():
    rng = random.Random(0)

    async def gather():
        return await art.gather_trajectory_groups(
            [
                art.TrajectoryGroup(gagar_art.stamped(_rollout(p, j, rng), uid=prompt_uid(p), index=j) for j in range(N))
                for p in range(len(STEP_PROMPTS))
            ],
            pbar_desc=None,
            max_exceptions=1,
        )

    groups = asyncio.run(gather())
    overlong = (prompt_uid(1), 2)
    groups[1] = art.TrajectoryGroup(
        [t for t in groups[1].trajectories if gagar_art.sample_id(t) != overlong], exceptions=groups[1].exceptions
    )
    return groups


def _post(gagar, run, step, groups, policy):
    gagar.create_run(run, auto_grade="none", drop_policy=policy)
    ids, rewards, dropped = [], [], {}
    for p, group in enumerate(groups):
        ids += gagar_art.sample_ids(group)
        rewards += [t.reward for t in group.trajectories]
        lost = gagar_art.lost(group, prompt_uid(p), N, reason="overlong" if p == 1 else "error")
        dropped.update(lost)
        ids += list(lost)
        rewards += [float(STEP_PROMPTS[p][0][j]) for _, j in lost]
    assert dropped == {(prompt_uid(0), 3): "error", (prompt_uid(1), 2): "overlong"}
    return post_grade_pull(gagar, run, step, groups_from_ids(ids, rewards, dropped=dropped))


def _advantages(groups, *, scale_rewards=False):
    results = tokenize.tokenize_trajectory_groups(
        word_tokenizer(),
        groups,
        allow_training_without_logprobs=True,
        scale_rewards=scale_rewards,
        drop_zero_advantage_trajectories=False,
    )
    return [(gagar_art.sample_id(result.trajectory), result.advantage, sum(result.assistant_mask)) for result in results]


def test_art_trains_on_the_services_a_star_for_groups_that_sum_to_zero(gagar):
    groups = _groups()
    assert [len(g.trajectories) for g in groups] == [3, 3, 4, 4] and len(groups[0].exceptions) == 1

    # Default policy: the errored rollout is masked, so prompt 0's kept A* do not sum to zero.
    masked = _post(gagar, "art-mask", 1, groups, {"overlong": "recompute"})
    with pytest.raises(ValueError, match=rf"'{prompt_uid(0)}' sums to [+-]0\.\d+.*'recompute'"):
        gagar_art.apply_to_groups(_groups(), masked)

    # The run recomputes both reasons: every group sums to zero and ART gives A* back.
    a_star = _post(gagar, "art-recompute", 2, groups, {"*": "recompute"})
    gagar_art.check_config({"scale_rewards": False})
    gagar_art.apply_to_groups(groups, a_star)
    results = _advantages(groups)
    assert sorted(key for key, _, _ in results) == sorted(key for g in groups for key in gagar_art.sample_ids(g))
    for key, advantage, tokens in results:
        assert tokens > 0 and advantage == pytest.approx(a_star[key], abs=TOL), key

    # ART's default scale_rewards=True divides by each group's std.
    scaled = {key: advantage for key, advantage, _ in _advantages(groups, scale_rewards=True)}
    assert any(abs(scaled[key] - a_star[key]) > 1e-3 for key in scaled)


@pytest.mark.parametrize(
    "config, named",
    [
        ({}, "scale_rewards=True"),
        ({"scale_rewards": False, "kl_penalty_coef": 0.1}, "kl_penalty_coef"),
        ({"scale_rewards": False, "advantage_balance": 0.5}, "advantage_balance"),
        ({"scale_rewards": False, "kimi_k2_tau": 0.1}, "kimi_k2_tau"),
        ({"scale_rewards": False, "scale_learning_rate_by_reward_std_dev": True}, "scale_learning_rate_by_reward_std_dev"),
    ],
)
def test_settings_that_change_a_star_are_refused_by_name(config, named):
    with pytest.raises(ValueError, match=named):
        gagar_art.check_config(config)


def test_a_stamp_is_made_once_and_required():
    trajectory = art.Trajectory(messages_and_choices=[], reward=1.0)
    with pytest.raises(ValueError, match="stamp it where its group is made"):
        gagar_art.sample_id(trajectory)
    gagar_art.stamp(trajectory, "u@1", 0)
    with pytest.raises(ValueError, match="stamped already"):
        gagar_art.stamp(trajectory, "u@1", 1)
    assert gagar_art.sample_id(trajectory) == ("u@1", 0)
