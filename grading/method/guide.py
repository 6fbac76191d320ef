"""The rubric guide: what the tiers T1, T2, T3 and the five rubric dimensions mean. Pure: no Django.

One guide per project (grading.models.RubricGuide stores a project's edits); where a
project has not edited it, `DEFAULT_GUIDE` is the method's own text (docs/method.md §2):
the tier meanings are `grading.method.tiers.TIER_DESCRIPTIONS` and the dimensions are
`RUBRIC` below, each with the label, sentence and example defined here
(the one place they are defined). The same guide is shown to people on the judge panel,
written into the LLM grader's system prompt (grading.grader.llm.system_prompt) and so
into the grader SFT export, which replays that prompt.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from grading.method.tiers import TIER_DESCRIPTIONS, TIERS

# The rubric: the five dimensions every judgment scores, by the key scores are stored under.
RUBRIC = ("solution_fit", "implementation_precision", "minimality", "side_effect_avoidance", "codebase_consistency")
SCORE_RANGE = (1, 5)  # scores at or below LOW_SCORE need evidence
LOW_SCORE = 2

# Limits of an edited guide (a prompt is paid for per token; a tooltip must stay readable).
MAX_TIER_CHARS = 600
MAX_DIMENSION_CHARS = 600


@dataclass(frozen=True)
class Dimension:
    name: str  # the key scores are stored under (RUBRIC)
    label: str  # as people read it
    meaning: str  # one sentence: what a 5 looks like and what pulls the score down
    example: str  # one concrete example


DEFAULT_DIMENSIONS: dict[str, Dimension] = {
    d.name: d
    for d in (
        Dimension(
            "solution_fit",
            "Solution fit",
            "Fixes the problem the task states, at its cause, for the cases the task implies, not only the tested one.",
            "A fix in the parser that handles every malformed header scores 5; special-casing the one header the "
            "failing test sends scores 2.",
        ),
        Dimension(
            "implementation_precision",
            "Implementation precision",
            "The change is correct in its details: edge cases, error handling, types and off-by-one boundaries.",
            "Checking `len(items) == 0` before indexing scores higher than catching the IndexError it would raise.",
        ),
        Dimension(
            "minimality",
            "Minimality of change",
            "Changes only what the fix needs; no rewrites, reformatting or unrelated edits.",
            "A three-line fix scores 5; the same fix plus a reformatted module and renamed helpers scores 2.",
        ),
        Dimension(
            "side_effect_avoidance",
            "Side-effect avoidance",
            "Leaves behaviour the task did not ask to change intact, and never weakens or deletes tests or checks.",
            "Loosening an assertion or skipping a failing test to get green scores 1.",
        ),
        Dimension(
            "codebase_consistency",
            "Codebase consistency",
            "Follows the repository's conventions: its helpers, naming, error types and style.",
            "Reusing the module's existing `_normalize()` helper scores higher than pasting a new copy of it.",
        ),
    )
}
if tuple(DEFAULT_DIMENSIONS) != RUBRIC:  # checked at import, also under python -O
    raise RuntimeError("one default text per rubric dimension, in RUBRIC's order")


@dataclass(frozen=True)
class Guide:
    """A project's guide: tier code -> meaning, and the dimensions in RUBRIC's order."""

    tiers: dict[str, str] = field(default_factory=lambda: dict(TIER_DESCRIPTIONS))
    dimensions: tuple[Dimension, ...] = tuple(DEFAULT_DIMENSIONS.values())

    def tier(self, code: str) -> str:
        return self.tiers.get(code, TIER_DESCRIPTIONS[code])

    def dimension(self, name: str) -> Dimension:
        return next((d for d in self.dimensions if d.name == name), DEFAULT_DIMENSIONS[name])

    @property
    def labels(self) -> dict[str, str]:
        return {d.name: d.label for d in self.dimensions}


DEFAULT_GUIDE = Guide()


class GuideError(ValueError):
    """An edited guide that cannot be stored; `errors` maps a field name to what is wrong."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def _clean(raw: object, limit: int, name: str, errors: dict[str, Any]) -> str:
    text = " ".join(str(raw or "").replace("\x00", "").split())
    if not text:
        errors[name] = "must not be empty"
    elif len(text) > limit:
        errors[name] = f"at most {limit} characters, got {len(text)}"
    return text


def guide_from_fields(data: Mapping[str, Any]) -> Guide:
    """A guide from form fields `tier-T1`.., `meaning-<dimension>`, `example-<dimension>`; GuideError naming each bad field.

    Labels are not editable: they name the stored scores. Whitespace runs become one space
    (the guide is one line each in the prompt)."""
    errors: dict[str, str] = {}
    tiers = {t: _clean(data.get(f"tier-{t}"), MAX_TIER_CHARS, f"tier-{t}", errors) for t in TIERS}
    dimensions = tuple(
        Dimension(
            name,
            DEFAULT_DIMENSIONS[name].label,
            _clean(data.get(f"meaning-{name}"), MAX_DIMENSION_CHARS, f"meaning-{name}", errors),
            _clean(data.get(f"example-{name}"), MAX_DIMENSION_CHARS, f"example-{name}", errors),
        )
        for name in RUBRIC
    )
    if errors:
        raise GuideError(errors)
    return Guide(tiers=tiers, dimensions=dimensions)


def guide_from_json(tiers: dict[str, Any] | None, dimensions: dict[str, Any] | None) -> Guide:
    """The guide as stored (JSON), anything missing or malformed taken from the defaults."""
    tiers = tiers if isinstance(tiers, dict) else {}
    dimensions = dimensions if isinstance(dimensions, dict) else {}
    out = []
    for name in RUBRIC:
        stored = dimensions.get(name)
        if not isinstance(stored, dict):
            stored = {}
        default = DEFAULT_DIMENSIONS[name]
        out.append(
            Dimension(
                name, default.label, str(stored.get("meaning") or default.meaning), str(stored.get("example") or default.example)
            )
        )
    return Guide(tiers={t: str(tiers.get(t) or TIER_DESCRIPTIONS[t]) for t in TIERS}, dimensions=tuple(out))


def guide_json(guide: Guide) -> tuple[dict[str, Any], dict[str, Any]]:
    """(tiers, dimensions) as stored."""
    return dict(guide.tiers), {d.name: {"meaning": d.meaning, "example": d.example} for d in guide.dimensions}


def describe_tiers(guide: Guide = DEFAULT_GUIDE) -> str:
    """The tiers in one line, as the grader's prompt gives them: "T1 = mergeable and precise; T2 = ..."."""
    return "; ".join(f"{tier} = {guide.tier(tier)}" for tier in TIERS)


def describe_dimensions(guide: Guide = DEFAULT_GUIDE) -> str:
    """One line per rubric dimension, as the grader's prompt gives them."""
    return "\n".join(f"  - {d.name} ({d.label}): {d.meaning} Example: {d.example}" for d in guide.dimensions)


def guide_version(guide: Guide) -> str:
    """The guide's version as a grader name carries it: "" for the method's default text, else
    "g" and 8 hex digits of its text's hash -- the same text is the same version, whatever
    edits and resets came between, so a grader's name changes exactly when its prompt does."""
    if guide == DEFAULT_GUIDE:
        return ""
    digest = hashlib.blake2b(json.dumps(guide_json(guide), sort_keys=True).encode(), digest_size=4).hexdigest()
    return f"g{digest}"
