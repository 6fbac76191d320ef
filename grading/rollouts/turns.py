"""Normalise trajectory messages (OpenAI chat, mini-swe-agent, SWE-agent) into turns to show.

Pure: no Django. Text stays text; escaping is the template's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_FENCED = re.compile(r"```(?:bash|sh|shell)?\s*\n(.*?)```", re.DOTALL)


@dataclass
class Turn:
    position: int
    role: str
    text: str = ""
    thought: str = ""
    action: str = ""
    observation: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    name: str = ""
    fold: str = ""  # the observation's head where a page shows it folded (fold_head), else ""

    @property
    def size(self) -> int:
        return len(self.text) + len(self.thought) + len(self.action) + len(self.observation)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI content parts
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or part.get("content") or ""))
            else:
                parts.append(str(part))
        return "\n".join(p for p in parts if p)
    return str(content)


def to_turn(position: int, message: dict[str, Any]) -> Turn:
    role = str(message.get("role") or "unknown")
    turn = Turn(position=position, role=role, name=str(message.get("name") or ""))
    turn.text = _text(message.get("content"))
    turn.thought = _text(message.get("thought"))
    turn.action = _text(message.get("action"))
    turn.observation = _text(message.get("observation"))
    calls = message.get("tool_calls") or []
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict):
                fn = call.get("function")
                if not isinstance(fn, dict):
                    fn = {}
                turn.tool_calls.append(
                    {
                        "name": str(fn.get("name") or call.get("name") or "tool"),
                        "arguments": _text(fn.get("arguments") or call.get("arguments")),
                    }
                )
    if role == "assistant" and not turn.action and not turn.tool_calls:
        # mini-swe-agent-1: the command is the fenced bash block of the assistant message.
        match = _FENCED.search(turn.text)
        if match:
            turn.action = match.group(1).strip()
    return turn


def to_turns(messages: list[Any], start: int = 0, stop: int | None = None) -> list[Turn]:
    stop = len(messages) if stop is None else min(stop, len(messages))
    return [to_turn(i, m) for i, m in enumerate(messages[start:stop], start=start) if isinstance(m, dict)]


FOLD_LINES = 24  # an observation longer than this many lines, or FOLD_CHARS characters, is folded
FOLD_CHARS = 2_000


def fold_head(text: str) -> str:
    """The head shown of a long observation ('' if it is short enough to show whole).

    >>> fold_head("ok")
    ''
    >>> fold_head("\\n".join(map(str, range(100)))).count("\\n") == FOLD_LINES - 1
    True
    """
    if len(text) <= FOLD_CHARS and text.count("\n") < FOLD_LINES:
        return ""
    head = text[:FOLD_CHARS]
    cut = -1
    for _ in range(FOLD_LINES):
        cut = head.find("\n", cut + 1)
        if cut < 0:
            return head
    return head[:cut]


def turn_text(turn: Turn) -> str:
    """All the text of a turn a search looks in: message, thought, action, observation, tool calls."""
    calls = "\n".join(f"{c.get('name', '')}\n{c.get('arguments', '')}" for c in turn.tool_calls)
    return "\n".join((turn.text, turn.thought, turn.action, turn.observation, turn.name, calls))


def find_turns(messages: list[Any], query: str, start: int = 0, limit: int = 40) -> tuple[list[Turn], int | None]:
    """The turns from `start` on whose text contains `query`, ignoring case, at most `limit`
    of them, and where to continue (None when none is left).

    A plain substring test (str.casefold and `in`): no pattern is compiled from the query, so
    the cost is linear in the rollout's text whatever the query holds.

    >>> msgs = [{"role": "user", "content": "Fix it"}, {"role": "assistant", "content": "x", "action": "git log -p"}]
    >>> [t.position for t in find_turns(msgs, "GIT LOG")[0]]
    [1]
    """
    needle = query.casefold()
    found: list[Turn] = []
    for position in range(max(0, start), len(messages)):
        message = messages[position]
        if not isinstance(message, dict):
            continue
        turn = to_turn(position, message)
        if needle in turn_text(turn).casefold():
            if len(found) == limit:
                return found, position
            found.append(turn)
    return found, None
