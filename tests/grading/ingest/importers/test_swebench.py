"""SWE-bench harness reports from before 2024 (grading/ingest/importers/swebench.py) -> attempts,
no database."""

from __future__ import annotations

import pytest

from grading.ingest.importers.scan import NOTICE, UNKNOWN
from tests.helpers import import_files as b
from tests.helpers.import_files import find, reasons, write_jsonl

A, B, C = "octo__widgets-101", "octo__widgets-102", "octo__widgets-103"


@pytest.mark.parametrize("name", ["results.json", "final_report.json", "report.json"])
def test_older_harness_report_gives_pass_or_fail_to_every_rollout_with_a_prediction(tmp_path, name):
    run = b.mini_run(tmp_path / "run", {A: None, B: None, C: None})
    b.write(
        run / name,
        {
            "stats": {"generated": 3, "with_logs": 3, "applied": 2, "resolved": 1},
            "resolved": [A, "other__repo-9"],
            "applied": [A, B],
            "generated": [A, B, C],
            "resolved_per_project": {"octo/widgets": [A]},
        },
    )
    finder, found = find(run)
    rewards = {key: items[0].rollout["reward"] for key, items in found.items()}
    assert rewards == {A: 1.0, B: 0.0, C: 0.0}
    rules = {key: items[0].rollout["metadata"]["verdict"]["rule"] for key, items in found.items()}
    assert rules[A] == "listed in 'resolved' of the older harness report"
    assert rules[B] == "a prediction in this run and not in 'resolved' of the older harness report"
    assert rules[C].endswith("(not in 'applied': the patch did not apply)")
    assert reasons(finder, NOTICE)[f"run/{name}"] == (
        "older SWE-bench harness report: 1 instance(s) pass (listed in 'resolved'), 2 fail (a prediction in this run, not in "
        "'resolved'); 1 resolved id(s) have no trajectory or prediction here: other__repo-9"
    )
    assert not reasons(finder, UNKNOWN)


def test_older_harness_report_with_predictions_and_a_generated_list(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "preds.jsonl", [b.prediction(A, b.patch(1)), b.prediction(B, b.patch(2)), b.prediction(C, b.patch(3))])
    b.write(run / "results" / "results.json", {"resolved": [B], "generated": [A, B]})
    finder, found = find(run)
    assert {k: v[0].rollout["reward"] for k, v in found.items()} == {A: 0.0, B: 1.0, C: None}
    assert (
        "1 not in its 'generated' list get no verdict from it: octo__widgets-103"
        in reasons(finder, NOTICE)["run/results/results.json"]
    )
    assert reasons(finder, UNKNOWN) == {
        f"run/preds.jsonl#{C}": "no verdict (no report.json or run-summary entry for this instance): reward unknown"
    }
