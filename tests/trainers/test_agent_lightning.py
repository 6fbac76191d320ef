"""Agent Lightning's own trainer step on A* the live service returns, through verl's registry.

Agent Lightning 1.0.2's server (its FastAPI app, in-memory store) runs on 127.0.0.1. The
trainer is `AgentLightningRayPPOTrainer` with the recipe's two overrides (docs/api.md) and its
own config (`agentlightning/verl/config.yaml` composed on verl's `ppo_trainer`). Its real
`_train_step` runs: its rollout manager makes the groups on the server (stamped by
`stamping`), an agent thread plays the rollouts in another order (one records no LLM call,
one has a prompt over the limit, turns merge or not by level), its `RolloutAdapter` builds the
rows, the hook posts the step to a live Gagar server with the drops named, grades it and sets
A*; then the trainer drops rows (prompt too long, the floor to a mini-batch multiple, same-reward
rows first), balances, takes the advantage with verl's `compute_advantage` (per rollout with its
`enable_rollout_level_advantage`) and hands the batch to the actor. Only the model's edges are
stood in for: log-probs (zeros), the actor update (which keeps the batch), vLLM replicas (none)
and weight sync. Every row the actor gets trains on its rollout's A* to 1e-6.

Agent Lightning 1.0 declares Python >= 3.12; its verl modules import and run on this venv's 3.11
(installed with --ignore-requires-python; requirements/trainers-frameworks.txt says why).
"""

from __future__ import annotations

import random
import socket
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.trainers import STEP_PROMPTS, N, require, word_tokenizer

pytestmark = [pytest.mark.trainers, pytest.mark.django_db(transaction=True)]

torch = require("torch")
hydra = require("hydra")
omegaconf = require("omegaconf")
httpx = require("httpx")
uvicorn = require("uvicorn")
agl_verl = require("agentlightning.verl")
agl_trainer = require("agentlightning.verl.trainer")
agl_manager = require("agentlightning.verl.agl_rollout_manager")
agl_app = require("agentlightning.server.app")
verl = require("verl")

from gagar_client.adapters import agent_lightning as gagar_agl  # noqa: E402
from gagar_client.adapters.verl import SampleIdentityError  # noqa: E402

TOL = 1e-6
MAX_PROMPT = 8  # prompt tokens; rollout (1, 2)'s prompt is longer: all its rows are marked is_drop_mask
NO_TRACE, TOO_LONG = (0, 3), (1, 2)  # (prompt, rollout): no LLM call recorded / prompt over the limit


@pytest.fixture(scope="module")
def agl_server():
    """Agent Lightning's own server on a free local port; ready when uvicorn says it started."""
    config = omegaconf.OmegaConf.load(Path(agl_app.__file__).parents[1] / "config" / "server.yaml")  # its own
    app = agl_app.create_app(config)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "Agent Lightning's server did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def _config(url: str, **overrides):
    """Agent Lightning's own trainer config (its config.yaml on verl's ppo_trainer), for this step."""
    settings = {
        "algorithm.adv_estimator": "gagar",
        "actor_rollout_ref.rollout.n": N,
        "actor_rollout_ref.actor.ppo_mini_batch_size": 1,
        "agentlightning.agl_base_url": url,
        "data.max_prompt_length": MAX_PROMPT,
        "data.max_response_length": 16,
        "agentlightning.trace_aggregator.trajectory_max_prompt_length": MAX_PROMPT,
        "agentlightning.trace_aggregator.trajectory_max_response_length": 16,
        **overrides,
    }
    with hydra.initialize_config_dir(config_dir=str(Path(agl_verl.__file__).parent), version_base=None):
        return hydra.compose("config", overrides=[f"{key}={value}" for key, value in settings.items()])


class _Models:
    """The trainer's model edges: no vLLM replica, zero log-probs, an actor update that keeps the batch."""

    def __init__(self):
        self.trained = None
        self.get_addresses = self.get_replicas = list
        self.sleep_replicas = self.update_weights = lambda *args: None
        self._dispatch_info = {"actor": [0, 1]}  # two data-parallel ranks for _balance_batch

    def compute_old_log_prob(self, batch):
        shape = batch.batch["responses"].shape
        return verl.DataProto.from_dict(tensors={"old_log_probs": torch.zeros(shape)}), 0.0

    def update_actor(self, batch):
        self.trained = batch
        return verl.DataProto(meta_info={"metrics": {}})


class GagarTrainer(agl_trainer.AgentLightningRayPPOTrainer):
    """The recipe of docs/api.md: stamp where the groups are made, set A* after the rollout."""

    def _make_rollout_manager(self, manager_cls):
        return super()._make_rollout_manager(gagar_agl.stamping(manager_cls, self.gagar_ids))

    def _rollout(self, gen_batch, is_train):
        batch, metrics = super()._rollout(gen_batch, is_train)
        if is_train:
            a_star = self.post_grade_pull(
                gagar_agl.groups(batch, self.gagar_ids, fillna=self.config.agentlightning.reward_fillna_value)
            )
            gagar_agl.apply_to_batch(batch, a_star, self.gagar_ids, config=self.config)
        return batch, metrics


def _trainer(config, gagar, run: str):
    from grading.models import Group
    from grading.verdicts.store import GradeInput, record_verdict

    trainer = GagarTrainer.__new__(GagarTrainer)
    models = _Models()
    trainer.config, trainer.models, trainer.gagar_ids = config, models, gagar_agl.SampleIds()
    trainer.is_async, trainer.global_steps, trainer.tokenizer, trainer.processor = False, 1, word_tokenizer(), None
    trainer._hooks = trainer._agl_client = None
    trainer._carry_over_rollouts = []
    trainer.use_reference_policy = trainer.use_critic = False
    trainer.llm_server_manager = trainer.checkpoint_manager = trainer.actor_rollout_wg = models
    trainer._compute_old_log_prob, trainer._update_actor = models.compute_old_log_prob, models.update_actor
    prompts = {"prompt_index": np.array(list(range(len(STEP_PROMPTS))), dtype=object)}
    trainer._next_train_batch_dict_for_rollout = lambda: dict(prompts)

    def post_grade_pull(groups):
        gagar.post_step(run, 1, groups)
        prompt_of = {g.uid: trainer.prompt_of[g.uid] for g in Group.objects.filter(step__number=1, is_mixed=True)}
        for group in Group.objects.filter(step__number=1, is_mixed=True):
            grades = STEP_PROMPTS[prompt_of[group.uid]][1]
            record_verdict(
                group=group,
                grader="test@1",
                status="valid",
                grades=[GradeInput(i, tier, rank) for i, (tier, rank) in grades.items()],
            )
        rows = gagar.wait_for_step(run, 1, timeout=60)
        trainer.rows = rows
        return gagar.advantages(run, 1, inputs_version=rows.inputs_version)

    trainer.post_grade_pull = post_grade_pull
    trainer.prompt_of = {}
    return trainer


def _agent(url: str, trainer, level: str, stop: threading.Event):
    """Plays every rollout the trainer queued, in shuffled order, as Agent Lightning's gateway
    records them: model_request events (a turn's prompt extends the last one's context, so
    trajectory level merges them), then the reward."""
    client = httpx.Client(base_url=url, timeout=30)
    rng = random.Random(7)
    expected = len(STEP_PROMPTS) * N
    while not stop.is_set():
        queued = client.get("/api/rollouts", params={"state_in": ["queuing"]}).json()
        stamped = [r for r in queued if r["rollout_id"] in trainer.gagar_ids._ids]
        if len(stamped) == expected:
            break
        stop.wait(0.01)
    rng.shuffle(stamped)
    for rollout in stamped:
        data_id, j = trainer.gagar_ids.of(rollout["rollout_id"])
        p = int(rollout["input"]["prompt_index"])
        trainer.prompt_of[data_id] = p
        rid = rollout["rollout_id"]
        client.patch(f"/api/rollouts/{rid}", json={"status": {"state": "running"}}).raise_for_status()
        if (p, j) != NO_TRACE:
            prompt = [3] + [4 + p] * (MAX_PROMPT + 2 if (p, j) == TOO_LONG else 2)
            for turn in range(1 + j % 2):
                response = [10 + turn + k for k in range(1 + (j + turn) % 3)] + [1]
                event = {"response": {"prompt_token_ids": prompt, "choices": [{"token_ids": response}]}}
                client.post(f"/api/rollouts/{rid}/attempt/0/events", json={"event_type": "model_request", "data": event})
                prompt = prompt + response + [20 + turn]
        reward = float(STEP_PROMPTS[p][0][j])
        client.post(f"/api/rollouts/{rid}/attempt/0/events", json={"event_type": "reward", "data": {"value": reward}})
        client.patch(f"/api/rollouts/{rid}", json={"status": {"state": "succeeded"}}).raise_for_status()


@pytest.mark.parametrize(
    "level, overrides",
    [
        ("trajectory", {}),  # Agent Lightning's defaults: rollout-level advantage, per_rollout_mean loss
        (
            "transition",
            {"algorithm.enable_rollout_level_advantage": False, "actor_rollout_ref.actor.policy_loss.loss_mode": "vanilla"},
        ),
    ],
)
def test_its_train_step_trains_every_row_on_the_services_a_star(agl_server, gagar, level, overrides):
    run = f"agl-{level}"
    gagar.create_run(run, auto_grade="none", drop_policy={gagar_agl.PROMPT_TOO_LONG: "recompute"})
    config = _config(agl_server, **{"agentlightning.trace_aggregator.level": level, **overrides})
    trainer = _trainer(config, gagar, run)
    stop = threading.Event()
    agent = threading.Thread(target=_agent, args=(agl_server, trainer, level, stop), daemon=True)
    agent.start()
    try:
        metrics, _ = trainer._train_step(timing_raw={}, curr_step_profile=False)
    finally:
        stop.set()
        agent.join(timeout=30)
    trained = trainer.models.trained
    assert trained is not None, "the actor got no batch"

    # The service: the no-trace failure is masked (full group), the long-prompt pass recomputed.
    uid_of = {p: uid for uid, p in trainer.prompt_of.items()}
    by_key = {(row["uid"], row["index"]): row for row in trainer.rows}
    assert by_key[(uid_of[0], 3)]["drop_mode"] == "mask"
    assert by_key[(uid_of[1], 2)]["status"] == "dropped"
    a_star = gagar.advantages(run, 1, inputs_version=trainer.rows.inputs_version)
    from grading.method.advantage import redistribute_group

    full0 = redistribute_group([1, 1, 0, 0], tiers=["T1", "T3", None, None], ranks=[1, 2, None, None])
    kept1 = redistribute_group([1, 0, 1], tiers=["T2", None, "T3"], ranks=[2, None, 3])
    for index in range(4):
        assert a_star[(uid_of[0], index)] == pytest.approx(float(full0.redistributed_advantage[index]), abs=1e-9)
    for index, value in zip((0, 1, 3), kept1.redistributed_advantage.tolist()):
        assert a_star[(uid_of[1], index)] == pytest.approx(value, abs=1e-9)

    # The trainer dropped rows after the hook (the floor) and reordered them (balancing).
    rollout_ids = [str(r) for r in trained.non_tensor_batch["rollout_id_list"]]
    assert metrics["training/n_sample_dropped/marked"] == 1  # rollout (1, 2): one turn, its prompt over the limit
    assert metrics["training/n_sample_dropped/same_reward"] + metrics["training/n_sample_dropped/random"] > 0
    keys = [trainer.gagar_ids.of(r) for r in rollout_ids]
    assert keys != sorted(keys, key=lambda k: (list(uid_of.values()).index(k[0]), k[1]))
    assert [(u, int(i)) for u, i in zip(trained.non_tensor_batch["uid"], trained.non_tensor_batch["gagar_index"])] == keys

    # Every row trains on its rollout's A*: on each response token, or with the per_rollout_mean
    # loss, as the rollout's token mean (Agent Lightning divides by its tokens and the row count).
    mask = trained.batch["response_mask"].float()
    advantages = trained.batch["advantages"].float()
    expected = torch.tensor([a_star[key] for key in keys])
    if config.actor_rollout_ref.actor.policy_loss.loss_mode == "per_rollout_mean":
        tokens: dict[str, float] = {}
        for row, rollout_id in enumerate(rollout_ids):
            tokens[rollout_id] = tokens.get(rollout_id, 0.0) + float(mask[row].sum())
        scale = torch.tensor([tokens[r] * len(trained) for r in rollout_ids])
        advantages = advantages * scale[:, None]
    assert torch.allclose(advantages, expected[:, None] * mask, atol=TOL, rtol=0)


def test_settings_that_change_a_star_are_refused_by_name(agl_server):
    for overrides, named in [
        ({"algorithm.adv_estimator": "grpo", "algorithm.norm_adv_by_std_in_grpo": False}, "algorithm.adv_estimator=grpo"),
        ({"algorithm.use_kl_in_reward": True}, "algorithm.use_kl_in_reward"),
    ]:
        config = _config(agl_server, **overrides)
        with pytest.raises(ValueError, match=named):
            gagar_agl.check_config(config)
    # The estimator verl's compute_advantage reaches checks the algorithm config it is handed too.
    config = _config(agl_server, **{"algorithm.use_kl_in_reward": True})
    rows = verl.DataProto.from_dict(
        tensors={"token_level_rewards": torch.ones(2, 3), "response_mask": torch.ones(2, 3)},
        non_tensors={"uid": np.array(["a", "a"], dtype=object)},
    )
    with pytest.raises(ValueError, match=r"algorithm.use_kl_in_reward"):
        agl_trainer.compute_advantage(rows, adv_estimator="gagar", config=config.algorithm)


def test_a_group_is_stamped_once():
    ids = gagar_agl.SampleIds()
    made = [
        agl_manager.EnqueuedRollout(data_id="d", rollout_id=f"r{j}", step=1, sample_idx_in_step=0, enqueue_time=0.0)
        for j in range(3)
    ]
    ids.stamp(made)
    assert [ids.of(f"r{j}") for j in range(3)] == [("d", 0), ("d", 1), ("d", 2)]
    with pytest.raises(SampleIdentityError, match="stamped already"):
        ids.stamp(made[:1])
    with pytest.raises(SampleIdentityError, match="was not stamped"):
        ids.of(str(uuid.uuid4()))
