"""verl rollout dumps (`trainer.rollout_data_dir/{step}.jsonl`) -> attempts. Pure.

verl's `RayPPOTrainer._dump_generations` writes one JSON object per sample of the batch:
`input` (the decoded prompt), `output` (the decoded response), `score` (the sum of the
token-level scores), `step` (the trainer's global step), `gts` in newer versions (the
ground truth), every reward extra whose list has one value per sample (`acc`, `pred`,
... and, where the reward function or trainer adds it, `uid` and `request_id`).

**Groups.** GRPO samples n responses per prompt under one `uid`: rows sharing a `uid` are
one group; a dump without `uid` groups the rows sharing the same `input` within a step.
The task's instance id is `prompt-<first 16 hex of SHA-256 of the input>`, so the same
prompt is the same task at every step; the group's uid is `<verl uid>@<step>` or
`prompt-<hash>@<step>`.

**Steps.** A row goes to the step verl wrote in it (`step`), else the number the file is
named after (`12.jsonl`), else the import's step: a dump imported after training lands
on the steps it was trained at, as the live verl adapter would have posted it.

**Reward.** `score` 0 or 1 is the reward. Any other score is refused (the whole file, the
line named) unless a reward threshold is given: then score >= threshold passes.

>>> row = {"input": "1+1?", "output": "2", "score": 1.0, "step": 3}
>>> a = attempt_from_row(row, ref="3.jsonl#line-1", threshold=None)
>>> (a.instance_id, a.step, a.messages[1]["content"], a.own_verdict.status)
('prompt-cfe29f43bcc21dd4', 3, '2', 'resolved')
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from grading.ingest.importers.common import RESOLVED, UNRESOLVED, Attempt, ImportedVerdict, SourceError, number, text_of

FORMAT = "verl"
_UID = re.compile(r"[A-Za-z0-9_:.-]{1,200}")  # verl's uids are uuid4 strings; anything else is hashed
_EXTRA_TEXT = 2000  # characters of a text reward extra kept in metadata
_FIXED = frozenset({"input", "output", "score", "step", "gts", "uid", "request_id"})


def is_row(obj: Any) -> bool:
    return isinstance(obj, dict) and "input" in obj and "output" in obj and "score" in obj


def step_of_name(name: str) -> int | None:
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return int(stem) if stem.isdigit() and len(stem) < 10 else None


def prompt_id(text: str) -> str:
    return "prompt-" + hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()[:16]


def group_stem(row: dict[str, Any]) -> str:
    """The group's uid without its step: verl's `uid`, else the prompt's id."""
    uid = row.get("uid")
    if isinstance(uid, (str, int)) and not isinstance(uid, bool):
        uid = str(uid)
        return uid if _UID.fullmatch(uid) and uid not in (".", "..") else "uid-" + hashlib.sha256(uid.encode()).hexdigest()[:16]
    return prompt_id(text_of(row.get("input")))


def check_score(row: dict[str, Any], threshold: float | None) -> str:
    """'' if the row's score can be a reward, else why not (the caller names the file and line)."""
    score = number(row.get("score"))
    if score is None:
        return f"score must be a number, got {row.get('score')!r:.40}"
    if threshold is None and score not in (0, 1):
        return (
            f"score {score!r} is not 0 or 1; give a reward threshold (--reward-threshold, or the field on the "
            "import page / API) to count score >= threshold as passing"
        )
    return ""


def _extra(value: Any) -> Any:
    if isinstance(value, str):
        return value[:_EXTRA_TEXT]
    if isinstance(value, bool) or value is None or number(value) is not None:
        return value
    return None  # lists, objects, NaN: not kept


def attempt_from_row(row: dict[str, Any], *, ref: str, threshold: float | None, default_step: int | None = None) -> Attempt:
    """One dump row -> a text-only attempt (no patch): the prompt as the user's turn, the response as the assistant's."""
    if not is_row(row):
        raise SourceError("not a verl rollout row (needs input, output and score)")
    problem = check_score(row, threshold)
    if problem:
        raise SourceError(problem)
    checked = number(row["score"])
    assert checked is not None  # check_score said it is a number
    score = float(checked)
    passed = score >= threshold if threshold is not None else score == 1
    if score in (0, 1) and passed == (score == 1):
        rule = f"score {score:g}"  # the same words with or without a threshold: importing again is `unchanged`
    else:
        rule = f"score {score:g} {'>=' if passed else '<'} threshold {threshold:g}"
    prompt, response = text_of(row.get("input")), text_of(row.get("output"))
    step = row.get("step")
    step = step if isinstance(step, int) and not isinstance(step, bool) and step >= 0 else default_step
    metadata: dict[str, Any] = {"score": score, "text_only": True}
    extras = {str(k): _extra(v) for k, v in row.items() if k not in _FIXED}
    extras = {k: v for k, v in extras.items() if v is not None}
    if extras:
        metadata["reward_extra"] = extras
    for key, name in (("gts", "ground_truth"), ("uid", "verl_uid"), ("request_id", "request_id")):
        value = _extra(row.get(key))
        if value is not None:
            metadata[name] = value
    return Attempt(
        instance_id=prompt_id(prompt),
        ref=ref,
        format=FORMAT,
        patch="",
        messages=[{"role": "user", "content": prompt}, {"role": "assistant", "content": response}],
        stats={"turns": 1},
        metadata=metadata,
        problem_statement=prompt,
        own_verdict=ImportedVerdict(status=RESOLVED if passed else UNRESOLVED, source="score", ref=ref, rule=rule),
        step=step,
    )
