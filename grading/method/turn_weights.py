"""Per-token advantages: a passing rollout's turns weighted by the grader's turn citations.

Pure: standard library only, tested without a database (docs/method.md §9).

The method gives each rollout one number, A*. A trainer broadcasts it to the rollout's
response tokens and averages the loss over the tokens its loss mask keeps. The per-token
extension keeps that mean and moves credit inside a passing rollout, away from the turns
the grader cited as wasted:

1. **Turn weights** (`turn_weights`), per message index. A passing rollout of a graded
   group gets DOWN_WEIGHT for every message its grader's verdict cites as a `turn` with the
   category `redundant_exploration` or `wasted_effort` (CITED_CATEGORIES); every other
   message weighs 1. A failing, filtered, fallback or dropped rollout weighs 1 throughout
   (the empty map). Weights are sparse: a message not named weighs 1.
2. **Spreading** (`token_advantages`), in the trainer, on its real loss mask m:
   a_t = A* · m_t · w_t / w̄, with w_t the weight of token t's message and
   w̄ = Σ m_t w_t / Σ m_t. So the mean of a over the masked tokens is A* exactly, a token
   never changes sign (w > 0), and a rollout with uniform weights gets A* on every masked
   token, as before. Tokens outside the mask get 0. `gagar_client.token_weights` is the
   trainer's copy of this step; both are held to tests/fixtures/vectors/turn_weights.jsonl.

Not a sum-preserving split (Σ a = A* would shrink the signal by the token count) and not a
per-turn normalisation (turns differ in length): only the masked mean is fixed.

Worked example: a passing rollout, A* = 0.6, five messages; the grader cites turn 2 as
wasted effort. Tokens of messages [1, 1, 2, 2, 2, 3, 3] with mask [0, 1, 1, 1, 1, 1, 1]
(the first token is a prompt token): w = [1, 1, .5, .5, .5, 1, 1], w̄ over the six masked
tokens = 4.5 / 6 = 0.75.

>>> weights = turn_weights([{"kind": "turn", "rollout": 0, "locator": "2", "category": "wasted_effort"}],
...                        rollout=0, n_messages=5, eligible=True)
>>> weights
{2: 0.5}
>>> [round(a, 6) for a in token_advantages(0.6, weights, [1, 1, 2, 2, 2, 3, 3], [0, 1, 1, 1, 1, 1, 1])]
[0.0, 0.8, 0.4, 0.4, 0.4, 0.8, 0.8]
>>> turn_weights([{"kind": "turn", "rollout": 0, "locator": "2", "category": "wasted_effort"}],
...              rollout=0, n_messages=5, eligible=False)   # a failing rollout: uniform
{}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

DOWN_WEIGHT = 0.5  # a cited turn's tokens weigh half what the rest of the rollout's do
REDUNDANT_EXPLORATION, WASTED_EFFORT = "redundant_exploration", "wasted_effort"
CITED_CATEGORIES = (REDUNDANT_EXPLORATION, WASTED_EFFORT)
CATEGORY_WORDS = {REDUNDANT_EXPLORATION: "redundant exploration", WASTED_EFFORT: "wasted effort"}
MAX_LOCATOR_DIGITS = 9  # a message index; a longer locator names no message


def _message_index(locator: Any, n_messages: int) -> int | None:
    """The message a turn locator names (ASCII digits, below n_messages), else None."""
    text = str(locator).strip()
    if not text or len(text) > MAX_LOCATOR_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    index = int(text)
    return index if index < n_messages else None


def cited_turns(evidence: Iterable[Any], *, rollout: int, n_messages: int) -> dict[int, str]:
    """Message index -> category of the turns of `rollout` that `evidence` cites as wasted,
    in index order. Citations of other kinds, other rollouts, other categories or messages
    the rollout does not have are left out (the first category cited for a turn is kept)."""
    out: dict[int, str] = {}
    for item in evidence if isinstance(evidence, (list, tuple)) else ():
        if not isinstance(item, Mapping) or item.get("kind") != "turn" or item.get("rollout") != rollout:
            continue
        category = item.get("category")
        index = _message_index(item.get("locator", ""), n_messages)
        if category in CITED_CATEGORIES and index is not None:
            out.setdefault(index, category)
    return dict(sorted(out.items()))


def turn_weights(evidence: Iterable[Any], *, rollout: int, n_messages: int, eligible: bool) -> dict[int, float]:
    """The rollout's non-unit turn weights, {message index: DOWN_WEIGHT}; {} is uniform.

    `eligible`: the rollout passed (after cheat zeroing) in a graded group and is trained on
    (not dropped under `recompute`). Anything else weighs 1 throughout.
    """
    if not eligible:
        return {}
    return dict.fromkeys(cited_turns(evidence, rollout=rollout, n_messages=n_messages), DOWN_WEIGHT)


def check_weights(weights: Mapping[Any, Any]) -> dict[int, float]:
    """`weights` as {message index: weight}, keys whole numbers (JSON gives strings), every weight finite and > 0."""
    out: dict[int, float] = {}
    for key, value in weights.items():
        index = key if isinstance(key, int) and not isinstance(key, bool) else _message_index(key, 10**MAX_LOCATOR_DIGITS)
        if index is None or index < 0:
            raise ValueError(f"turn weights: key {key!r} is not a message index")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"turn weights: message {index} weighs {value!r}; a weight must be a finite number > 0")
        out[index] = float(value)
    return out


def token_advantages(
    advantage: float, weights: Mapping[Any, Any], token_messages: Sequence[int | None], mask: Sequence[Any]
) -> list[float]:
    """Per-token advantages whose mean over the masked tokens is `advantage` (§9 step 2).

    `token_messages[t]`: the message index token t belongs to (None or a negative number
    for a token of no message: it weighs 1). `mask[t]`: 1 where the trainer's loss keeps
    the token, 0 elsewhere. A mask without a 1 trains nothing: every token gets 0.
    """
    if len(token_messages) != len(mask):
        raise ValueError(f"token_messages has {len(token_messages)} tokens, the mask {len(mask)}")
    if not math.isfinite(advantage):
        raise ValueError(f"advantage must be finite, got {advantage!r}")
    table = check_weights(weights)
    keep = []
    for t, m in enumerate(mask):
        if m not in (0, 1):  # True/False and 0.0/1.0 compare equal to these
            raise ValueError(f"mask[{t}] is {m!r}; a loss mask holds 0 or 1")
        keep.append(m == 1)
    w = [table.get(i, 1.0) if i is not None and i >= 0 else 1.0 for i in token_messages]
    kept = sum(keep)
    if not kept:
        return [0.0] * len(mask)
    mean_weight = math.fsum(wt for wt, k in zip(w, keep) if k) / kept
    return [advantage * wt / mean_weight if k else 0.0 for wt, k in zip(w, keep)]
