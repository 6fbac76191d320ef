"""A deterministic grader without a model: patch features and prescreen signals. Pure: no Django.

For every passing rollout a penalty (lower is better) sums what docs/method.md §2 calls
unnecessary complexity, weakened checks, out-of-scope edits and a wasteful strategy:

    log2(1 + source lines changed)           1 line → 1.0, 10 → 3.5, 100 → 6.7
  + 1.0 per source file beyond the first      spread across files
  + 0.5 per source hunk beyond one per file   spread inside files
  + 0.5 when test files only gain lines       adding tests is fine, but is not minimal
  + 3.0 per out-of-scope file                 grading.grader.prescreen.patch_features
  + 4.0 per tamper signal                     edits that weaken the tests
  + 1.0 per repeated failed command           same command failing ≥ 3 times
  + turns / 25                                 a long trajectory
  + 20 when a leak signal makes it a cheat
  + 2.0 per passing peer that caught it        the differential matrix (grading.grader.differential),
                                               where the project runs checks: a peer's added tests
                                               fail on its patch, its own pass on the peer's
  - 1.0 per peer it caught                     its tests tell patches apart
  + 2.0 per peer disagreeing with it past       outvoted (Standing.outvoted)
        those agreeing with it and itself
  + 4.0 when the task's tests fail on its patch, 2.0 when its added tests fail on the gold patch

Tier: T3 for a cheat, a tamper signal, an out-of-scope file, or a penalty at least
T3_MARGIN above the group's best; otherwise T2 for a penalty more than T1_MARGIN above the
best, above T1_MAX in absolute terms, two or more repeated failed commands, debugger lines
left in, a peer catching it or being outvoted (with a failing cell cited on it), or the
task's tests failing on it or its tests on the gold patch; otherwise T1. Ranks follow the tier, then the penalty (rounded to 2
decimals), so no T3 outranks a T2; equal ones tie (1, 1, 3). Rubric scores come from the same features (see `_scores`).

Every negative judgment cites what caused it (a signal's turn or patch line, a line of an
out-of-scope file, of the largest file, a repeated failure's turn), and each citation is
checked with grading.grader.evidence.resolve before it is kept. A rollout that offers
nothing to cite (no patch line, no message) is judged positively: docs/method.md forbids a
negative judgment without evidence.

Worked example: two passing rollouts of one task fix the same 2 lines in 10 turns; the
second also edits setup.py (2 lines). Penalties: log2(3) + 0.4 = 1.98 and
log2(5) + 1 (second file) + 3 (out of scope) + 0.4 = 6.72; tiers T1 and T3 (out of
scope), ranks 1 and 2; the second one cites "setup.py:<line>". Had the first rollout's new
test failed on the second's patch (check 1 of the matrix), the second would add 2.0 and cite
"check:1", the first lose 1.0.
"""

from __future__ import annotations

import math

from grading.grader.base import Evidence, GraderResult, RolloutJudgment
from grading.grader.differential import GOLD, Cell, Standing, run_matrix
from grading.grader.evidence import problems, resolve
from grading.grader.prescreen import PatchFeatures, Signal, package_dirs, patch_features, screen_group
from grading.grader.workspace import GroupWorkspace, RolloutView
from grading.method.guide import LOW_SCORE, RUBRIC
from grading.method.tiers import TIER_INDEX
from grading.method.turn_weights import WASTED_EFFORT

T1_MARGIN = 2.0  # penalty points above the group's best that still make T1
T3_MARGIN = 6.0  # penalty points above the group's best that make T3
T1_MAX = 10.0  # above this no rollout is T1, however the group did
CHEAT_PENALTY = 20.0
CAUGHT_PENALTY = 2.0  # per peer whose added tests fail on its patch while its own pass on theirs
CATCH_BONUS = 1.0  # per peer its added tests fail on while theirs pass on it
OUTVOTED_PENALTY = 2.0  # per peer disagreeing with it past those agreeing with it, and itself
TASK_TESTS_PENALTY = 4.0  # the task's own test patch failing on its patch
AGAINST_GOLD_PENALTY = 2.0  # its added tests failing on the gold patch


def penalty(feats: PatchFeatures, signals: list[Signal]) -> float:
    tamper = sum(1 for s in signals if s.category == "tamper")
    cheat = any(s.category == "leak" for s in signals)
    points = math.log2(1 + feats.source_lines)
    points += 1.0 * max(0, len(feats.source_files) - 1)
    points += 0.5 * max(0, feats.source_hunks - len(feats.source_files))
    points += 0.5 if feats.test_lines_added and not feats.test_lines_removed else 0.0
    points += 3.0 * len(feats.out_of_scope_files)
    points += 4.0 * tamper
    points += 1.0 * feats.repeated_failures
    points += feats.turns / 25
    points += CHEAT_PENALTY if cheat else 0.0
    return round(points, 2)


def differential_points(standing: Standing | None) -> float:
    """What the differential matrix adds to a rollout's penalty (see the module's table)."""
    if standing is None:
        return 0.0
    points = CAUGHT_PENALTY * len(standing.caught_by) - CATCH_BONUS * len(standing.caught)
    points += OUTVOTED_PENALTY * max(0, len(standing.disagree) - len(standing.agree) - 1)
    points += sum(TASK_TESTS_PENALTY if c.tests_of == GOLD else AGAINST_GOLD_PENALTY for c in standing.reference)
    return points


def _band(value: float, limits: tuple[float, ...]) -> int:
    """5 when value ≤ limits[0], 4 when ≤ limits[1], … 1 above the last."""
    for score, limit in zip((5, 4, 3, 2), limits):
        if value <= limit:
            return score
    return 1


def _scores(feats: PatchFeatures, signals: list[Signal], *, overbuilt: bool) -> dict[str, int]:
    tamper = sum(1 for s in signals if s.category == "tamper")
    oos = len(feats.out_of_scope_files)
    fit = 5 - (1 if overbuilt else 0)
    if tamper:
        fit = 2
    if any(s.category == "leak" for s in signals):
        fit = 1
    files, hunks = len(feats.source_files), feats.source_hunks
    precision = (
        5
        if files <= 1 and hunks <= 2
        else 4
        if files <= 2 and hunks <= 4
        else 3
        if files <= 3 and hunks <= 8
        else 2
        if files <= 5 and hunks <= 15
        else 1
    )
    precision -= 1 if feats.debug_lines else 0
    minimality = _band(feats.source_lines, (10, 30, 80, 200)) - oos
    side_effects = 5 - 2 * oos - 2 * tamper
    consistency = 5 - (2 if feats.debug_lines else 0) - (1 if feats.new_source_files else 0) - (1 if oos else 0)
    values = (fit, precision, minimality, side_effects, consistency)
    return {name: max(1, min(5, v)) for name, v in zip(RUBRIC, values)}


class HeuristicGrader:
    name = "heuristic@1"

    def grade(self, workspace: GroupWorkspace) -> GraderResult:
        signals = screen_group(workspace)
        passing = workspace.passing
        matrix = run_matrix(workspace)  # None where the project runs no checks
        feats = {r.index: patch_features(r, repo=workspace.repo, fail_to_pass=workspace.fail_to_pass) for r in passing}
        by_rollout = {r.index: [s for s in signals if s.rollout == r.index] for r in passing}
        standings = {i: matrix.standing(i) if matrix is not None else None for i in feats}
        points = {i: round(penalty(feats[i], by_rollout[i]) + differential_points(standings[i]), 2) for i in feats}
        best = min(points.values(), default=0.0)
        dirs = ", ".join(sorted(package_dirs(workspace.repo, workspace.fail_to_pass))) or "the package"
        judgments, uncitable = [], []
        for rollout in passing:
            i = rollout.index
            judgment = self._judge(workspace, rollout, feats[i], by_rollout[i], points[i], best, dirs, standings[i])
            if not judgment.evidence and _negative(judgment):
                uncitable.append(i)  # nothing to cite: stay positive (docs/method.md §2)
                judgment.tier, judgment.cheat = "T1", False
                judgment.scores = {k: max(v, LOW_SCORE + 1) for k, v in judgment.scores.items()}
            judgments.append(judgment)
        keys = {j.index: (TIER_INDEX[j.tier], points[j.index]) for j in judgments}
        for j in judgments:
            j.rank = 1 + sum(1 for k in keys.values() if k < keys[j.index])
        errors = problems(workspace, judgments)
        raw = {
            "grader": self.name,
            "penalties": {str(i): p for i, p in points.items()},
            "features": {str(i): f.as_dict() for i, f in feats.items()},
            "signals": [s.as_dict() for s in signals],
            "thresholds": {"T1_MARGIN": T1_MARGIN, "T3_MARGIN": T3_MARGIN, "T1_MAX": T1_MAX},
            "uncitable": uncitable,
            **({"differential": matrix.as_dict()} if matrix is not None else {}),
        }
        usage = {"turns": 0, "prompt_tokens": 0, "completion_tokens": 0}
        checks = list(workspace.check_log)
        if errors:  # cannot happen unless the workspace changed under us; never store an invalid verdict as valid
            return GraderResult(status="invalid", judgments=[], errors=errors, usage=usage, raw=raw, checks=checks)
        return GraderResult(status="valid", judgments=judgments, usage=usage, raw=raw, checks=checks)

    def _judge(
        self,
        workspace: GroupWorkspace,
        rollout: RolloutView,
        feats: PatchFeatures,
        signals: list[Signal],
        points: float,
        best: float,
        dirs: str,
        standing: Standing | None = None,
    ) -> RolloutJudgment:
        i = rollout.index
        differs = standing is not None and (
            bool(standing.reference) or bool(standing.cited and (standing.caught_by or standing.outvoted))
        )
        leaks = [s for s in signals if s.category == "leak"]
        tampers = [s for s in signals if s.category == "tamper"]
        overbuilt = points >= best + T3_MARGIN
        scores = _scores(feats, signals, overbuilt=overbuilt)
        if leaks or tampers or feats.out_of_scope_files or overbuilt:
            tier = "T3"
        elif points > best + T1_MARGIN or points > T1_MAX or feats.repeated_failures >= 2 or feats.debug_lines or differs:
            tier = "T2"
        else:
            tier = "T1"
        items: list[Evidence] = [s.evidence for s in leaks + tampers if s.evidence is not None]
        items += [
            Evidence("patch", i, feats.anchors[p], f"edits {p}, outside {dirs}")
            for p in feats.out_of_scope_files
            if p in feats.anchors
        ]
        items += [Evidence("patch", i, loc, "debugger call left in") for loc in feats.debug_lines[:1]]
        if standing is not None and differs:
            items += [
                Evidence("check", i, str(c.check), _cell_note(c))
                for c in (*standing.reference, *standing.cited)
                if c.check is not None
            ]
        items += [
            Evidence("turn", i, str(t), "the same command failed again (≥ 3 times)", WASTED_EFFORT)
            for t in feats.repeated_failure_turns
        ]
        judgment = RolloutJudgment(index=i, tier=tier, rank=1, scores=scores, cheat=bool(leaks))
        size_related = tier != "T1" or min(scores.values()) <= LOW_SCORE
        if size_related:
            citable = [p for p in feats.source_files if p in feats.anchors]
            largest = max(citable, key=lambda p: feats.lines_by_file[p], default=None)
            if largest:
                items.append(
                    Evidence(
                        "patch",
                        i,
                        feats.anchors[largest],
                        f"{feats.source_lines} source lines over {len(feats.source_files)} file(s), "
                        f"{feats.source_hunks} hunk(s); penalty {points} vs best {best}",
                    )
                )
            elif turn := _last_assistant(rollout):
                items.append(Evidence("turn", i, turn, f"{feats.turns} turns; penalty {points} vs best {best}"))
        seen = set()
        for item in items:
            key = (item.kind, str(item.locator))
            if key not in seen and resolve(workspace, item) is None:
                seen.add(key)
                judgment.evidence.append(item)
        return judgment


def _cell_note(cell: Cell) -> str:
    """What a failing cell cited on its rollout says, naming no other rollout (notes are shown
    to reviewers who meet rollouts by lane label)."""
    if cell.tests_of == GOLD:
        return "the task's tests fail on this patch"
    if cell.state == GOLD:
        return "its new tests fail on the gold patch: its behaviour differs from the reference"
    return "another passing rollout's new test fails on this patch: their behaviours differ"


def _last_assistant(rollout: RolloutView) -> str | None:
    for n in range(len(rollout.messages) - 1, -1, -1):
        if isinstance(rollout.messages[n], dict) and rollout.messages[n].get("role") == "assistant":
            return str(n)
    return None


def _negative(judgment: RolloutJudgment) -> bool:
    return judgment.tier != "T1" or judgment.cheat or any(s <= LOW_SCORE for s in judgment.scores.values())
