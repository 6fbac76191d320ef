"""SWE-bench predictions (`.jsonl`, `.json` list or `{instance_id: {...}}`, `.pred`) -> attempts. Pure.

A prediction is `{instance_id, model_name_or_path, model_patch}`: a patch and no
trajectory, so its rollout has no messages. Its verdict comes from the same run's
per-instance `report.json` or run summary (see `common`); an empty or null patch is
failing, as the harness counts it.

>>> preds = predictions_of([{"instance_id": "o__r-1", "model_name_or_path": "m", "model_patch": ""}])
>>> a = attempt_from_prediction(preds[0], ref="p.jsonl#o__r-1")
>>> (a.patch, a.messages, a.rollout(verdict=None)["reward"])
('', [], 0.0)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from grading.ingest.importers.common import MAX_JSON_BYTES, Attempt, SourceError, size_refusal

FORMAT = "swebench-predictions"


def is_prediction(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("instance_id"), str) and "model_patch" in obj


def is_predictions(obj: Any) -> bool:
    if isinstance(obj, list):
        return bool(obj) and all(is_prediction(p) for p in obj)
    if isinstance(obj, dict) and obj:
        return all(isinstance(v, dict) and "model_patch" in v for v in obj.values())
    return False


def predictions_of(obj: Any) -> list[dict[str, Any]]:
    """A decoded predictions file (list, or dict keyed by instance id) -> list of predictions."""
    if isinstance(obj, list):
        return [p for p in obj if is_prediction(p)]
    if isinstance(obj, dict):
        return [
            {"instance_id": str(v.get("instance_id") or k), **{k2: v2 for k2, v2 in v.items() if k2 != "instance_id"}}
            for k, v in obj.items()
            if isinstance(v, dict)
        ]
    return []


def predictions_from_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Predictions of a JSON Lines file and a note per unreadable line (the rest still count)."""
    predictions, problems = [], []
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_JSON_BYTES:
            raise SourceError(size_refusal(path, size, MAX_JSON_BYTES))
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                problems.append(f"line {number}: truncated or invalid JSON ({exc})")
                continue
            if is_prediction(obj):
                predictions.append(obj)
            else:
                problems.append(f"line {number}: not a prediction (needs instance_id and model_patch)")
    if not predictions:
        raise SourceError("no predictions (lines with instance_id and model_patch)" + (f"; {problems[0]}" if problems else ""))
    return predictions, problems


def attempt_from_prediction(prediction: dict[str, Any], *, ref: str) -> Attempt:
    patch = prediction.get("model_patch")
    model = prediction.get("model_name_or_path")
    return Attempt(
        instance_id=prediction["instance_id"],
        ref=ref,
        format=FORMAT,
        patch=patch if isinstance(patch, str) else "",
        messages=[],
        metadata={"model": model} if isinstance(model, str) and model else {},
    )
