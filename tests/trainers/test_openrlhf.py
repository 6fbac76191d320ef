"""OpenRLHF: a test of our side of its contract (its advantage code does not import on CPU:
`openrlhf/trainer/ppo_utils/experience_maker.py` imports vllm, deepspeed and flash_attn).

The contract, read from OpenRLHF 0.11.2's source: `reward_func(queries, prompts, labels)` is
called once per sample, from worker threads (`asyncio.to_thread`), as samples finish, and
returns `{"rewards", "scores", "extra_logs"}`; `dr_grpo` then reshapes the rewards into
`(prompts, n_samples_per_prompt)` by each sample's place in the rollout and subtracts each
row's mean. The args are its CLI's dotted flags as nested namespaces (`args.algo.kl.use_loss`).

Here 3 groups of 4 samples call the collector from 12 threads in shuffled order; the resolve
callback is called once per group, with the samples in the index order the collector gave them,
and computes their A* with the project's method; each call gets its own sample's A*, and the
group mean subtraction of `dr_grpo`, applied in OpenRLHF's sample order, gives them back.
"""

from __future__ import annotations

import random
import threading
from types import SimpleNamespace

import pytest

from tests.trainers.conftest import require

pytestmark = pytest.mark.trainers

torch = require("torch")

from gagar_client.adapters.openrlhf import GroupCollector, check_args  # noqa: E402
from grading.method.advantage import redistribute_group  # noqa: E402

N = 4
# Per group: each sample's text (what the reward function sees) -> (test reward, tier, rank).
SAMPLES = {
    "g0@7": {"fix parser": (1, "T1", 1), "add test": (1, "T3", 2), "refactor module": (0, None, None),
             "return value": (0, None, None)},
    "g1@7": {"edge case": (0, None, None), "fix the bug": (1, "T2", 1), "when input empty": (0, None, None),
             "for parser": (0, None, None)},
    "g2@7": {"fix": (1, "T1", 1), "the": (1, "T1", 1), "bug": (1, "T2", 2), "in": (0, None, None)},
}


def _args(**flags):
    """OpenRLHF's parsed args as its CLI makes them: dotted flags into nested namespaces, with its
    defaults for the flags that matter here."""
    values = {"algo.advantage.estimator": "gae", "algo.kl.use_loss": False, "algo.kl.init_coef": 0.01,
              "reward.clip_range": (-10, 10), "reward.overlong_buffer_len": None,
              "reward.stop_properly_penalty_coef": None, "algo.dynamic_filtering_enable": False,
              "rollout.n_samples_per_prompt": 1, **flags}
    root: dict = {}
    for name, value in values.items():
        *parents, leaf = name.split(".")
        node = root
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value

    def build(node):
        return SimpleNamespace(**{k: build(v) for k, v in node.items()}) if isinstance(node, dict) else node

    return build(root)


def _resolve(calls):
    def resolve(uid, rollouts):
        calls.append((uid, [r["index"] for r in rollouts], threading.current_thread().name))
        graded = [SAMPLES[uid][r["query"]] for r in rollouts]
        result = redistribute_group([g[0] for g in graded], tiers=[g[1] for g in graded], ranks=[g[2] for g in graded])
        return {(uid, r["index"]): float(v) for r, v in zip(rollouts, result.redistributed_advantage.tolist())}

    return resolve


def test_each_sample_gets_its_own_a_star_and_dr_grpo_gives_it_back():
    calls, answers = [], {}
    collector = GroupCollector(N, _resolve(calls), timeout=30)
    order = [(uid, text) for uid, texts in SAMPLES.items() for text in texts]  # OpenRLHF's sample order
    arrival = order[:]
    random.Random(3).shuffle(arrival)

    def call(uid, text):
        answers[(uid, text)] = collector.reward_func([text], ["prompt"], [uid])

    threads = [threading.Thread(target=call, args=item) for item in arrival]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == len(order)
    assert sorted(uid for uid, _, _ in calls) == sorted(SAMPLES) and all(idx == list(range(N)) for _, idx, _ in calls)

    own = {}
    for uid in SAMPLES:  # what each sample should get: its A* in its group, whatever index it drew
        texts = list(SAMPLES[uid])
        graded = [SAMPLES[uid][t] for t in texts]
        result = redistribute_group([g[0] for g in graded], tiers=[g[1] for g in graded], ranks=[g[2] for g in graded])
        own.update({(uid, t): v for t, v in zip(texts, result.redistributed_advantage.tolist())})
    for key, answer in answers.items():
        assert set(answer) == {"rewards", "scores", "extra_logs"} and answer["rewards"].shape == (1,)
        assert answer["rewards"].item() == pytest.approx(own[key], abs=1e-6), key

    # dr_grpo: rewards as (prompts, n) in OpenRLHF's sample order, minus each row's mean.
    rewards = torch.cat([answers[key]["rewards"] for key in order]).reshape(-1, N)
    advantages = (rewards - rewards.mean(-1, keepdim=True)).reshape(-1)
    assert advantages.tolist() == pytest.approx([own[key] for key in order], abs=1e-6)
    assert not collector._arrived and not collector._answers  # each group forgotten once answered


def test_a_group_that_never_completes_times_out_naming_it():
    collector = GroupCollector(N, _resolve([]), timeout=0.2)
    with pytest.raises(TimeoutError, match=r"group 'g0@7': 1 of 4 samples arrived"):
        collector.reward_func(["fix parser"], ["prompt"], ["g0@7"])


def _both(collector, uid):
    """Two samples of `uid` from two threads; what each raised, or None."""
    raised = {}

    def call(text):
        try:
            collector.reward_func([text], ["p"], [uid])
            raised[text] = None
        except Exception as exc:  # noqa: BLE001 - the test looks at what each sample got
            raised[text] = exc

    threads = [threading.Thread(target=call, args=(t,)) for t in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    return raised


def test_errors_reach_every_sample_of_the_group():
    def unreachable(uid, rollouts):
        raise ConnectionError("Gagar did not answer")

    raised = _both(GroupCollector(2, unreachable, timeout=5), "g")
    assert [str(e) for e in raised.values()] == ["Gagar did not answer"] * 2

    raised = _both(GroupCollector(2, lambda uid, rollouts: {(uid, 0): 12.0, (uid, 1): -12.0}, timeout=5), "h")
    assert all(isinstance(e, ValueError) and "--reward.clip_range -10 10" in str(e) for e in raised.values())

    collector = GroupCollector(2, lambda uid, rollouts: {(uid, 0): 0.5, (uid, 1): -0.5}, timeout=5)
    assert _both(collector, "k") == {"a": None, "b": None}
    assert all(v is None for v in _both(collector, "k").values())  # the uid may come back once answered


@pytest.mark.parametrize("flags, named", [
    ({}, "--algo.advantage.estimator gae adds a critic"),
    ({"algo.advantage.estimator": "group_norm"}, "group_norm divides A\\* by its group's std"),
    ({"algo.advantage.estimator": "rloo"}, "leave-one-out"),
    ({"algo.advantage.estimator": "reinforce_baseline"}, "whitens advantages over the whole batch, weighted by tokens"),
    ({"algo.advantage.estimator": "dr_grpo"}, "--algo.kl.init_coef 0.01 without --algo.kl.use_loss"),
    ({"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True, "reward.overlong_buffer_len": 512},
     "--reward.overlong_buffer_len"),
    ({"algo.advantage.estimator": "dr_grpo", "algo.kl.init_coef": 0.0, "reward.stop_properly_penalty_coef": 0.5},
     "--reward.stop_properly_penalty_coef"),
    ({"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True, "algo.dynamic_filtering_enable": True},
     "--algo.dynamic_filtering_enable"),
    ({"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True, "rollout.n_samples_per_prompt": 8},
     "--rollout.n_samples_per_prompt 8"),
])
def test_settings_that_change_a_star_are_refused_by_name(flags, named):
    with pytest.raises(ValueError, match=named):
        check_args(_args(**flags), n=N)


def test_the_recipe_passes():
    check_args(_args(**{"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True,
                        "rollout.n_samples_per_prompt": N}), n=N)
