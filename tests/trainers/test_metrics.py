"""Step metrics from the real trainers, through the client, onto the run's timeline: verl's own
`compute_data_metrics` on a DataProto whose advantages are A*, and the logs of two real TRL
`GRPOTrainer` steps forwarded by `metrics_callback`. The timeline returns them beside the desk's
own figures for the same steps."""

from __future__ import annotations

import math

import pytest

from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.trainers import require, verl_batch

pytestmark = pytest.mark.trainers

torch = require("torch")
verl = require("verl")
trl = require("trl")
transformers = require("transformers")

from verl.trainer.ppo.core_algos import compute_grpo_outcome_advantage  # noqa: E402
from verl.trainer.ppo.metric_utils import compute_data_metrics  # noqa: E402

from gagar_client.adapters.trl import metrics_callback  # noqa: E402
from grading.models import Project  # noqa: E402


def _verl_batch(a_star):
    """The batch verl builds before its metrics (tests.helpers.trainers.verl_batch), with the
    prompts, scores and advantages its metrics read."""
    data, response_mask, _ = verl_batch(a_star, seed=2)
    data.batch["prompts"] = data.batch["input_ids"]
    data.batch["response_mask"] = response_mask
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
