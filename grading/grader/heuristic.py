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

Tier: T3 for a cheat, a tamper signal, an out-of-scope file, or a penalty at least
T3_MARGIN above the group's best; otherwise T2 for a penalty more than T1_MARGIN above the
best, above T1_MAX in absolute terms, two or more repeated failed commands, or debugger
lines left in; otherwise T1. Ranks follow the tier, then the penalty (rounded to 2
decimals), so no T3 outranks a T2; equal ones tie (1, 1, 3). Rubric scores come from the same features (see `_scores`).

Every negative judgment cites what caused it (a signal's turn or patch line, a line of an
out-of-scope file, of the largest file, a repeated failure's turn), and each citation is
checked with grading.grader.evidence.resolve before it is kept. A rollout that offers
nothing to cite (no patch line, no message) is judged positively: docs/method.md forbids a
negative judgment without evidence.

Worked example: two passing rollouts of one task fix the same 2 lines in 10 turns; the
second also edits setup.py (2 lines). Penalties: log2(3) + 0.4 = 1.98 and
log2(5) + 1 (second file) + 3 (out of scope) + 0.4 = 6.72; tiers T1 and T3 (out of
scope), ranks 1 and 2; the second one cites "setup.py:<line>".
"""

from __future__ import annotations

import math

from grading.grader.base import Evidence, GraderResult, RolloutJudgment
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
        feats = {r.index: patch_features(r, repo=workspace.repo, fail_to_pass=workspace.fail_to_pass) for r in passing}
        by_rollout = {r.index: [s for s in signals if s.rollout == r.index] for r in passing}
        points = {i: penalty(feats[i], by_rollout[i]) for i in feats}
        best = min(points.values(), default=0.0)
        dirs = ", ".join(sorted(package_dirs(workspace.repo, workspace.fail_to_pass))) or "the package"
        judgments, uncitable = [], []
        for rollout in passing:
            i = rollout.index
            judgment = self._judge(workspace, rollout, feats[i], by_rollout[i], points[i], best, dirs)
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
        }
        usage = {"turns": 0, "prompt_tokens": 0, "completion_tokens": 0}
        if errors:  # cannot happen unless the workspace changed under us; never store an invalid verdict as valid
            return GraderResult(status="invalid", judgments=[], errors=errors, usage=usage, raw=raw)
        return GraderResult(status="valid", judgments=judgments, usage=usage, raw=raw)

    def _judge(
        self,
        workspace: GroupWorkspace,
        rollout: RolloutView,
        feats: PatchFeatures,
        signals: list[Signal],
        points: float,
        best: float,
        dirs: str,
    ) -> RolloutJudgment:
        i = rollout.index
        leaks = [s for s in signals if s.category == "leak"]
        tampers = [s for s in signals if s.category == "tamper"]
        overbuilt = points >= best + T3_MARGIN
        scores = _scores(feats, signals, overbuilt=overbuilt)
        if leaks or tampers or feats.out_of_scope_files or overbuilt:
            tier = "T3"
        elif points > best + T1_MARGIN or points > T1_MAX or feats.repeated_failures >= 2 or feats.debug_lines:
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


def _last_assistant(rollout: RolloutView) -> str | None:
    for n in range(len(rollout.messages) - 1, -1, -1):
        if isinstance(rollout.messages[n], dict) and rollout.messages[n].get("role") == "assistant":
            return str(n)
    return None


def _negative(judgment: RolloutJudgment) -> bool:
    return judgment.tier != "T1" or judgment.cheat or any(s <= LOW_SCORE for s in judgment.scores.values())
