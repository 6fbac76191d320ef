"""The differential matrix (grading.grader.differential): what a patch adds to the tests, the
cells' order and words, and — on a real repository built in the test, in the bubblewrap sandbox
— three fixes that pass the task's tests but disagree, each one's new test run on the others'
patches and the gold patch: the divergent rollout found and cited by the heuristic grader, the
matrix handed to the LLM grader as a tool result, the cells stored as the verdict's checks, and
a budget too small recorded as cells not run."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from grading.grader.differential import (
    GOLD,
    Cell,
    DifferentialMatrix,
    added_tests,
    cell_command,
    outcome_of,
    pairs,
)
from grading.jobs.grade import grade_group
from grading.models import CheckPolicy, Verdict, VerdictCheck
from tests.helpers.fake_openai import FakeOpenAI, submit, text
from tests.helpers.repo_groups import diverging_group

NEW_FILE = """diff --git a/tests/test_empty.py b/tests/test_empty.py
new file mode 100644
--- /dev/null
+++ b/tests/test_empty.py
@@ -0,0 +1,8 @@
+from stats.core import mean
+
+
+def test_none():
+    assert mean([]) is None
+
+def helper():
+    return 1
"""

CHANGED = """diff --git a/tests/test_core.py b/tests/test_core.py
--- a/tests/test_core.py
+++ b/tests/test_core.py
@@ -4,2 +4,6 @@ from stats.core import mean
 def test_mean():
     assert mean([1, 2, 3]) == 2
+
+class TestEmpty:
+    def test_zero(self):
+        assert mean([]) == 0
diff --git a/stats/core.py b/stats/core.py
--- a/stats/core.py
+++ b/stats/core.py
@@ -1,2 +1,4 @@
 def mean(values):
+    if not values:
+        return 0.0
     return sum(values) / len(values)
"""
CHANGED_AFTER = (
    "from stats.core import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n"
    "class TestEmpty:\n    def test_zero(self):\n        assert mean([]) == 0\n"
)


def test_a_new_test_file_gives_its_tests_and_not_its_helpers():
    found = added_tests(NEW_FILE, lambda path: None)  # unreadable: the added top-level defs
    assert found.files == ("tests/test_empty.py",) and found.ids == ("tests/test_empty.py::test_none",)


def test_a_changed_test_file_gives_only_the_tests_the_patch_touches_with_their_class():
    found = added_tests(CHANGED, lambda path: CHANGED_AFTER if path == "tests/test_core.py" else None)
    # test_mean is context only; stats/core.py is not a test file
    assert found.files == ("tests/test_core.py",) and found.ids == ("tests/test_core.py::TestEmpty::test_zero",)


def test_a_file_that_does_not_parse_falls_back_to_the_lines_the_patch_adds():
    assert added_tests(NEW_FILE, lambda path: "def (:\n").ids == ("tests/test_empty.py::test_none",)


def test_the_cells_run_pairs_both_ways_then_the_reference_and_only_rows_with_tests():
    order = pairs([0, 1, 2, GOLD], with_tests=[0, 2, GOLD])
    assert order == [(0, 1), (0, 2), (2, 0), (2, 1), (GOLD, 0), (0, GOLD), (GOLD, 1), (GOLD, 2), (2, GOLD)]


def test_the_command_carries_the_files_as_base64_and_quotes_every_id():
    command = cell_command("label", [("tests/t x.py", b"$(rm -rf /)'\n")], ["tests/t x.py::test_a"])
    assert "$(rm" not in command and "mkdir -p tests" in command and "'tests/t x.py'" in command
    assert command.startswith("# label\n") and [outcome_of(s) for s in (0, 1, 2, None)] == ["pass", "fail", "error", "error"]


def test_sentences_name_the_tests_and_the_patch_and_the_matrix_survives_storage():
    matrix = DifferentialMatrix(
        participants=(3, 5, GOLD),
        cells=[
            Cell(3, 5, ("t::a",), "fail", 1, 5),
            Cell(5, 3, ("t::b", "t::c"), "pass", 2, 3),
            Cell(GOLD, 5, ("t::d", "t::e"), "fail", 3, 5),
            Cell(3, GOLD, ("t::a",), "not run", None, 3, "the check budget is spent"),
        ],
        tests={3: ("t::a",), 5: ("t::b", "t::c"), GOLD: ("t::d", "t::e")},
    )
    assert [s.text for s in matrix.sentences()] == ["#3's new test fails on #5's patch", "The task's tests fail on #5's patch"]
    named = matrix.sentences(lambda i: f"rollout {i}")
    assert named[0].text == "rollout 3's new test fails on rollout 5's patch" and named[0].check == 1
    again = DifferentialMatrix.from_dict(json.loads(json.dumps(matrix.as_dict())))
    assert again == matrix
    assert (
        DifferentialMatrix.from_dict({"cells": [{"tests_of": True, "state": 1, "outcome": "fail"}, "x"]}) == DifferentialMatrix()
    )
    standing = matrix.standing(5)
    assert standing.caught_by == (3,) and [c.check for c in standing.reference] == [3] and not standing.outvoted


# --- on a real repository, in the sandbox -----------------------------------------------

RUBRIC = ("solution_fit", "implementation_precision", "minimality", "side_effect_avoidance", "codebase_consistency")


def outcomes(raw: dict) -> dict[tuple, str]:
    return {(c["tests_of"], c["state"]): c["outcome"] for c in raw["differential"]["cells"]}


@pytest.mark.django_db
def test_the_heuristic_finds_the_divergent_rollout_and_cites_its_cells(tmp_path, settings, acme):
    group = diverging_group(tmp_path, settings, acme)
    CheckPolicy.objects.create(project=acme, enabled=True, max_checks=16, seconds=60)

    verdict = grade_group(group_id=group.pk, backend="heuristic")

    assert verdict.status == Verdict.Status.VALID, verdict.errors
    assert outcomes(verdict.raw) == {
        (0, 1): "fail",
        (1, 0): "fail",
        (0, 2): "pass",
        (2, 0): "pass",
        (1, 2): "fail",
        (2, 1): "fail",
        (GOLD, 0): "pass",
        (0, GOLD): "pass",
        (GOLD, 1): "fail",
        (1, GOLD): "fail",
        (GOLD, 2): "pass",
        (2, GOLD): "pass",
    }
    checks = {c.number: c for c in VerdictCheck.objects.filter(verdict=verdict).select_related("rollout")}
    assert len(checks) == verdict.n_checks == 12 and all(c.sandbox == "bubblewrap" for c in checks.values())
    cell = next(c for c in verdict.raw["differential"]["cells"] if (c["tests_of"], c["state"]) == (0, 1))
    stored = checks[cell["check"]]
    assert (
        stored.rollout.index == 1
        and stored.exit_status == 1
        and "FAILED tests/test_core.py::test_mean_of_nothing_is_zero" in (stored.output)
    )
    assert stored.command.startswith("# gagar differential: a rollout's added tests on another rollout's patch\n")

    grades = {g.rollout.index: g for g in verdict.grades.select_related("rollout")}
    assert grades[0].tier == grades[2].tier == "T1" and grades[1].tier in ("T2", "T3")
    assert grades[1].rank == 3 and grades[0].rank == grades[2].rank == 1
    cited = [e for e in grades[1].evidence if e["kind"] == "check"]
    assert {e["note"] for e in cited} == {
        "another passing rollout's new test fails on this patch: their behaviours differ",
        "the task's tests fail on this patch",
        "its new tests fail on the gold patch: its behaviour differs from the reference",
    }
    for item in cited:  # every check citation resolves to a stored check on that rollout
        assert checks[int(item["locator"])].rollout.index == item["rollout"] == 1


@pytest.mark.django_db
def test_the_llm_grader_gets_the_matrix_as_a_tool_result_and_cites_a_cell(tmp_path, settings, acme):
    group = diverging_group(tmp_path, settings, acme, gold=False)
    CheckPolicy.objects.create(project=acme, enabled=True, max_checks=8, seconds=60)
    # without a gold patch, six cells: rollout pairs both ways, run as checks 1..6
    verdict_args = [
        {"rollout": 0, "tier": "T1", "rank": 1, "cheat": False, "scores": dict.fromkeys(RUBRIC, 4), "evidence": []},
        {"rollout": 2, "tier": "T1", "rank": 1, "cheat": False, "scores": dict.fromkeys(RUBRIC, 4), "evidence": []},
        {
            "rollout": 1,
            "tier": "T2",
            "rank": 3,
            "cheat": False,
            "scores": dict.fromkeys(RUBRIC, 3),
            "evidence": [{"kind": "check", "rollout": 1, "locator": "1", "note": "0's test of mean([]) fails here"}],
        },
    ]
    with (
        FakeOpenAI(script=[submit(verdict_args)]) as fake,
        override_settings(GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True),
    ):
        verdict = grade_group(group_id=group.pk, backend="llm")

    assert verdict.status == Verdict.Status.VALID, verdict.errors
    first = fake.requests[0]
    assert "differential_matrix" in [t["function"]["name"] for t in first["tools"]]
    call, answer = first["messages"][2:4]
    assert call["tool_calls"][0]["function"]["name"] == "differential_matrix"
    result = json.loads(answer["content"])
    assert answer["tool_call_id"] == call["tool_calls"][0]["id"]
    cells = {(c["tests_of"], c["on_patch_of"]): c for c in result["cells"]}
    assert cells[0, 1] == {
        "tests_of": 0,
        "on_patch_of": 1,
        "outcome": "fail",
        "check": 1,
        "cite_as": "kind check, rollout 1, locator 1",
    }
    assert cells[0, 2]["outcome"] == "pass" and len(cells) == 6
    assert "#0's new test fails on #1's patch" in result["divergences"]
    assert result["checks_left"] == 2 and result["tests_added"]["2"] == ["tests/test_core.py::TestEmpty::test_zero"]
    assert VerdictCheck.objects.filter(verdict=verdict).count() == 6
    assert outcomes(verdict.raw)[0, 1] == "fail"


@pytest.mark.django_db
def test_in_json_mode_the_matrix_comes_as_the_models_reply_and_its_result(tmp_path, settings, acme):
    group = diverging_group(tmp_path, settings, acme, gold=False)
    CheckPolicy.objects.create(project=acme, enabled=True, max_checks=8, seconds=60)
    verdict = {
        "judgments": [
            {"rollout": i, "tier": "T1", "rank": 1, "cheat": False, "scores": dict.fromkeys(RUBRIC, 4), "evidence": []}
            for i in (0, 1, 2)
        ]
    }
    reply = text(json.dumps({"tool": "submit_verdict", "arguments": verdict}))
    with (
        FakeOpenAI(script=[reply]) as fake,
        override_settings(
            GRADER_BASE_URL=fake.base_url, GRADER_MODEL="fake-model", GRADER_ALLOW_PRIVATE_NETWORK=True, GRADER_TOOL_MODE="json"
        ),
    ):
        stored = grade_group(group_id=group.pk, backend="llm")

    assert stored.status == Verdict.Status.VALID and stored.grader.endswith(".json"), stored.errors
    first = fake.requests[0]
    assert "tools" not in first
    call, answer = first["messages"][2:4]
    assert json.loads(call["content"]) == {"tool": "differential_matrix", "arguments": {}}
    assert answer["role"] == "user" and answer["content"].startswith("Result of differential_matrix: {")
    assert len(json.loads(answer["content"].removeprefix("Result of differential_matrix: "))["cells"]) == 6


@pytest.mark.django_db
def test_a_budget_too_small_runs_what_it_can_and_records_the_rest(tmp_path, settings, acme):
    group = diverging_group(tmp_path, settings, acme)
    CheckPolicy.objects.create(project=acme, enabled=True, max_checks=2, seconds=60)

    verdict = grade_group(group_id=group.pk, backend="heuristic")

    assert verdict.status == Verdict.Status.VALID, verdict.errors
    matrix = verdict.raw["differential"]
    ran = [c for c in matrix["cells"] if c["check"] is not None]
    left = [c for c in matrix["cells"] if c["outcome"] == "not run"]
    assert [(c["tests_of"], c["state"], c["check"]) for c in ran] == [(0, 1, 1), (1, 0, 2)]
    assert len(left) == 10 and all("check budget is spent" in c["why"] for c in left)
    assert "check budget is spent" in matrix["stopped"] and verdict.n_checks == 2
