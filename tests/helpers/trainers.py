"""What the trainer tests (tests/trainers) share: `require(module)` (import a trainer library
or skip), A* of a few synthetic groups computed by the project's own method module, and the
step every framework test plays against the service.

`STEP_PROMPTS`, the `gagar` fixture (tests/trainers/conftest.py: a client of a live server)
and `grade_step` are that step: four prompts of four rollouts, one rollout of prompt 0 dropped
for `timeout` (masked by the default policy) and one pass of prompt 1 dropped for `overlong`
(recomputed: runs are created with `drop_policy={"overlong": "recompute"}`).
"""

from __future__ import annotations

import importlib
import os
import uuid
from dataclasses import dataclass

import pytest

INSTALL_HINT = "make install-trainers"


def require(module: str):
    """Import `module` or skip the calling test module (fail under GAGAR_REQUIRE_TRAINERS=1)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{module} is not importable ({exc}); install the trainer libraries with: {INSTALL_HINT}"
        if os.environ.get("GAGAR_REQUIRE_TRAINERS") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


@dataclass(frozen=True)
class SyntheticGroup:
    uid: str
    rewards: list
    tiers: list | None = None
    ranks: list | None = None
    cheats: list | None = None
    graded: bool = True
    baseline: str = "mean"


# Groups of four (TRL's num_generations must be the same for every prompt).
GROUPS_OF_FOUR = [
    SyntheticGroup("mixed-tiers@1", [1, 1, 0, 1], ["T1", "T2", None, "T3"], [1, 2, None, 3]),
    SyntheticGroup("one-pass@1", [0, 1, 0, 0], [None, "T2", None, None], [None, 1, None, None]),
    SyntheticGroup("all-fail@1", [0, 0, 0, 0]),
    SyntheticGroup("all-pass@1", [1, 1, 1, 1], ["T1", "T2", "T3", "T3"], [1, 2, 3, 3]),
    SyntheticGroup("fallback@1", [1, 0, 1, 0], graded=False),
    SyntheticGroup("cheat@1", [1, 1, 1, 0], ["T3", "T1", "T2", None], [3, 1, 2, None], cheats=[False, True, False, False]),
]


# Other sizes and baselines, for verl (its groups may differ in size).
MORE_GROUPS = [
    # METHOD.md section 4, the worked example.
    SyntheticGroup("worked-example@1", [1, 1, 1, 0, 0, 0], ["T1", "T2", "T3", None, None, None], [1, 2, 3, None, None, None]),
    SyntheticGroup(  # 16 rollouts, a T2 band of three distinct ranks with a tie
        "ties-16@1",
        [1, 0] * 8,
        ["T2", None, "T2", None, "T1", None, "T3", None, "T2", None, "T2", None, "T1", None, "T3", None],
        [3, None, 4, None, 1, None, 7, None, 4, None, 5, None, 1, None, 7, None],
    ),
    SyntheticGroup("loo@1", [1, 1, 0, 0, 0], ["T1", "T3", None, None, None], [1, 2, None, None, None], baseline="loo"),
    SyntheticGroup(
        "grpo@1",
        [0, 1, 1, 1, 0, 0, 1],
        [None, "T2", "T2", "T1", None, None, "T3"],
        [None, 2, 3, 1, None, None, 4],
        baseline="grpo",
    ),
    SyntheticGroup("single@1", [1], ["T1"], [1]),
]


def a_star_of(groups) -> dict[tuple[str, int], float]:
    """{(uid, index): A*} from grading.method.advantage, the project's implementation."""
    from grading.method.advantage import redistribute_group

    out = {}
    for group in groups:
        result = redistribute_group(
            group.rewards, cheats=group.cheats, tiers=group.tiers, ranks=group.ranks, graded=group.graded, baseline=group.baseline
        )
        for index, value in enumerate(result.redistributed_advantage.tolist()):
            out[(group.uid, index)] = value
    return out


# The step the framework tests play against the live service: per prompt, the test rewards of
# its N rollouts and the (tier, rank) the grader gives each pass. Prompt p's uid is prompt_uid(p).
N = 4
STEP_PROMPTS = [
    ([1, 1, 0, 0], {0: ("T1", 1), 1: ("T3", 2)}),
    ([1, 0, 1, 1], {0: ("T2", 2), 2: ("T1", 1), 3: ("T3", 3)}),
    ([0, 1, 0, 0], {1: ("T1", 1)}),
    ([1, 1, 1, 1], {}),
]


DROPS = {(0, 3): "timeout", (1, 2): "overlong"}  # (prompt, rollout): reason; the run recomputes "overlong"
DROP_POLICY = {"overlong": "recompute"}


def prompt_uid(p: int, seed: int = 0) -> str:
    return str(uuid.UUID(int=seed * 100 + p))


def dropped_keys(seed: int = 0) -> dict[tuple[str, int], str]:
    return {(prompt_uid(p, seed), i): reason for (p, i), reason in DROPS.items()}


def grade_step(step: int) -> None:
    """Record the grader's verdict on every mixed group of `step`, from STEP_PROMPTS."""
    from grading.models import Group
    from grading.verdicts.store import GradeInput, record_verdict

    for group in Group.objects.filter(step__number=step, is_mixed=True):
        p = int(uuid.UUID(group.uid).int % 100)
        record_verdict(
            group=group,
            grader="test@1",
            status="valid",
            grades=[GradeInput(i, tier, rank) for i, (tier, rank) in STEP_PROMPTS[p][1].items()],
        )


def post_grade_pull(gagar, run: str, step: int, groups: list) -> dict[tuple[str, int], float]:
    """Post `groups` as `step`, grade it, wait until it is final and return its A*."""
    gagar.post_step(run, step, groups)
    grade_step(step)
    rows = gagar.wait_for_step(run, step, timeout=60)
    return gagar.advantages(run, step, inputs_version=rows.inputs_version)


WORDS = "fix the bug in parser add test for edge case refactor module return value when input empty".split()


# A chat template for the frameworks that render messages (ART): role and content, one turn a line.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }} {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant {% endif %}"
)


def word_tokenizer():
    """A word-level tokenizer over WORDS (plus role names), built here: nothing is downloaded."""
    tokenizers = require("tokenizers")
    transformers = require("transformers")
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, "<bos>": 3}
    for word in [*WORDS, "system", "user", "assistant"]:
        vocab.setdefault(word, len(vocab))
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    backend.decoder = tokenizers.decoders.WordPiece(prefix="##")  # joins words with spaces
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        eos_token="<eos>",
        unk_token="<unk>",
        bos_token="<bos>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def verl_batch(a_star, *, n: int = 4, prompt_length: int = 3, response_length: int = 5, seed: int = 1):
    """The batch as verl builds it for GROUPS_OF_FOUR: one uid per prompt, `repeat(n,
    interleave=True)`, sample ids stamped, random responses of random lengths, then A* set by
    `apply_to_batch`. Returns (data, response_mask, lengths). Needs the trainer extra."""
    import numpy as np
    import torch
    import verl

    from gagar_client.adapters import verl as gagar_verl

    prompts = len(GROUPS_OF_FOUR)
    generator = torch.Generator().manual_seed(seed)
    data = verl.DataProto.from_dict(
        tensors={"input_ids": torch.randint(0, 50, (prompts, prompt_length), generator=generator)},
        non_tensors={"uid": np.array([g.uid for g in GROUPS_OF_FOUR], dtype=object)},
    )
    data = data.repeat(repeat_times=n, interleave=True)
    gagar_verl.stamp_sample_ids(data)
    lengths = torch.randint(1, response_length + 1, (prompts * n,), generator=generator)
    response_mask = (torch.arange(response_length)[None, :] < lengths[:, None]).to(torch.int64)
    data.batch["responses"] = torch.randint(0, 50, (prompts * n, response_length), generator=generator)
    data.batch["attention_mask"] = torch.cat([torch.ones(prompts * n, prompt_length, dtype=torch.int64), response_mask], dim=1)
    gagar_verl.apply_to_batch(data, a_star)  # response mask taken from attention_mask
    return data, response_mask, lengths
