"""Step metrics from the real trainers, through the client, onto the run's timeline: verl's own
`compute_data_metrics` on a DataProto whose advantages are A*, and the logs of two real TRL
`GRPOTrainer` steps forwarded by `metrics_callback`. The timeline returns them beside the desk's
own figures for the same steps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.trainers import GROUPS_OF_FOUR, require

pytestmark = pytest.mark.trainers

torch = require("torch")
verl = require("verl")
trl = require("trl")
transformers = require("transformers")

from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage  # noqa: E402
from verl.trainer.ppo.metric_utils import compute_data_metrics  # noqa: E402

from gagar_client.adapters import verl as gagar_verl  # noqa: E402
from gagar_client.adapters.trl import metrics_callback  # noqa: E402
from grading.models import Project  # noqa: E402


def _verl_batch(a_star):
    """The batch verl builds before its metrics: prompts, responses, masks, A* as rewards, advantages."""
    n, prompt_length, response_length = 4, 3, 5
    prompts = len(GROUPS_OF_FOUR)
    generator = torch.Generator().manual_seed(2)
    data = verl.DataProto.from_dict(
        tensors={"input_ids": torch.randint(0, 50, (prompts, prompt_length), generator=generator)},
        non_tensors={"uid": np.array([g.uid for g in GROUPS_OF_FOUR], dtype=object)},
    )
    data = data.repeat(repeat_times=n, interleave=True)
    gagar_verl.stamp_sample_ids(data)
    lengths = torch.randint(1, response_length + 1, (prompts * n,), generator=generator)
    response_mask = (torch.arange(response_length)[None, :] < lengths[:, None]).to(torch.int64)
    data.batch["prompts"] = data.batch["input_ids"]
    data.batch["responses"] = torch.randint(0, 50, (prompts * n, response_length), generator=generator)
    data.batch["attention_mask"] = torch.cat([torch.ones(prompts * n, prompt_length, dtype=torch.int64), response_mask], 1)
    data.batch["response_mask"] = response_mask
    gagar_verl.apply_to_batch(data, a_star)
    data.batch["token_level_scores"] = data.batch["token_level_rewards"].clone()
    advantages, returns = compute_grpo_outcome_advantage(
        token_level_rewards=data.batch["token_level_rewards"],
        response_mask=response_mask.float(),
        index=data.non_tensor_batch["uid"],
        norm_adv_by_std_in_grpo=False,
    )
    data.batch["advantages"], data.batch["returns"] = advantages, returns
    return data


def test_verls_metrics_dict_reaches_the_timeline_beside_the_desks(gagar, a_star_four):
    ingest_groups(Project.objects.get(name="acme"), small_group("g1@1", rewards=(1, 0, 1)))
    metrics = compute_data_metrics(batch=_verl_batch(a_star_four), use_critic=False)
    metrics["actor/entropy"] = torch.tensor(0.41)  # as verl's actor reports it: a 0-d tensor
    assert "response_length/mean" in metrics and "critic/advantages/mean" in metrics

    answer = gagar.log_metrics("r1", 1, metrics)
    finite = {k: float(v) for k, v in metrics.items() if not isinstance(v, bool) and math.isfinite(float(v))}
    assert answer["created"] == len(finite) and answer["skipped"] == sorted(set(map(str, metrics)) - set(finite))
    assert gagar.log_metrics("r1", 1, metrics)["unchanged"] == len(finite)

    timeline = gagar.metrics("r1")
    assert timeline["trainer"]["response_length/mean"] == [[1, pytest.approx(finite["response_length/mean"])]]
    assert timeline["trainer"]["actor/entropy"] == [[1, pytest.approx(0.41)]]
    assert timeline["desk"]["pass_rate"] == [[1, pytest.approx(2 / 3, abs=1e-6)]]


def test_a_trl_trainers_logs_reach_the_timeline(gagar, a_star_four, tmp_path):
    from tests.trainers.test_trl import _trainer

    gagar.ensure_run("r1")
    trainer = _trainer(tmp_path, lambda **kwargs: a_star_four)
    trainer.add_callback(metrics_callback(gagar, "r1"))  # the one line a TRL recipe adds
    logged = []

    class Keep(transformers.TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            logged.append((state.global_step, dict(logs or {})))

    trainer.add_callback(Keep())
    trainer.train()

    timeline = gagar.metrics("r1")
    steps = {step for step, _ in logged}
    assert steps == {1, 2}
    for step, logs in logged:
        for name, value in logs.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                assert [step, pytest.approx(float(value))] in timeline["trainer"][name], name
    assert "reward" in timeline["trainer"] and any("completions" in name for name in timeline["trainer"])
