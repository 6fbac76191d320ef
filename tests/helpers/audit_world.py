"""The cheat audit's world, on groups built from the vendored real trajectories, shared by
tests/reviews/views/test_audit.py and tests/browser/test_audit.py.

`audit_world(project, reviewer=..., auditor=...)`: run gemini-3-pro-swebench-long, step 0.
- real-long-00 #2 (passes): flagged by the grader (citing turn 5), by the prescreen
  (upstream_history, citing turn 3) and by the reviewer while judging (BOB_NOTE cites turn 7).
- real-long-01 #3: the prescreen's upstream_history again, and the auditor's search `git log --all`.
- real-long-01 #2: the same search only.
`reward(rollout)` is a rollout's A* under its run's active mapping.
"""

from __future__ import annotations

from grading.method.services.computation import refresh_stale_step
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, CheatDecision, Group, Project, Rollout
from grading.verdicts.store import GradeInput, record_verdict
from reviews.services.judgments import ItemInput, submit_judgment
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import load_real_long_groups

RUN = "gemini-3-pro-swebench-long"
GRADER = "llm-grader@1"
GRADER_NOTE = "runs git log on the upstream fix"
BOB_NOTE = "turn 7 runs git log --all and copies the fix"
PRESCREEN_REASON = "upstream_history: git log --all --oneline"
SEARCH = "git log --all"


def audit_world(project: Project, *, reviewer, auditor) -> dict[str, Rollout]:
    """Ingest the first two real-long groups and raise the signals the module docstring lists.
    The prescreen's and the search's signals are written as record_prescreen and signal_search
    write them (the real trajectories trip no leak rule, and SQLite has no search index)."""
    ingest_groups(project, *load_real_long_groups()[:2])
    a, b = (Group.objects.get(run__project=project, uid=f"real-long-0{n}@0") for n in (0, 1))
    record_verdict(
        group=a,
        grader=GRADER,
        status="valid",
        grades=[
            GradeInput(2, "T3", 1, cheat=True, evidence=[{"kind": "turn", "rollout": 2, "locator": "5", "note": GRADER_NOTE}]),
        ],
    )
    x = Rollout.objects.get(group=a, index=2)
    y, z = Rollout.objects.get(group=b, index=3), Rollout.objects.get(group=b, index=2)
    for rollout, turn in ((x, "3"), (y, "4")):
        CheatDecision.objects.create(
            rollout=rollout,
            source="prescreen",
            author="prescreen",
            reason=PRESCREEN_REASON,
            evidence=[{"kind": "turn", "rollout": rollout.index, "locator": turn, "note": "git log --all"}],
        )
    submit_judgment(reviewer=reviewer, group=a, items=[ItemInput(2, "T3", cheat=True, note=BOB_NOTE)])
    for rollout in (y, z):
        CheatDecision.objects.create(rollout=rollout, source="search", author=auditor.username, reason=SEARCH)
    return {"x": x, "y": y, "z": z}


def reward(rollout: Rollout) -> float:
    group = rollout.group
    mapping = active_mapping(group.run)
    refresh_stale_step(step=group.step, mapping=mapping)
    return AdvantageResult.objects.get(rollout=rollout, mapping=mapping).reward
