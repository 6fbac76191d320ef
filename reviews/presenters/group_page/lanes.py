"""One rollout's lane (its column on the group page) as this person's page shows it: its
stored fields, its grade where the verdict is shown, their own judging fields and whatever
else the page puts in it (its diff, open turns, a hit bar)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grading.models import Rollout
from grading.rollouts.invisible import find_invisible
from reviews.presenters.group_page.diffs import Diff
from reviews.selectors.lanes import Lanes

if TYPE_CHECKING:
    from grading.selectors.rollouts import RolloutWithPatch


@dataclass(frozen=True)
class GradeView:
    tier: str
    rank: int
    cheat: bool
    scores: dict
    uncited: bool = False  # speaks against the rollout without a citation (RolloutGrade.uncited)


@dataclass(frozen=True)
class Lane:
    """One rollout as this person's page shows it (their lane key and name; blind fields blanked)."""

    index: int
    lane: str
    lane_name: str
    outcome: str
    passed: bool | None
    reward: float | None
    exit_status: str
    n_messages: int
    tokens: int | None
    cost_usd: float | None
    patch_files: int
    patch_added: int
    patch_removed: int
    patch_size: int
    source_format: str
    source_ref: str
    test_outcomes: Any
    tests_passed: int
    tests_failed: int
    response_text: str | None
    cluster_info: Any = None
    drop: Any = None
    invisible: tuple[str, ...] = ()
    diff: Diff | None = None
    diff_deferred: bool = False
    open_turns: dict | None = None
    hit_bar: dict | None = None
    grade: GradeView | None = None
    evidence_links: tuple[dict, ...] = ()
    mine: dict = field(default_factory=dict)
    grader_says: str = ""
    others: tuple[dict, ...] = ()
    score_rows: tuple = ()
    errors: tuple[str, ...] = ()
    turn_weights: tuple[dict, ...] | None = None
    test_counts: dict = field(default_factory=dict)


def lane_of(rollout: Rollout, lanes: Lanes, **values) -> Lane:
    """A rollout's lane from its stored fields (after withhold_on_page blanked a blind judge's)."""
    return Lane(
        index=rollout.index,
        lane=lanes.key(rollout.index),
        lane_name=lanes.name(rollout.index),
        outcome=rollout.outcome,
        passed=rollout.passed,
        reward=rollout.reward,
        exit_status=rollout.exit_status,
        n_messages=rollout.n_messages,
        tokens=rollout.tokens,
        cost_usd=rollout.cost_usd,
        patch_files=rollout.patch_files,
        patch_added=rollout.patch_added,
        patch_removed=rollout.patch_removed,
        patch_size=len(getattr(rollout, "patch_text", "") or ""),
        source_format=rollout.source_format,
        source_ref=rollout.source_ref,
        test_outcomes=getattr(rollout, "test_outcomes", None),
        tests_passed=rollout.tests_passed,
        tests_failed=rollout.tests_failed,
        response_text=getattr(rollout, "response_text", None),
        **values,
    )


def grade_view(grade) -> GradeView | None:
    if grade is None:
        return None
    return GradeView(tier=grade.tier, rank=grade.rank, cheat=grade.cheat, scores=grade.scores, uncited=grade.uncited)


def shown_rollouts(rollouts: list[RolloutWithPatch], only: str) -> list[RolloutWithPatch]:
    """The rollouts `?only=` puts on the page: all, the passing or the failing ones."""
    return [r for r in rollouts if only == "all" or (only == "passing" and r.passed) or (only == "failing" and r.passed is False)]


def invisible_in(rollout: RolloutWithPatch) -> tuple[str, ...]:
    """The bidi and zero-width characters in a rollout's patch and test names (as ⟨U+…⟩)."""
    return tuple(find_invisible(rollout.patch_text + "\n" + _test_names(rollout.test_outcomes)))


def _test_names(outcomes) -> str:
    if not isinstance(outcomes, dict):
        return ""
    names = list(outcomes)
    for outcome in outcomes.values():
        if isinstance(outcome, dict):
            names += [str(t) for key in ("success", "failure") for t in (outcome.get(key) or [])]
    return "\n".join(map(str, names))
