"""Two real TRL `GRPOTrainer` steps on CPU whose advantages are A*.

A tiny Llama built from a config (random weights) and a word-level tokenizer built here:
nothing is downloaded. The reward function is `gagar_client.adapters.trl.reward_function`
over A* of synthetic groups (computed by `grading.method.advantage`), with
`scale_rewards="none"`. The advantages the trainer computed are read from the output of
its `_generate_and_score_completions` and must equal A* per completion (A* minus its group
mean, which is zero).
"""

from __future__ import annotations

import pytest

from tests.helpers.trainers import GROUPS_OF_FOUR, require, word_tokenizer

pytestmark = pytest.mark.trainers

torch = require("torch")
trl = require("trl")
transformers = require("transformers")
datasets = require("datasets")

from gagar_client.adapters import MissingAdvantage  # noqa: E402
from gagar_client.adapters.trl import reward_function  # noqa: E402

N = 4  # completions per prompt = rollouts per Gagar group


def _model(tokenizer):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    return transformers.LlamaForCausalLM(config)


class RecordingGRPOTrainer(trl.GRPOTrainer):
    """Keeps, per generation batch, the samples' uids and the advantages TRL computed."""

    recorded: list

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        self.recorded.append(([row["gagar_uid"] for row in inputs], output["advantages"].detach().clone()))
        return output


def _trainer(tmp_path, lookup, *, max_steps=2, **config):
    tokenizer = word_tokenizer()
    # One prompt per group; a step's batch holds all six prompts × N completions.
    dataset = datasets.Dataset.from_dict(
        {
            "prompt": [f"fix the bug in {word}" for word in ("parser", "module", "test", "value", "input", "case")],
            "gagar_uid": [g.uid for g in GROUPS_OF_FOUR],
        }
    )
    settings = {
        "output_dir": str(tmp_path),
        "use_cpu": True,
        "report_to": "none",
        "save_strategy": "no",
        "logging_steps": 1,
        "per_device_train_batch_size": N * len(GROUPS_OF_FOUR),
        "num_generations": N,
        "max_completion_length": 4,
        "max_steps": max_steps,
        "learning_rate": 1e-3,
        "beta": 0.0,
        "scale_rewards": "none",
        "seed": 0,
        "shuffle_dataset": False,
        "bf16": False,
        "disable_tqdm": True,
    }
    args = trl.GRPOConfig(**{**settings, **config})
    trainer = RecordingGRPOTrainer(
        model=_model(tokenizer),
        reward_funcs=[reward_function(lookup, by_batch_order=True)],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.recorded = []
    return trainer


def test_grpo_trainer_advantages_are_a_star(tmp_path, a_star_four):
    seen_calls = []

    def lookup(*, uids, indexes, trainer_state, **kwargs):
        seen_calls.append((trainer_state.global_step, list(zip(uids, indexes))))
        return a_star_four

    assert trl.GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, scale_rewards="none").scale_rewards == "none"
    trainer = _trainer(tmp_path, lookup)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()

    assert len(trainer.recorded) == 2, "two training steps, one generation batch each"
    assert [step for step, _ in seen_calls] == [0, 1]
    for uids, advantages in trainer.recorded:
        assert sorted(set(uids)) == sorted(g.uid for g in GROUPS_OF_FOUR)
        counts: dict[str, int] = {}
        expected = []
        for uid in uids:  # TRL keeps a prompt's completions together, in generation order
            expected.append(a_star_four[(uid, counts.get(uid, 0))])
            counts[uid] = counts.get(uid, 0) + 1
        assert set(counts.values()) == {N}
        assert advantages.tolist() == pytest.approx(expected, abs=1e-6)
        # and that is A* minus its group mean: the group mean of A* is zero
        grouped = advantages.view(-1, N)
        assert grouped.sum(dim=1).abs().max().item() < 1e-6
    # the update used them: the policy moved
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))
    # mixed groups gave non-zero advantages, all-fail / all-pass groups zero
    uids, advantages = trainer.recorded[0]
    by_uid = {}
    for uid, value in zip(uids, advantages.tolist()):
        by_uid.setdefault(uid, []).append(value)
    assert by_uid["all-fail@1"] == [0.0] * N and by_uid["all-pass@1"] == [0.0] * N
    assert by_uid["mixed-tiers@1"] == pytest.approx([a_star_four[("mixed-tiers@1", i)] for i in range(N)], abs=1e-6)


def test_group_scaling_would_change_a_star(tmp_path, a_star_four):
    """Why scale_rewards="none": TRL's default ("group") divides by the group's std."""
    trainer = _trainer(tmp_path, a_star_four, max_steps=1, scale_rewards="group")
    trainer.train()
    uids, advantages = trainer.recorded[0]
    counts: dict[str, int] = {}
    expected = []
    for uid in uids:
        expected.append(a_star_four[(uid, counts.get(uid, 0))])
        counts[uid] = counts.get(uid, 0) + 1
    assert advantages.tolist() != pytest.approx(expected, abs=1e-3)


def test_reward_function_names_missing_rollouts(a_star_four):
    with pytest.raises(ValueError, match="index_column"):
        reward_function(a_star_four)  # no silent batch order
    reward = reward_function(a_star_four, by_batch_order=True)
    with pytest.raises(MissingAdvantage, match=r"\('nope@1', 0\)"):
        reward(prompts=["p"], completions=["c"], gagar_uid=["nope@1"])
    with pytest.raises(KeyError, match="gagar_uid"):
        reward(prompts=["p"], completions=["c"], other=["x"])
    assert reward(prompts=["p"] * 2, completions=["c"] * 2, gagar_uid=["one-pass@1"] * 2) == [
        a_star_four[("one-pass@1", 0)],
        a_star_four[("one-pass@1", 1)],
    ]
