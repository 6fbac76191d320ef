"""Blind to the producer: which of a rollout's fields say who made it, and lane labels. Pure.

A group's rollouts may come from several models or agents (three models, 15 rollouts a task:
indexes 0-4 one model, 5-9 the next). A person judging the group blind must not learn which
rollout came from which: not from its `source` (`results_claude_10/...`), its cost, the
metadata an importer kept (`model`, `agent`, `llm_config`, ...), nor from its index, which
batches rollouts by producer. So such a person meets every rollout under a **lane label**
(A, B, C, ...: `lane_label`), in their own shuffled order, and the **blind fields** below
are withheld wherever they would see them. The trajectory text itself is not rewritten: a
system prompt naming its model stays as it is.

A project's blind fields are a list of names (`BlindFields.parse`): `source` (the rollout's
source format and ref), `cost` (its cost in USD, also under stats), and `metadata:<word>`:
every metadata or stats key whose name holds that word (any case), with all it holds.

>>> fields = BlindFields.parse(DEFAULT_BLIND_FIELDS)
>>> line = {"index": 3, "source": {"format": "mini-swe-agent-1.1", "ref": "results_claude_10/x.traj.json"},
...         "stats": {"tokens": 10, "cost_usd": 0.2}, "metadata": {"model": "claude", "llm_config": {"t": 1}, "score": 1}}
>>> withhold_line(line, fields, lane="C")
{'lane': 'C', 'stats': {'tokens': 10}, 'metadata': {'score': 1}}
>>> [lane_label(n) for n in (0, 1, 25, 26, 27)]
['A', 'B', 'Z', 'AA', 'AB']
>>> lane_position("AB"), lane_position("a"), lane_position("3")
(27, None, None)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# What a project withholds unless its admins choose otherwise.
DEFAULT_BLIND_FIELDS = (
    "source",
    "cost",
    "metadata:model",
    "metadata:agent",
    "metadata:config",
    "metadata:run",
    "metadata:checkpoint",
)
PLAIN_FIELDS = {"source": "the rollout's source (format and file or ref)", "cost": "its cost (USD)"}
_WORD = re.compile(r"[a-z0-9_]{1,40}\Z")
_LABEL = re.compile(r"[A-Z]{1,4}\Z")


class BlindFieldError(ValueError):
    """A blind field name that is not `source`, `cost` or `metadata:<word>`."""


@dataclass(frozen=True)
class BlindFields:
    source: bool = False
    cost: bool = False
    metadata_words: tuple[str, ...] = ()

    @classmethod
    def parse(cls, names: Iterable[str]) -> BlindFields:
        source = cost = False
        words: list[str] = []
        for raw in names:
            name = str(raw).strip().lower()
            if name == "source":
                source = True
            elif name == "cost":
                cost = True
            elif name.startswith("metadata:") and _WORD.match(name[len("metadata:") :]):
                words.append(name[len("metadata:") :])
            else:
                raise BlindFieldError(f"unknown blind field {str(raw)[:60]!r}: use source, cost or metadata:<word>")
        return cls(source, cost, tuple(dict.fromkeys(words)))

    @property
    def names(self) -> list[str]:
        return [n for n, on in (("source", self.source), ("cost", self.cost)) if on] + [
            f"metadata:{w}" for w in self.metadata_words
        ]

    def hides_key(self, key: object) -> bool:
        """A metadata or stats key withheld: it names one of the words (or is the cost)."""
        name = str(key).lower()
        return (self.cost and "cost" in name) or any(word in name for word in self.metadata_words)


def withheld(mapping: object, fields: BlindFields) -> object:
    """`mapping` (metadata or stats) without the keys the blind fields name, at any depth."""
    if isinstance(mapping, Mapping):
        return {k: withheld(v, fields) for k, v in mapping.items() if not fields.hides_key(k)}
    if isinstance(mapping, list):
        return [withheld(v, fields) for v in mapping]
    return mapping


def withhold_line(rollout: dict[str, Any], fields: BlindFields, *, lane: str) -> dict[str, Any]:
    """A rollout in its gagar-group/1 shape as a blind judge may see it: its index replaced
    by its lane label, the blind fields left out (the trajectory text is kept as it is)."""
    out: dict[str, Any] = {"lane": lane}
    for key, value in rollout.items():
        if key == "index" or (key == "source" and fields.source):
            continue
        out[key] = withheld(value, fields) if key in ("metadata", "stats") else value
    return out


def lane_label(position: int) -> str:
    """The label of the lane at `position` (from 0) in a blind judge's order: A..Z, AA, AB..."""
    label = ""
    position += 1
    while position:
        position, rest = divmod(position - 1, 26)
        label = chr(ord("A") + rest) + label
    return label


def lane_position(label: str) -> int | None:
    """`lane_label`'s inverse; None for anything that is not a label (digits, lower case)."""
    if not isinstance(label, str) or not _LABEL.match(label):
        return None
    position = 0
    for ch in label:
        position = position * 26 + (ord(ch) - ord("A") + 1)
    return position - 1
