"""AReaL's own `PPOActor.compute_advantages` on A* the live service returns.

Each prompt's group is made as AReaL's `GroupedRolloutWorkflow` makes it (`group_size`
episodes gathered, those returning None left out, the rest joined by AReaL's
`concat_padded_tensors`), through `adapters.areal.run_group`, which stamps episode j before the
None ones go: prompt 0's rollout 3 returns None (its trace errored; the run masks it). The
step's trajectories are then shuffled, a filter takes prompt 1's overlong pass out (the run
recomputes without it), the step is posted to a live Gagar server with both drops named,
graded and pulled back, and A* is set by each trajectory's stamp. AReaL's real actor (no
critic, KL off) gives every loss token of every kept trajectory its A* to 1e-6; with AReaL's
GRPO reward normalisation (group mean and std) it does not, and `check_config` refuses it.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from tests.helpers.trainers import DROP_POLICY, STEP_PROMPTS, N, dropped_keys, post_grade_pull, prompt_uid, require

pytestmark = [pytest.mark.trainers, pytest.mark.django_db(transaction=True)]

torch = require("torch")
areal_actor = require("areal.trainer.ppo.actor")
areal_args = require("areal.api.cli_args")
areal_data = require("areal.utils.data")

from gagar_client.adapters import MissingAdvantage, groups_from_ids  # noqa: E402
from gagar_client.adapters import areal as gagar_areal  # noqa: E402

TOL = 1e-6


class Episodes:
    """A rollout workflow as AReaL's RLVR one returns results: one trajectory per episode, a tensor
    dict with batch dimension 1 (prompt tokens, response tokens, loss mask on the response, the
    test reward), or None for an episode whose trace failed. Episodes finish out of order."""

    def __init__(self, failed=()):
        self.calls: dict[str, int] = {}
        self.failed = set(failed)
        self.rng = random.Random(0)

    async def arun_episode(self, engine, data):
        uid = data["gagar_uid"]
        j = self.calls.get(uid, 0)
        self.calls[uid] = j + 1
        await asyncio.sleep(self.rng.random() / 1000)
        if (uid, j) in self.failed:
            return None
        prompt, response = 3, self.rng.randint(1, 6)
        seq = prompt + response
        return {
            "input_ids": torch.randint(4, 20, (1, seq), dtype=torch.int32),
            "loss_mask": torch.tensor([[0] * prompt + [1] * response], dtype=torch.int32),
            "logprobs": torch.zeros(1, seq, dtype=torch.float32),
            "versions": torch.zeros(1, seq, dtype=torch.int32),
            "attention_mask": torch.ones(1, seq, dtype=torch.bool),
            "rewards": torch.tensor([float(data["test_rewards"][j])], dtype=torch.float32),
        }


def _actor(**settings):
    config = areal_args.PPOActorConfig(experiment_name="gagar", trial_name="test", kl_ctl=0.0, **settings)
    return areal_actor.PPOActor(config, engine=None)  # compute_advantages uses no engine


def _step(ids):
    """The step's trajectories: each prompt's group made by run_group, split into trajectories."""
    episodes = Episodes(failed=[(prompt_uid(0), 3)])
    trajectories, dropped = [], {}

    async def make():
        for p, (rewards, _) in enumerate(STEP_PROMPTS):
            data = {"gagar_uid": prompt_uid(p), "test_rewards": rewards}
            group, lost = await gagar_areal.run_group(
                episodes, None, data, group_size=N, uid=prompt_uid(p), ids=ids, concat=areal_data.concat_padded_tensors
            )
            dropped.update(lost)
            trajectories.extend(_split(group))

    asyncio.run(make())
    return trajectories, dropped


def _split(group):
    """A group's batched dict back into per-trajectory dicts (what compute_advantages takes)."""
    rows = group["attention_mask"].shape[0]
    out = []
    for row in range(rows):
        length = int(group["attention_mask"][row].sum())
        out.append(
            {key: (value[row : row + 1, :length] if value.dim() == 2 else value[row : row + 1]) for key, value in group.items()}
        )
    return out


def test_areal_trains_on_the_services_a_star_by_stamp(gagar):
    ids = gagar_areal.SampleIds()
    trajectories, dropped = _step(ids)
    assert dropped == {(prompt_uid(0), 3): "error"}
    made = ids.of(trajectories)
    assert (prompt_uid(0), 3) not in made and len(made) == len(STEP_PROMPTS) * N - 1
    random.Random(1).shuffle(trajectories)  # the trainer's batch order is not the groups'
    test_rewards = [t["rewards"].item() for t in trajectories]

    overlong = (prompt_uid(1), 2)
    kept = [t for t, key in zip(trajectories, ids.of(trajectories)) if key != overlong]
    dropped[overlong] = "overlong"
    assert dropped == {**dropped_keys(), (prompt_uid(0), 3): "error"}

    gagar.create_run("areal-gagar", auto_grade="none", drop_policy=DROP_POLICY)
    errored = (prompt_uid(0), 3)  # generated, but no trajectory came back: a failure, posted as dropped
    a_star = post_grade_pull(
        gagar, "areal-gagar", 1, groups_from_ids([*ids.of(trajectories), errored], [*test_rewards, 0.0], dropped=dropped)
    )
    keys = ids.of(kept)
    expected = [a_star[key] for key in keys]

    actor = _actor()
    gagar_areal.check_config(actor.config)
    gagar_areal.apply_to_batch(kept, a_star, ids, actor=actor.config)
    out = actor.compute_advantages(kept)
    for trajectory, value in zip(out, expected):
        mask = trajectory["loss_mask"].bool()
        assert mask.any()
        got = trajectory["advantages"][mask]
        assert torch.allclose(got, torch.full_like(got, value), atol=TOL, rtol=0), (got, value)

    # AReaL's GRPO recipe normalises the reward per group (mean and std): A* does not survive it.
    norm = areal_args.NormConfig(mean_level="group", std_level="group", group_size=N)
    grpo = _actor(reward_norm=norm)
    with pytest.raises(ValueError, match=r"actor.reward_norm"):
        gagar_areal.check_config(grpo.config)
    whole = [t for t, key in zip(kept, keys) if key[0] in (prompt_uid(2), prompt_uid(3))]
    normalised = grpo.compute_advantages([dict(t) for t in whole])
    got = torch.cat([t["advantages"][t["loss_mask"].bool()] for t in normalised])
    want = torch.cat([torch.full((int(t["loss_mask"].sum()),), a_star[key]) for t, key in zip(whole, ids.of(whole))])
    assert not torch.allclose(got, want, atol=1e-3)


@pytest.mark.parametrize(
    "settings, named",
    [
        ({"kl_ctl": 0.1}, "actor.kl_ctl"),
        ({"adv_norm": {"mean_level": "batch", "std_level": "batch"}}, "actor.adv_norm"),
        ({"reward_scaling": 2.0}, "actor.reward_scaling"),
        ({"reward_bias": -0.5}, "actor.reward_bias"),
        ({"discount": 0.99}, "actor.discount"),
        ({"gae_lambda": 0.95}, "actor.gae_lambda"),
        ({"overlong_reward_penalty": True}, "actor.overlong_reward_penalty"),
        ({"mask_no_eos_with_zero": True}, "actor.mask_no_eos_with_zero"),
    ],
)
def test_settings_that_change_a_star_are_refused_by_name(settings, named):
    if "adv_norm" in settings:
        settings = {"adv_norm": areal_args.NormConfig(**settings["adv_norm"])}
    config = areal_args.PPOActorConfig(experiment_name="gagar", trial_name="test", **{"kl_ctl": 0.0, **settings})
    with pytest.raises(ValueError, match=named):
        gagar_areal.check_config(config)


def test_stamps_are_made_once_and_looked_up_by_name():
    ids = gagar_areal.SampleIds()
    episode = {"attention_mask": torch.ones(1, 3, dtype=torch.bool), "rewards": torch.zeros(1)}
    ids.stamp(episode, "u@1", 2)
    with pytest.raises(ValueError, match="stamped already"):
        ids.stamp(episode, "u@1", 2)
    assert ids.of([episode]) == [("u@1", 2)]
    with pytest.raises(MissingAdvantage, match=r"\('u@1', 2\)"):
        gagar_areal.apply_to_batch([episode], {}, ids)
    with pytest.raises(ValueError, match="reward_clip"):
        gagar_areal.apply_to_batch([episode], {("u@1", 2): 25.0}, ids, actor=_actor().config)
    with pytest.raises(ValueError, match="gagar_uid"):
        ids.of([{"rewards": torch.zeros(1)}])
