"""OpenRLHF 0.11.2: its own reward plumbing calling our `reward_func`, and a test of our side of
the `dr_grpo` contract (its advantage code does not import on CPU:
`openrlhf/trainer/ppo_utils/experience_maker.py` imports vllm, deepspeed and flash_attn).

`SingleTurnAgentExecutor` (openrlhf/utils/agent.py) is what runs each sample: it generates the
sample with the vLLM engine it is given and, with `--reward.remote_url http://...`, posts it to
the reward server as it finishes (aiohttp, one sample a request). Here it runs as it is for 3
groups of 4 samples at once, with a stand-in engine (no vLLM on CPU) whose samples finish in
shuffled order, against `adapters.openrlhf.serve` on 127.0.0.1, whose collector's resolve
callback computes A* with the project's method. Each sample gets its own A*, and `dr_grpo`'s
arithmetic (rewards reshaped into `(prompts, n_samples_per_prompt)` in OpenRLHF's sample order,
minus each row's mean), applied here, gives them back. The args are its CLI's dotted flags as
nested namespaces.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from types import SimpleNamespace

import pytest

from tests.helpers.trainers import require, word_tokenizer

pytestmark = pytest.mark.trainers

torch = require("torch")
agent = require("openrlhf.utils.agent")

from gagar_client.adapters.openrlhf import GroupCollector, check_args, serve  # noqa: E402
from grading.method.advantage import redistribute_group  # noqa: E402

N = 4
# Per group: each sample's text (what the reward function sees) -> (test reward, tier, rank).
SAMPLES = {
    "g0@7": {
        "fix parser": (1, "T1", 1),
        "add test": (1, "T3", 2),
        "refactor module": (0, None, None),
        "return value": (0, None, None),
    },
    "g1@7": {
        "edge case": (0, None, None),
        "fix the bug": (1, "T2", 1),
        "when input empty": (0, None, None),
        "for parser": (0, None, None),
    },
    "g2@7": {"fix": (1, "T1", 1), "the": (1, "T1", 1), "bug": (1, "T2", 2), "in": (0, None, None)},
}


def _args(**flags):
    """OpenRLHF's parsed args as its CLI makes them: dotted flags into nested namespaces, with its
    defaults for the flags that matter here."""
    values = {
        "algo.advantage.estimator": "gae",
        "algo.kl.use_loss": False,
        "algo.kl.init_coef": 0.01,
        "reward.clip_range": (-10, 10),
        "reward.overlong_buffer_len": None,
        "reward.stop_properly_penalty_coef": None,
        "algo.dynamic_filtering_enable": False,
        "rollout.n_samples_per_prompt": 1,
        **flags,
    }
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


def graded_a_star(uid, rollouts):
    """A* of a group's samples, in the index order the collector gave them, by the method."""
    graded = [SAMPLES[uid][sample_text(r["query"], r["prompt"])] for r in rollouts]
    result = redistribute_group([g[0] for g in graded], tiers=[g[1] for g in graded], ranks=[g[2] for g in graded])
    return {(uid, r["index"]): float(v) for r, v in zip(rollouts, result.redistributed_advantage.tolist())}


def sample_text(query, prompt):
    """The response words of a query (OpenRLHF passes the decoded prompt + response)."""
    words, prompt_words = query.split(), prompt.split()
    assert words[: len(prompt_words)] == prompt_words, (query, prompt)
    return " ".join(words[len(prompt_words) :])


def _resolve(calls):
    def resolve(uid, rollouts):
        calls.append((uid, [r["index"] for r in rollouts]))
        return graded_a_star(uid, rollouts)

    return resolve


PROMPTS = {"g0@7": "fix the bug in parser", "g1@7": "fix the bug in module", "g2@7": "fix the bug in test"}


class Engine:
    """The vLLM engine's `generate` as OpenRLHF's executor awaits it: prompt token ids in, one
    output with token ids and a finish reason out. It answers each prompt's samples with that
    group's texts, in generation order, and lets them finish in shuffled order."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.pending = {tuple(self._ids(PROMPTS[uid])): list(SAMPLES[uid]) for uid in SAMPLES}
        self.delays = random.Random(3)

    def _ids(self, text):
        return self.tokenizer(text=text, add_special_tokens=False)["input_ids"]

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        text = self.pending[tuple(prompt_token_ids)].pop(0)
        await asyncio.sleep(self.delays.random() / 50)
        return SimpleNamespace(outputs=[SimpleNamespace(token_ids=self._ids(text), finish_reason="stop", logprobs=None)])


@pytest.fixture
def reward_server():
    collector = GroupCollector(N, graded_a_star, timeout=30)
    server = serve(collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield collector, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_openrlhf_executor_gets_each_samples_own_a_star_and_dr_grpo_gives_it_back(reward_server):
    collector, url = reward_server
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=url)
    tokenizer = word_tokenizer()
    engine = Engine(tokenizer)
    order = [(uid, text) for uid, texts in SAMPLES.items() for text in texts]  # OpenRLHF's sample order

    async def rollout():
        params = SimpleNamespace(max_tokens=8, logprobs=None)
        return await asyncio.gather(*[executor.execute(PROMPTS[uid], uid, params, 32, tokenizer, engine) for uid, _ in order])

    outputs = asyncio.run(rollout())
    assert [sample_text(tokenizer.decode(o["observation_tokens"]), o["prompt"]) for o in outputs] == [t for _, t in order]

    own = {}
    for uid in SAMPLES:  # what each sample should get: its A* in its group, whatever index it drew
        texts = list(SAMPLES[uid])
        graded = [SAMPLES[uid][t] for t in texts]
        result = redistribute_group([g[0] for g in graded], tiers=[g[1] for g in graded], ranks=[g[2] for g in graded])
        own.update({(uid, t): v for t, v in zip(texts, result.redistributed_advantage.tolist())})
    rewards = torch.tensor([float(torch.as_tensor(o["reward"]).reshape(-1)[0]) for o in outputs])
    assert rewards.tolist() == pytest.approx([own[key] for key in order], abs=1e-6)

    # dr_grpo: rewards as (prompts, n) in OpenRLHF's sample order, minus each row's mean.
    grouped = rewards.reshape(-1, N)
    advantages = (grouped - grouped.mean(-1, keepdim=True)).reshape(-1)
    assert advantages.tolist() == pytest.approx([own[key] for key in order], abs=1e-6)
    assert not collector._arrived and not collector._answers  # each group forgotten once answered

    # OpenRLHF sends a request again when it fails: the answered sample gets its A* again.
    again = asyncio.run(executor._fetch_rewards_via_http([f"{PROMPTS['g0@7']} add test"], [PROMPTS["g0@7"]], ["g0@7"]))
    assert again[0]["rewards"] == [pytest.approx(own[("g0@7", "add test")], abs=1e-12)]


def test_bad_requests_answer_400_with_a_detail(reward_server):
    import urllib.error
    import urllib.request

    _, url = reward_server
    request = urllib.request.Request(
        url, data=b'{"query": ["q"], "prompts": []}', method="POST", headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 400
    assert json.loads(caught.value.read()) == {"detail": "query, prompts and labels must be lists of one length"}


def test_the_collector_resolves_each_group_once_in_index_order():
    calls, answers = [], {}
    collector = GroupCollector(N, _resolve(calls), timeout=30)
    arrival = [(uid, text) for uid, texts in SAMPLES.items() for text in texts]
    random.Random(3).shuffle(arrival)

    def call(uid, text):
        answers[(uid, text)] = collector.reward_func([f"{PROMPTS[uid]} {text}"], [PROMPTS[uid]], [uid])

    threads = [threading.Thread(target=call, args=item) for item in arrival]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(answers) == len(arrival)
    assert sorted(uid for uid, _ in calls) == sorted(SAMPLES) and all(idx == list(range(N)) for _, idx in calls)
    assert all(set(a) == {"rewards", "scores", "extra_logs"} and a["rewards"].shape == (1,) for a in answers.values())
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


@pytest.mark.parametrize(
    "flags, named",
    [
        ({}, "--algo.advantage.estimator gae adds a critic"),
        ({"algo.advantage.estimator": "group_norm"}, "group_norm divides A\\* by its group's std"),
        ({"algo.advantage.estimator": "rloo"}, "leave-one-out"),
        ({"algo.advantage.estimator": "reinforce_baseline"}, "whitens advantages over the whole batch, weighted by tokens"),
        ({"algo.advantage.estimator": "dr_grpo"}, "--algo.kl.init_coef 0.01 without --algo.kl.use_loss"),
        (
            {"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True, "reward.overlong_buffer_len": 512},
            "--reward.overlong_buffer_len",
        ),
        (
            {"algo.advantage.estimator": "dr_grpo", "algo.kl.init_coef": 0.0, "reward.stop_properly_penalty_coef": 0.5},
            "--reward.stop_properly_penalty_coef",
        ),
        (
            {"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True, "algo.dynamic_filtering_enable": True},
            "--algo.dynamic_filtering_enable",
        ),
        (
            {"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True, "rollout.n_samples_per_prompt": 8},
            "--rollout.n_samples_per_prompt 8",
        ),
    ],
)
def test_settings_that_change_a_star_are_refused_by_name(flags, named):
    with pytest.raises(ValueError, match=named):
        check_args(_args(**flags), n=N)


def test_the_recipe_passes():
    check_args(_args(**{"algo.advantage.estimator": "dr_grpo", "algo.kl.use_loss": True, "rollout.n_samples_per_prompt": N}), n=N)
