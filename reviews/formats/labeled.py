"""Labeled groups for trainers and for grader fine-tuning. Pure: no database.

Two products of one group's human judgments:

- `final_label()`: the people's last word on a group. An adjudication, where there is
  one, is the label ("adjudication"); otherwise one review is the label ("single") and
  two or more are combined ("median"): tiers and ranks by `reviews.stats.consensus.consensus`,
  a cheat flag when more than half of the reviewers who judged the rollout set it (a tie
  does not flag, as the lower median sends ties to the better tier), and each rubric
  score as the lower median of the reviewers who gave it.

- `sft_example()`: one chat example (OpenAI fine-tuning format with tools) that replays
  the LLM grader's live conversation (grading.grader.llm) turn by turn: its system prompt,
  with the project's rubric guide (the workspace's `guide`) in it; its opening user
  message (rollout indexes only); assistant turns that CALL the workspace tools
  (`reading_rounds()`: get_task and list_rollouts, then read_patch and test_outcomes for
  every rollout, each round as parallel calls), each call answered by a `tool` message
  with the JSON the live tool returns (grading.grader.tools.call_tool, the grader's own
  entry point, serialised as the grader serialises it); and a last assistant turn that
  calls `submit_verdict` with the label. So the model learns to read before it submits,
  and the messages are exactly the requests the grader would send.
  The verdict must pass the grader's schema, so a label without all five rubric scores on
  every passing rollout gives no example (scores are not invented). Evidence comes only
  from citations people wrote in their notes and that resolve against the group
  (`citations()`); a judgment without one carries no evidence rather than a made-up one.

>>> bob = {"reviewer": "bob", "kind": "review", "items": [
...     {"index": 0, "tier": "T1", "rank": 1, "cheat": False, "scores": {"minimality": 5}, "note": ""},
...     {"index": 3, "tier": "T2", "rank": 2, "cheat": True, "scores": {"minimality": 2}, "note": "turn 4"}]}
>>> dan = {"reviewer": "dan", "kind": "review", "items": [
...     {"index": 0, "tier": "T1", "rank": 1, "cheat": False, "scores": {"minimality": 4}, "note": ""},
...     {"index": 3, "tier": "T3", "rank": 2, "cheat": False, "scores": {}, "note": ""}]}
>>> label = final_label([bob, dan])
>>> label["source"], [(i["index"], i["tier"], i["rank"], i["cheat"], i["scores"]) for i in label["items"]]
('median', [(0, 'T1', 1, False, {'minimality': 4}), (3, 'T2', 2, False, {'minimality': 2})])
>>> [(c["kind"], c["locator"]) for c in citations("keeps `w.py:12` and turn #4; see log:3 and t/test_w.py::test_y.", 3)]
[('patch', 'w.py:12'), ('test', 'log:3'), ('test', 't/test_w.py::test_y'), ('turn', '4')]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from statistics import median_low
from typing import Any, NoReturn

from grading.grader.base import Evidence
from grading.grader.evidence import resolve
from grading.grader.llm import SUBMIT, opening_message, system_prompt_for, tool_specs
from grading.grader.llm import VERSION as GRADER_PROTOCOL_VERSION
from grading.grader.tools import call_tool
from grading.grader.workspace import GroupWorkspace
from grading.method.guide import RUBRIC, SCORE_RANGE
from reviews.stats.consensus import consensus

FORMAT = "gagar-labeled-group/1"
# /2: the tools are called by the assistant and answered by tool messages (the live
# protocol); /1 quoted their results inside the user message.
SFT_FORMAT = "gagar-grader-sft/2"
# The example's reading before it submits: one assistant turn per round, the round's calls
# made in parallel in this order. Group tools first, as the system prompt asks; then the
# per-rollout tools for every rollout (failing ones are the passing ones' background), by
# index, each rollout's tools in this order.
GROUP_TOOLS = ("get_task", "list_rollouts")
ROLLOUT_TOOLS = ("read_patch", "test_outcomes")


# --- the label ------------------------------------------------------------------------


def final_label(judgments: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The group's label from its judgments (oldest first), or None when there are none.

    Each judgment: {"reviewer", "kind": "review"|"adjudication", "items": [{"index",
    "tier", "rank", "cheat", "scores", "note"}]}. The label: {"source", "reviewers",
    "items": [{"index", "tier", "rank", "cheat", "scores", "notes"}]} by index, where
    `notes` are the contributing judgments' notes on that rollout (for citations).
    """
    adjudications = [j for j in judgments if j["kind"] == "adjudication"]
    reviews = [j for j in judgments if j["kind"] == "review"]
    if adjudications:
        source, chosen = "adjudication", adjudications[-1:]
    elif len(reviews) == 1:
        source, chosen = "single", reviews
    elif reviews:
        source, chosen = "median", reviews
    else:
        return None
    by_rater = [{item["index"]: item for item in j["items"]} for j in chosen]
    ranking = consensus([{i: (item["tier"], item["rank"]) for i, item in rater.items()} for rater in by_rater])
    items = []
    for index in sorted(ranking):
        said = [rater[index] for rater in by_rater if index in rater]
        tier, rank = ranking[index]
        scores = {}
        for name in RUBRIC:
            given = [s["scores"][name] for s in said if isinstance(s.get("scores"), dict) and name in s["scores"]]
            if given:
                scores[name] = median_low(given)
        items.append(
            {
                "index": index,
                "tier": tier,
                "rank": rank,
                "cheat": 2 * sum(bool(s["cheat"]) for s in said) > len(said),
                "scores": scores,
                "notes": [s["note"] for s in said if s.get("note")],
            }
        )
    return {"source": source, "reviewers": [j["reviewer"] for j in chosen], "items": items}


def audited_cheats(decisions: list[dict[str, Any]]) -> dict[int, bool]:
    """Rollout index -> the latest audited cheat decision (confirmed or overturned).

    The same rule the advantage engine applies: of a rollout's decided signals, the most
    recently decided one is in force. Decisions: {"index", "confirmed", "decided_at", "id"}.
    """
    decided = [d for d in decisions if d["confirmed"] is not None and d["decided_at"] is not None]
    latest: dict[int, bool] = {}
    for d in sorted(decided, key=lambda d: (d["decided_at"], d["id"])):
        latest[d["index"]] = bool(d["confirmed"])
    return latest


# --- citations in people's notes ----------------------------------------------------------

# One run of spaces before the number, or one on each side of a "#"/":": two runs back to back
# (`\s*[#:]?\s*`) split N spaces N ways on a failed match, 5.4 s for "turn" + 16,000 spaces.
_TURN = re.compile(r"\bturns?\s*(?:[#:]\s*)?(\d+)\b", re.IGNORECASE)
_LOG = re.compile(r"^log:(\d+)$")
_PATCH = re.compile(r"^(.+?):(\d+)$")
_EDGES = "()[]{}<>\"'`,;!?"


def citations(note: str, rollout: int) -> list[dict[str, Any]]:
    """Candidate citations in a person's note on `rollout`, in the grader's evidence shape.

    Recognised: a test id with "::" (pytest style), "log:N" (test log line), "path:line"
    (a patch line, new side; "b/path:line" too), "turn N" / "turn #N" (0-based position,
    as the group page numbers turns). Candidates still have to resolve (`cited_evidence`).
    """
    found: list[tuple[str, str]] = []
    for raw in (note or "").split():
        token = raw.strip(_EDGES).rstrip(".:")
        if not token:
            continue
        if "::" in token:
            found.append(("test", token))
        elif _LOG.match(token):
            found.append(("test", token))
        elif (match := _PATCH.match(token)) and not token.lower().startswith(("turn", "http:", "https:")):
            path = match.group(1)
            found.append(("patch", f"{path}:{match.group(2)}"))
            if path.startswith("b/"):
                found.append(("patch", f"{path[2:]}:{match.group(2)}"))
    found.extend(("turn", m.group(1)) for m in _TURN.finditer(note or ""))
    seen: set[tuple[str, str]] = set()
    out = []
    for kind, locator in found:
        if (kind, locator) not in seen:
            seen.add((kind, locator))
            out.append({"kind": kind, "rollout": rollout, "locator": locator})
    return out


def cited_evidence(workspace: GroupWorkspace, index: int, notes: list[str]) -> list[dict[str, Any]]:
    """Evidence items for rollout `index`: the citations in `notes` that resolve, each with
    the note it came from. Unresolvable ones are dropped: they would make a verdict invalid."""
    evidence: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for note in notes:
        for c in citations(note, index):
            key = (c["kind"], c["locator"])
            if key in seen or resolve(workspace, Evidence(c["kind"], index, c["locator"])) is not None:
                continue
            seen.add(key)
            evidence.append({**c, "note": note})
    return evidence


# --- the SFT example ----------------------------------------------------------------------


def dense_ranks(ranks: dict[int, int]) -> dict[int, int]:
    """1, 2, ... in the same order, ties kept: the grader accepts ranks up to the number of passing rollouts."""
    levels = sorted(set(ranks.values()))
    return {index: levels.index(rank) + 1 for index, rank in ranks.items()}


def verdict_arguments(
    workspace: GroupWorkspace, label: dict[str, Any], cheats: dict[int, bool] | None = None
) -> dict[str, Any] | None:
    """submit_verdict's arguments carrying the label, or None when the label cannot fill the
    grader's schema (a passing rollout without a tier or without all rubric scores).

    `cheats` (audited decisions) override the judgments' cheat flags: an auditor looked at
    exactly that question.
    """
    cheats = cheats or {}
    items = {item["index"]: item for item in label["items"]}
    passing = [r.index for r in workspace.passing]
    if not passing or set(items) != set(passing):
        return None
    low, high = SCORE_RANGE
    for index in passing:
        scores = items[index]["scores"]
        if any(
            not isinstance(scores.get(name), int) or isinstance(scores.get(name), bool) or not low <= scores[name] <= high
            for name in RUBRIC
        ):
            return None
    ranks = dense_ranks({i: items[i]["rank"] for i in passing})
    judgments = [
        {
            "rollout": index,
            "tier": items[index]["tier"],
            "rank": ranks[index],
            "scores": {name: items[index]["scores"][name] for name in RUBRIC},
            "cheat": cheats.get(index, bool(items[index]["cheat"])),
            "evidence": cited_evidence(workspace, index, items[index]["notes"]),
        }
        for index in sorted(passing, key=lambda i: (ranks[i], i))
    ]
    return {"judgments": judgments}


def _dumps(value: object) -> str:
    # As the grader writes tool results into its conversation (grading.grader.llm).
    return json.dumps(value, ensure_ascii=False)


def reading_rounds(workspace: GroupWorkspace) -> list[list[tuple[str, dict[str, Any]]]]:
    """The tool calls the example makes before submitting: (name, arguments) per call, one list per assistant turn."""
    return [
        [(name, {}) for name in GROUP_TOOLS],
        [(name, {"rollout": r.index}) for r in workspace.rollouts for name in ROLLOUT_TOOLS],
    ]


def _tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": _dumps(arguments)}}


def conversation(workspace: GroupWorkspace, verdict: dict[str, Any]) -> list[dict[str, Any]]:
    """The grader's conversation for this group, ending in a submit_verdict call with `verdict`.

    Each message is what the grader itself keeps in its history (and sends back with the
    next request): assistant turns with content "" and their tool calls (ids call_0,
    call_1, ... in order), then one tool message per call holding `call_tool`'s result.
    """
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt_for(workspace)},
        {"role": "user", "content": opening_message(workspace)},
    ]
    next_id = 0
    for round_ in reading_rounds(workspace):
        calls = []
        for name, arguments in round_:
            calls.append((_tool_call(f"call_{next_id}", name, arguments), name, arguments))
            next_id += 1
        messages.append({"role": "assistant", "content": "", "tool_calls": [call for call, _, _ in calls]})
        messages.extend(
            {"role": "tool", "tool_call_id": call["id"], "content": _dumps(call_tool(workspace, name, arguments))}
            for call, name, arguments in calls
        )
    messages.append({"role": "assistant", "content": "", "tool_calls": [_tool_call(f"call_{next_id}", SUBMIT, verdict)]})
    return messages


def sft_example(
    workspace: GroupWorkspace,
    label: dict[str, Any],
    *,
    cheats: dict[int, bool] | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any] | None:
    """One chat example (OpenAI fine-tuning shape: messages, tools, plus metadata), or None
    when the label does not fill the verdict schema. Deterministic for the same group and judgments."""
    arguments = verdict_arguments(workspace, label, cheats)
    if arguments is None:
        return None
    return {
        "messages": conversation(workspace, arguments),
        "tools": tool_specs(workspace),
        "metadata": {
            "format": SFT_FORMAT,
            "grader_protocol": GRADER_PROTOCOL_VERSION,
            "label": label["source"],
            "reviewers": label["reviewers"],
            **(metadata or {}),
        },
    }


class UnreadTrajectory(Sequence[Any]):
    """A trajectory the export does not load (it can be 100k+ tokens): its length only,
    which is all `list_rollouts` and turn citations read. Reading a message fails loudly."""

    def __init__(self, length: int) -> None:
        self._length = length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, position: Any) -> NoReturn:
        raise LookupError("the labeled-groups export does not load trajectories")
