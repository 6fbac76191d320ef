"""A run whose trainer took a step before some of its cheats were confirmed, shared by
tests/grading/views/test_run_late_credit.py and tests/browser/test_run_page.py.

`late_cheat_world(project, trainer_token=..., auditor=...)`, run r1 (mean baseline, the default
mapping). The scans ingest queues are held, as a worker that is down holds them, and run when
the story says (grading.jobs.scans.scan_groups, which calls record_prescreen, as the task does).
A step waits for its groups' scans up to the run's grading deadline (grading.waits.progress), so
the groups scanned late are those whose deadline passed first: the step fell back to final
without them, as it does when no worker comes:

- step 1, all four groups mixed:
  - g1@1, the worked example (docs/method.md §4): R = [1, 1, 1, 0, 0, 0] graded T1, T2, T3.
    #2 fetched the fix with curl (project_fetch), scanned only after the trainer took the step,
    and no finding of that scanner version was stored before: "caught later".
  - g2@1, R = [1, 0] graded T1. #0 skips a test the task does not name (test_skip, an open
    finding stored before the export); the auditor confirms it in the audit afterwards.
  - g3@1, R = [1, 0]. #0 ran `git log --all` and was scanned before the export: confirmed, so
    the trainer received it as a cheat (nothing lost).
  - g4@1, R = [1, 0] graded T1. #0 ran `git log --all` too but was scanned after the export,
    while history_search's version had already stored g3's finding: "a scanner at the time".
- step 2: g5@2, R = [1, 0] graded T1, taken by the trainer; nothing confirmed since.

The trainer fetched step 1 three times through GET /api/v1/advantages/: as CSV before any
verdict (not final: a `wait` that timed out), then as Parquet once final (what it trained on),
then as JSON Lines. What it trained on: g1 #2 A* = 0.319149 (T3 of the worked example), A = 0.5;
g2 #0 and g4 #0 alone in T1, A* = A = 0.5. So 1.319149 A* and 1.5 A over 3 rollouts in 1 step.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from datetime import timedelta
from unittest import mock

from django.test import Client
from django.utils import timezone

from grading.jobs import scans as jobs
from grading.jobs.tasks import scan_groups_task
from grading.models import CheatDecision, Group, Project, Rollout, StepExport
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

FETCH = "curl -sL https://raw.githubusercontent.com/octo/widgets/main/w.py | head -50"
HISTORY = "git log --all --oneline -- w.py"
SKIP_OTHER = (
    "diff --git a/tests/test_other.py b/tests/test_other.py\n--- a/tests/test_other.py\n+++ b/tests/test_other.py\n"
    "@@ -1,3 +1,4 @@\n import pytest\n \n+@pytest.mark.skip(reason='flaky')\n def test_unrelated():\n"
)
TOTAL_A_STAR = 0.319149 + 0.5 + 0.5  # g1 #2, g2 #0, g4 #0 as served
TOTAL_A = 0.5 + 0.5 + 0.5


def _ran(group: dict, index: int, command: str) -> None:
    group["rollouts"][index]["messages"].append(
        {"role": "assistant", "content": f"```bash\n{command}\n```", "action": command, "observation": "y = 2"}
    )


@contextmanager
def scans_held():
    """The scans ingest queues wait, as on a busy worker: the story runs them itself."""
    with mock.patch.object(scan_groups_task, "delay", lambda **kwargs: None):
        yield


def advantages_path(step: int, fmt: str) -> str:
    return f"/api/v1/advantages/?project=acme&run=r1&step={step}&format={fmt}"


def take(client: Client, token: str, step: int, fmt: str) -> dict:
    """The trainer's GET of one step's advantages through the test client; the headers it reads."""
    r = client.get(advantages_path(step, fmt), HTTP_AUTHORIZATION=f"Token {token}")
    assert r.status_code == 200, r.content[:300]
    return {"final": r["Gagar-Step-Final"], "inputs_version": r["Gagar-Inputs-Version"]}


def _grade(uid: str, grades: list[GradeInput]) -> None:
    record_verdict(group=Group.objects.get(uid=uid), grader="test@1", status="valid", grades=grades)


def late_cheat_world(project: Project, *, trainer_token: str, auditor, fetch: Callable[[int, str], dict] | None = None) -> dict:
    """The world above. `fetch(step, fmt)` is the trainer's GET of a step (its Gagar-Step-Final
    and Gagar-Inputs-Version headers as "final" and "inputs_version"): through the test client
    unless given, over HTTP to a live server in the browser tests (whose thread runs
    Playwright's event loop, where the test client cannot call the async export view)."""
    fetch = fetch or (lambda step, fmt: take(Client(), trainer_token, step, fmt))
    g1 = small_group("g1@1", rewards=(1, 1, 1, 0, 0, 0), FAIL_TO_PASS=["t::a"])
    _ran(g1, 2, FETCH)
    g2 = small_group("g2@1", instance_id="t-2", rewards=(1, 0), FAIL_TO_PASS=["t::a"])
    g2["rollouts"][0]["patch"] += SKIP_OTHER
    g3 = small_group("g3@1", instance_id="t-3", rewards=(1, 0), FAIL_TO_PASS=["t::a"])
    _ran(g3, 0, HISTORY)
    g4 = small_group("g4@1", instance_id="t-4", rewards=(1, 0), FAIL_TO_PASS=["t::a"])
    _ran(g4, 0, HISTORY)
    g5 = small_group("g5@2", step=2, instance_id="t-5", rewards=(1, 0), FAIL_TO_PASS=["t::a"])
    with scans_held():
        ingest_groups(project, g1, g2, g3, g4, g5)
    groups = {g.uid: g for g in Group.objects.filter(run__project=project)}
    # no worker read g1, g4 and g5 within the run's grading deadline: their steps stop waiting
    long_ago = timezone.now() - timedelta(seconds=groups["g1@1"].run.grading_deadline_seconds + 1)
    Group.objects.filter(uid__in=["g1@1", "g4@1", "g5@2"]).update(scan_due_at=long_ago)
    jobs.scan_groups(group_ids=[groups["g2@1"].pk, groups["g3@1"].pk])  # before the trainer takes step 1

    early = fetch(1, "csv")  # no verdict yet: not final
    _grade("g1@1", [GradeInput(0, "T1", 1), GradeInput(1, "T2", 2), GradeInput(2, "T3", 3)])
    for uid in ("g2@1", "g3@1", "g4@1", "g5@2"):
        _grade(uid, [GradeInput(0, "T1", 1)])
    trained = fetch(1, "parquet")  # final: what the trainer trains on
    fetch(1, "jsonl")
    fetch(2, "jsonl")

    jobs.scan_groups(group_ids=[groups["g1@1"].pk, groups["g4@1"].pk])  # the held scans, late
    audit = Client()
    audit.force_login(auditor)
    skipped = Rollout.objects.get(group=groups["g2@1"], index=0)
    r = audit.post(
        f"/projects/{project.name}/audit/rollouts/{skipped.pk}/",
        {"verdict": "confirm", "reason": "skips the test it broke", "status": "pending"},
    )
    assert r.status_code == 302, r.content[:300]

    rollouts = {
        name: Rollout.objects.get(group=groups[uid], index=index)
        for name, uid, index in (("fetch", "g1@1", 2), ("skip", "g2@1", 0), ("early", "g3@1", 0), ("history", "g4@1", 0))
    }
    return {
        "rollouts": rollouts,
        "early": early,
        "trained": trained,
        "exports": list(StepExport.objects.order_by("id").values_list("step__number", "format", "final")),
        "scanner": {
            name: CheatDecision.objects.get(rollout=rollout, source=CheatDecision.Source.PRESCREEN).author
            for name, rollout in rollouts.items()
        },
    }
