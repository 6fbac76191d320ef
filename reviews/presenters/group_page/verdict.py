"""The grader's verdict as this person's group page shows it: none while they judge blind or
browse outside an assignment (no grader field is loaded then), the reveal to log the first
time a person browsing is shown one, credit settled without a model call, each lane's grade
with what it cites, the checks the grader ran and the differential matrix among them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grading.grader.differential import GOLD, DifferentialMatrix
from grading.models import Group
from grading.selectors import verdicts as stored
from reviews.presenters.group_page.diffs import InlineDiffs
from reviews.presenters.group_page.evidence import evidence_links, turn_weight_links
from reviews.presenters.group_page.lanes import grade_view
from reviews.selectors.blind import needs_browse_reveal
from reviews.selectors.lanes import Lanes
from reviews.selectors.review_context import ReviewContext


@dataclass(frozen=True)
class ShownVerdict:
    verdict: Any  # None where it is hidden (or there is none)
    grades: dict[int, Any] = field(default_factory=dict)  # rollout index -> the verdict's grade of it
    settled: bool = False  # credit settled without a model call (grading.verdicts.identical), said in place of a verdict
    browse_reveal: Any = None  # the verdict a person browsing is shown for the first time


def shown_verdict(*, user, group: Group, review: ReviewContext, browse) -> ShownVerdict:
    browse_reveal = None
    if review.blind or browse is not None:  # no grader field is loaded, so none can reach the HTML
        verdict, grades = None, {}
    else:
        verdict, grades = stored.latest_verdict(group)
        if needs_browse_reveal(user=user, group=group, verdict=verdict):
            browse_reveal = verdict
    if browse is not None:  # its one query said (a verdict hidden from this person says nothing)
        settled = browse.settled
    else:
        settled = not review.blind and verdict is None and group.to_judge and stored.settled_without_grader(group) is not None
    return ShownVerdict(verdict=verdict, grades=grades, settled=settled, browse_reveal=browse_reveal)


def grade_fields(group: Group, grade, lanes: Lanes, key: str, weights: list | None, inline: InlineDiffs) -> dict:
    """A lane's grade, its citations linked where they open on this page (`inline`: which
    lanes' patches and scratch files load on demand) and its turn weights."""
    return {
        "grade": grade_view(grade),
        "evidence_links": evidence_links(group, grade.evidence, lanes, inline.deferred, inline.scratch) if grade else (),
        "turn_weights": turn_weight_links(group, key, weights),
    }


def verdict_checks(verdict, lanes: Lanes) -> tuple[dict, ...]:
    """The commands the shown verdict's grader ran (evidence check:<n>); none while it is hidden.
    A cell of the differential matrix says which, in the person's names for the rollouts."""
    matrix = _matrix(verdict)
    cells = {c.check: c for c in matrix.cells if c.check is not None} if matrix is not None else {}
    return tuple(
        {
            "number": c.number,
            "cell": cells[c.number].describe(lanes.name) if c.number in cells else "",
            "lane": lanes.key(c.rollout.index),
            "lane_name": lanes.name(c.rollout.index),
            "command": c.command,
            "exit_status": c.exit_status,
            "seconds": c.seconds,
            "output": c.output,
            "truncated": c.truncated,
            "killed": c.killed,
            "sandbox": c.sandbox,
        }
        for c in (stored.verdict_checks(verdict) if verdict is not None else ())
    )


def differential_of(verdict, lanes: Lanes) -> dict | None:
    """The shown verdict's differential matrix (grading.grader.differential), stored in its raw:
    the divergences in words, each linked to its check, and the matrix as rows of cells; None
    while the verdict is hidden or its grader ran none. Read from the verdict already loaded."""
    matrix = _matrix(verdict)
    if matrix is None or not matrix.cells:
        return None

    def name(who) -> str:
        return "gold" if who == GOLD else lanes.name(who)

    def cell(tests_of, state) -> dict:
        found = None if tests_of == state else matrix.cell(tests_of, state)
        if found is None:
            return {"label": "", "outcome": "none", "title": ""}
        href = f"#check-{found.check}" if found.check is not None else ""
        title = found.describe(lanes.name) + (f" ({found.why})" if found.why else "")
        return {"label": found.outcome, "outcome": found.outcome.replace(" ", "-"), "href": href, "title": title}

    order = sorted(matrix.participants, key=lambda p: (p == GOLD, name(p)))  # as the person's lanes read
    rows = [p for p in order if p in matrix.tests]
    return {
        "columns": tuple(name(p) for p in order),
        "rows": tuple({"name": name(r), "cells": tuple(cell(r, p) for p in order)} for r in rows),
        "sentences": tuple(
            {"text": s.text, "check": s.check, "href": f"#check-{s.check}" if s.check is not None else ""}
            for s in matrix.sentences(lanes.name)
        ),
        "ran": sum(1 for c in matrix.cells if c.check is not None),
        "not_run": len(matrix.not_run),
        "stopped": matrix.stopped,
    }


def _matrix(verdict) -> DifferentialMatrix | None:
    """The differential matrix the verdict stored in its raw (loaded with it), if any."""
    raw = getattr(verdict, "raw", None) if verdict is not None else None
    return DifferentialMatrix.from_dict(raw.get("differential")) if isinstance(raw, dict) else None
