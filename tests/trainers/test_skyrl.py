"""SkyRL's own trainer code on A* the live service returns: the `gagar` estimator in SkyRL's
`AdvantageEstimatorRegistry`, compared with SkyRL's GRPO estimator.

The trajectories are made as SkyRL makes them (`prepare_generator_input`: one
`TrajectoryID(uid, repetition_id)` per sample), come back from "generation" in another order
(prompts and the trajectories of each permuted; SkyRL keeps a prompt's together), and a filter
takes two out (a timed-out failure the run masks, an overlong pass it recomputes without). The
step is posted to a live Gagar server with the drops named, graded and pulled back; A* is set
by TrajectoryID and the batch goes through `RayPPOTrainer`'s own
`postprocess_generator_output`, `convert_to_training_input` and
`compute_advantages_and_returns` (SkyRL's registry dispatch). Every kept trajectory trains on
the service's A* to 1e-6; SkyRL's GRPO (std off) gives the same on whole groups and on the
recomputed one, and shifts the group that lost a rollout under the mask policy.

SkyRL 0.3.0 runs on Python 3.12; this machine's CPU torch is for 3.11, where pydantic refuses the
`typing.TypedDict` fields of SkyRL's Tinker types (imported by `skyrl.backends`). SkyRL is
imported with `typing_extensions.TypedDict` in its place, which is what pydantic asks for on
3.11; nothing of SkyRL's code is changed.
"""

from __future__ import annotations

import random
import typing
from types import SimpleNamespace

import pytest

from tests.helpers.trainers import DROP_POLICY, DROPS, STEP_PROMPTS, N, post_grade_pull, prompt_uid, require, word_tokenizer

pytestmark = [pytest.mark.trainers, pytest.mark.django_db(transaction=True)]

torch = require("torch")
typing_extensions = require("typing_extensions")


def _import_skyrl():
    saved = typing.TypedDict
    typing.TypedDict = typing_extensions.TypedDict  # pydantic on Python < 3.12; restored at once
    try:
        return (
            require("skyrl.backends.skyrl_train.utils.ppo_utils"),
            require("skyrl.train.config"),
            require("skyrl.train.generators.utils"),
            require("skyrl.train.trainer"),
        )
    finally:
        typing.TypedDict = saved


ppo_utils, skyrl_config, generator_utils, skyrl_trainer = _import_skyrl()

from gagar_client.adapters import MissingAdvantage  # noqa: E402
from gagar_client.adapters import skyrl as gagar_skyrl  # noqa: E402

TOL = 1e-6


def _trainer(**algorithm):
    """SkyRL's RayPPOTrainer as far as its advantage path reads it: config, tokenizer, metrics and
    a dispatch of one data-parallel rank (no Ray workers: nothing here trains a model)."""
    cfg = skyrl_config.SkyRLTrainConfig()
    cfg.generator.n_samples_per_prompt = N
    cfg.trainer.train_batch_size = cfg.trainer.policy_mini_batch_size = len(STEP_PROMPTS)
    for key, value in algorithm.items():
        setattr(cfg.trainer.algorithm, key, value)
    trainer = skyrl_trainer.RayPPOTrainer.__new__(skyrl_trainer.RayPPOTrainer)
    trainer.cfg = cfg
    trainer.tokenizer = word_tokenizer()
    trainer.all_metrics = {}
    trainer.dispatch = SimpleNamespace(get_lcm_dp_size=lambda: 1)
    return trainer


def _generated(seed: int = 0):
    """SkyRL's generator input for the step's prompts, and its output in completion order."""
    prompts = [
        {"prompt": [{"role": "user", "content": "fix the bug"}], "env_class": None, "env_extras": {}, "uid": prompt_uid(p)}
        for p in range(len(STEP_PROMPTS))
    ]
    generator_input, _ = generator_utils.prepare_generator_input(prompts, N, {}, "gsm8k", "train", 1)
    prompt_of = {prompt["uid"]: p for p, prompt in enumerate(prompts)}
    rng = random.Random(seed)
    rows = []
    for tid in generator_input["trajectory_ids"]:
        p = prompt_of[tid.instance_id]
        length = rng.randint(1, 6)
        rows.append(
            {
                "prompt_token_ids": [4, 5, 6],
                "response_ids": [rng.randint(4, 15) for _ in range(length)],
                "rewards": float(STEP_PROMPTS[p][0][tid.repetition_id]),
                "loss_masks": [1] * length,
                "trajectory_ids": tid,
            }
        )
    # SkyRL keeps a prompt's trajectories next to each other (convert_to_training_input asserts
    # it), not in any order: the prompts and the trajectories within each come back permuted.
    groups = [rows[at : at + N] for at in range(0, len(rows), N)]
    rng.shuffle(groups)
    for group in groups:
        rng.shuffle(group)
    return generator_input, [row for group in groups for row in group]


def _output(rows):
    keys = ("prompt_token_ids", "response_ids", "rewards", "loss_masks", "trajectory_ids")
    return {
        **{key: [row[key] for row in rows] for key in keys},
        "stop_reasons": None,
        "rollout_metrics": None,
        "rollout_logprobs": None,
    }


def _advantages(trainer, output):
    output = {**output, "rewards": list(output["rewards"]), "loss_masks": [list(m) for m in output["loss_masks"]]}
    uids = [tid.instance_id for tid in output["trajectory_ids"]]
    output, uids = trainer.postprocess_generator_output(output, uids)
    batch = trainer.convert_to_training_input(output, uids)
    batch["values"] = None
    batch = trainer.compute_advantages_and_returns(batch)
    return batch["advantages"], batch["response_mask"].float(), batch["loss_mask"]


def test_skyrl_trains_on_the_services_a_star_by_trajectory_id(gagar):
    gagar_skyrl.register()
    gagar_skyrl.register()  # again: a no-op
    registry = ppo_utils.AdvantageEstimatorRegistry
    assert registry.get("gagar") is gagar_skyrl.compute_gagar_advantage
    assert {"gagar", "grpo", "rloo"} <= set(registry.list_available())

    generator_input, rows = _generated()
    made = [(t.instance_id, t.repetition_id) for t in generator_input["trajectory_ids"]]
    output = _output(rows)
    ids = gagar_skyrl.sample_ids(output)
    assert ids != made and sorted(ids) == sorted(made)

    # A filter drops two trajectories. SkyRL keeps every row of a group in the batch (its
    # mini-batch boundaries assume n per prompt), so a drop is a zeroed loss mask, as its own
    # zero_variance_filter does it.
    dropped = gagar_skyrl.mask_dropped(output, {(prompt_uid(p), i): reason for (p, i), reason in DROPS.items()})
    assert [sum(mask) == 0 for mask in output["loss_masks"]] == [key in dropped for key in ids]

    gagar.create_run("skyrl-gagar", auto_grade="none", drop_policy=DROP_POLICY)
    a_star = post_grade_pull(gagar, "skyrl-gagar", 1, gagar_skyrl.groups_from_ids(ids, output["rewards"], dropped=dropped))
    values = [a_star[key] for key in ids]
    expected = torch.tensor(values)  # SkyRL computes in float32
    test_rewards = list(output["rewards"])

    gagar_skyrl.apply_to_generator_output(output, a_star)
    assert output["rewards"] == values
    trainer = _trainer(advantage_estimator="gagar")
    gagar_skyrl.check_config(trainer.cfg.trainer.algorithm)
    advantages, mask, loss_mask = _advantages(trainer, output)
    assert torch.allclose(advantages, expected[:, None] * mask, atol=TOL, rtol=0)
    assert [bool(row.sum() == 0) for row in loss_mask] == [key in dropped for key in ids]  # dropped rows: no loss

    # SkyRL's GRPO, fed the same A*: with std off it gives A* back here, because SkyRL keeps the
    # dropped rows (a masked group still sums to zero); with its default std scaling it does not.
    grpo, mask, _ = _advantages(_trainer(advantage_estimator="grpo", grpo_norm_by_std=False), output)
    assert torch.allclose(grpo, expected[:, None] * mask, atol=TOL, rtol=0)
    scaled, mask, _ = _advantages(_trainer(advantage_estimator="grpo"), output)
    assert not torch.allclose(scaled, expected[:, None] * mask, atol=1e-3)

    # Without A* the estimator trains on the test rewards: the lookup is what makes them A*.
    raw, mask, _ = _advantages(trainer, {**output, "rewards": test_rewards})
    assert not torch.allclose(raw, expected[:, None] * mask, atol=1e-3)


@pytest.mark.parametrize(
    "settings, named",
    [
        ({"use_kl_in_reward": True}, "use_kl_in_reward"),
        ({"advantage_batch_normalize": True}, "advantage_batch_normalize"),
        ({"advantage_estimator": "grpo"}, "grpo_norm_by_std"),
        ({"advantage_estimator": "rloo"}, "advantage_estimator=rloo"),
    ],
)
def test_settings_that_change_a_star_are_refused_by_name(settings, named):
    gagar_skyrl.register()
    config = skyrl_config.AlgorithmConfig(**{"advantage_estimator": "gagar", **settings})
    with pytest.raises(ValueError, match=named):
        gagar_skyrl.check_config(config)
    if config.advantage_estimator == "gagar":  # the estimator checks the config SkyRL hands it
        ones = torch.ones(2, 3)
        with pytest.raises(ValueError, match=named):
            ppo_utils.compute_advantages_and_returns(
                token_level_rewards=ones, response_mask=ones, index=["a", "a"], adv_estimator="gagar", config=config
            )


def test_a_trajectory_the_export_lacks_is_named():
    _generator_input, rows = _generated()
    output = _output(rows)
    with pytest.raises(MissingAdvantage, match="no advantage for 16 of 16"):
        gagar_skyrl.apply_to_generator_output(output, {})
    with pytest.raises(ValueError, match="trajectory_ids"):
        gagar_skyrl.sample_ids({**output, "trajectory_ids": None})
