"""Per-token advantages: spread a rollout's A* over its tokens by the grader's turn weights.

Standard library only; `token_advantages_batch` takes torch tensors (torch is imported only
there). The rule is docs/method.md §9 of the Gagar service, whose copy of it
(`grading.method.turn_weights`) is held to the same test vectors:

    a_t = A* · m_t · w_t / w̄,   w̄ = Σ_t m_t w_t / Σ_t m_t

with m the trainer's *real* loss mask (verl's `response_mask`, TRL's completion mask: 0 on
prompt, padding and tool-output tokens) and w_t the weight of the message token t came from
(the export's `turn_weights` column, `{"<message index>": weight}`; a message not named, or
a token of no message, weighs 1). So the mean of a over the masked tokens is A*, which is
what the trainer's token-mean loss saw when A* was broadcast; no token changes sign (every
weight is > 0); tokens outside the mask get 0; uniform weights give A* on every masked token.
It is deliberately not a sum-preserving split (that would shrink the signal by the token
count) and not a per-turn normalisation (turns differ in length).

Fetch the weights with `Client.advantage_rows(run, step, turn_weights=True)` (the run's
policy must have `turn_weights: true`), then::

    from gagar_client.token_weights import turn_weight_map, token_advantages
    weights = turn_weight_map(rows)                      # {(uid, index): {message index: weight}}
    a = token_advantages(a_star, weights[(uid, index)], token_messages, response_mask)

>>> [round(x, 6) for x in token_advantages(0.6, {"2": 0.5}, [1, 1, 2, 2, 2, 3, 3], [0, 1, 1, 1, 1, 1, 1])]
[0.0, 0.8, 0.4, 0.4, 0.4, 0.8, 0.8]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

COLUMN = "turn_weights"
MAX_INDEX_DIGITS = 9

__all__ = ["COLUMN", "check_weights", "token_advantages", "token_advantages_batch", "turn_weight_map"]


def _index(key: Any) -> int | None:
    if isinstance(key, int) and not isinstance(key, bool):
        return key if key >= 0 else None
    text = str(key)
    if not text or len(text) > MAX_INDEX_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def check_weights(weights: Mapping[Any, Any] | str | None) -> dict[int, float]:
    """`{message index: weight}` from the export's cell (an object, its JSON text, or null/empty
    for uniform). Refuses a key that is not a message index and a weight that is not finite and > 0."""
    if weights is None or weights == "":
        return {}
    if isinstance(weights, str):
        weights = json.loads(weights)
    if not isinstance(weights, Mapping):
        raise ValueError(f"turn weights must be an object {{message index: weight}}, got {weights!r:.80}")
    out: dict[int, float] = {}
    for key, value in weights.items():
        index = _index(key)
        if index is None:
            raise ValueError(f"turn weights: key {key!r} is not a message index")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"turn weights: message {index} weighs {value!r}; a weight must be a finite number > 0")
        out[index] = float(value)
    return out


def turn_weight_map(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], dict[int, float]]:
    """`{(uid, index): {message index: weight}}` from export rows taken with `turn_weights=True`."""
    out: dict[tuple[str, int], dict[int, float]] = {}
    for row in rows:
        if COLUMN not in row:
            raise ValueError("these rows carry no turn_weights column: ask with advantage_rows(..., turn_weights=True)")
        out[(str(row["uid"]), int(row["index"]))] = check_weights(row[COLUMN])
    return out


def token_advantages(
    advantage: float, turn_weights: Mapping[Any, Any] | str | None, token_messages: Sequence[Any], mask: Sequence[Any]
) -> list[float]:
    """One rollout's per-token advantages: mean `advantage` over the tokens where `mask` is 1.

    `token_messages[t]` is the message index token t came from (None or negative: no message);
    `mask[t]` is 0 or 1. A mask without a 1 trains nothing: all 0.
    """
    if len(token_messages) != len(mask):
        raise ValueError(f"token_messages has {len(token_messages)} tokens, the mask {len(mask)}")
    advantage = float(advantage)
    if not math.isfinite(advantage):
        raise ValueError(f"advantage must be finite, got {advantage!r}")
    table = check_weights(turn_weights)
    keep = []
    for t, m in enumerate(mask):
        m = m.item() if hasattr(m, "item") else m  # a tensor or array element
        if m not in (0, 1):
            raise ValueError(f"mask[{t}] is {m!r}; a loss mask holds 0 or 1")
        keep.append(m == 1)
    w = []
    for i in token_messages:
        i = i.item() if hasattr(i, "item") else i
        w.append(table.get(int(i), 1.0) if i is not None and i >= 0 else 1.0)
    kept = sum(keep)
    if not kept:
        return [0.0] * len(mask)
    mean_weight = math.fsum(wt for wt, k in zip(w, keep) if k) / kept
    return [advantage * wt / mean_weight if k else 0.0 for wt, k in zip(w, keep)]


def token_advantages_batch(
    advantages: Any, turn_weights: Sequence[Mapping[Any, Any] | str | None], token_messages: Any, mask: Any
) -> Any:
    """`token_advantages` for a batch of torch tensors: `advantages` (batch,), `token_messages`
    (batch, tokens; -1 for a token of no message), `mask` (batch, tokens) of 0/1, one weights
    map per row. Returns (batch, tokens) in `advantages`' floating dtype (float32 otherwise),
    computed in float64."""
    import torch

    if mask.dim() != 2 or tuple(token_messages.shape) != tuple(mask.shape):
        raise ValueError(
            f"token_messages {tuple(token_messages.shape)} and mask {tuple(mask.shape)} must be one (batch, tokens) shape"
        )
    if advantages.shape != (mask.shape[0],) or len(turn_weights) != mask.shape[0]:
        raise ValueError(
            f"{mask.shape[0]} rows need {mask.shape[0]} advantages and turn weights, got "
            f"{tuple(advantages.shape)} and {len(turn_weights)}"
        )
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("a loss mask holds 0 or 1")
    if not bool(torch.isfinite(advantages).all()):
        raise ValueError("advantages must be finite")
    m = mask.to(torch.float64)
    w = torch.ones_like(m)
    for row, weights in enumerate(turn_weights):
        for index, weight in check_weights(weights).items():
            w[row][token_messages[row] == index] = weight
    kept = m.sum(-1)
    mean_weight = torch.where(kept > 0, (w * m).sum(-1) / kept.clamp(min=1), torch.ones_like(kept))
    out = advantages.to(torch.float64)[:, None] * w / mean_weight[:, None] * m
    return out.to(advantages.dtype if advantages.is_floating_point() else torch.float32)
