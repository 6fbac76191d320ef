"""The judging form's fields, read from a POST (or an autosaved draft of one).

Field names, per passing rollout i: `tier-i` (T1/T2/T3), `rank-i` (whole number, blank to
derive that rollout's rank from its tier, each rollout on its own), `cheat-i` (present =
flagged), `note-i`, `score-i-<dimension>` (1-5, blank to skip); and `note` for the group
(`reason` too, on the adjudication form). The page's inputs carry these names, the draft stores
them as they are, and the service gets `ItemInput`s. Any other field (an odd name like
`tier-²`, a NUL) is ignored: it is neither stored in a draft nor read back.
"""

from __future__ import annotations

import re

from grading.formats import params
from reviews.services.judgments import RUBRIC, ItemInput, JudgmentError

# The judging fields' names: ASCII digits only (str.isdigit() also takes '²', which int() refuses).
_FIELD = re.compile(r"(?:note|reason|(?:tier|rank|cheat|note)-[0-9]{1,6}|score-[0-9]{1,6}-[a-z_]{1,40})\Z")


def _int_or_none(value, field: str, errors: dict, what: str) -> int | None:
    value = (value or "").strip()
    if not value:
        return None
    try:
        return params.whole(value, field, minimum=-params.MAX_INT, maximum=params.MAX_INT)
    except params.ParamError:
        errors[field] = f"{what} must be a whole number, got {value[:20]!r}"
        return None


def parse_judgment(data, passing: list[int], names: dict[int, str] | None = None) -> tuple[list[ItemInput], str]:
    """ItemInputs for every passing rollout; JudgmentError naming each bad field. `data` has
    the stored field names (a blind judge's form mapped back: reviews.selectors.lanes);
    `names`: how messages name a rollout (their lane labels), "#<index>" without."""
    errors: dict[str, str] = {}
    items = []
    for index in passing:
        name = names.get(index, "?") if names is not None else f"#{index}"
        tier = (data.get(f"tier-{index}") or "").strip()
        if not tier:
            errors[f"tier-{index}"] = f"rollout {name} passed and needs a tier"
            continue
        rank = _int_or_none(data.get(f"rank-{index}"), f"rank-{index}", errors, f"rollout {name}: a rank")
        scores = {}
        for dimension in RUBRIC:
            score = _int_or_none(
                data.get(f"score-{index}-{dimension}"),
                f"score-{index}-{dimension}",
                errors,
                f"rollout {name}: the {dimension} score",
            )
            if score is not None:
                scores[dimension] = score
        cheat = str(data.get(f"cheat-{index}", "")).lower() in ("on", "1", "true", "yes")
        items.append(
            ItemInput(
                index=index, tier=tier, rank=rank, cheat=cheat, scores=scores, note=(data.get(f"note-{index}") or "").strip()
            )
        )
    if errors:
        raise JudgmentError(errors)
    return items, (data.get("note") or "").strip()


def draft_fields(data) -> dict[str, str]:
    """The judging fields of a POST, as the draft keeps them (nothing else is stored)."""
    keep = {}
    for key in data:
        if isinstance(key, str) and _FIELD.match(key):
            value = data.get(key)
            if isinstance(value, str) and "\x00" not in value:
                keep[key] = value[:5000]
    return keep
