"""Which judgments must cite, which are uncited, and where a problem with a verdict is. No database."""

from __future__ import annotations

import doctest

import pytest

from grading.grader import evidence
from grading.grader.base import Evidence, RolloutJudgment
from grading.grader.evidence import CITATION_NEEDED, find_problems, is_uncited, needs_citation, problems
from grading.grader.workspace import GroupWorkspace, RolloutView

PATCH = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 2\n"


def workspace() -> GroupWorkspace:
    rollouts = [RolloutView(index=i, passed=True, patch=PATCH, messages=[{"role": "user", "content": "fix"}]) for i in range(2)]
    return GroupWorkspace(uid="g@1", instance_id="g", rollouts=rollouts)


def test_the_docstring_examples_hold():
    failed, attempted = doctest.testmod(evidence, raise_on_error=False)
    assert attempted and not failed


@pytest.mark.parametrize(
    ("tier", "cheat", "scores", "needs"),
    [
        ("T1", False, {"minimality": 3}, False),
        ("T2", False, {}, True),
        ("T3", False, {}, True),
        ("T1", True, {}, True),
        ("T1", False, {"minimality": 2}, True),  # LOW_SCORE
    ],
)
def test_a_judgment_against_its_rollout_needs_a_citation(tier, cheat, scores, needs):
    assert needs_citation(tier, cheat, scores) is needs
    assert is_uncited(tier, cheat, scores, []) is needs
    assert is_uncited(tier, cheat, scores, [{"kind": "turn", "rollout": 0, "locator": "0"}]) is False


def test_our_graders_must_cite_and_a_grader_elsewhere_need_not():
    judgments = [RolloutJudgment(0, "T1", 1), RolloutJudgment(1, "T2", 2)]
    assert problems(workspace(), judgments) == [f"rollout 1: {CITATION_NEEDED}"]
    (required,) = find_problems(workspace(), judgments)
    assert required.field == "judgments[1]"
    assert find_problems(workspace(), judgments, citations_required=False) == []


def test_a_citation_that_does_not_resolve_is_refused_either_way_and_located():
    bad = Evidence("patch", 1, "w.py:9")
    judgments = [RolloutJudgment(0, "T1", 1), RolloutJudgment(1, "T2", 2, evidence=[Evidence("turn", 1, "0"), bad])]
    for required in (True, False):
        (found,) = find_problems(workspace(), judgments, citations_required=required)
        assert (found.judgment, found.citation, found.field) == (1, 1, "judgments[1].evidence[1]")
        assert found.text == "rollout 1: citation patch 'w.py:9': rollout 1's patch does not show line 9 of w.py"
    only_bad = [RolloutJudgment(0, "T1", 1), RolloutJudgment(1, "T2", 2, evidence=[bad])]
    assert [p.field for p in find_problems(workspace(), only_bad)] == ["judgments[1].evidence[0]", "judgments[1]"]
    assert [p.field for p in find_problems(workspace(), only_bad, citations_required=False)] == ["judgments[1].evidence[0]"]


def test_a_problem_of_the_whole_verdict_names_the_judgments():
    (missing,) = find_problems(workspace(), [RolloutJudgment(0, "T1", 1)], citations_required=False)
    assert missing.field == "judgments" and "no judgment for passing rollout(s) [1]" in missing.text
