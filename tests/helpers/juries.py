"""A run whose policy is a jury of two graders that run elsewhere (their verdicts recorded as
POST /api/v1/verdicts/ records them), agreeing or abstaining: the world of the queue's
"disagreements first" tests."""

from __future__ import annotations

from grading.jobs.policy import update_run_policy
from grading.models import Group, Jury, Project, Run, Verdict
from grading.registry.juries import save_jury
from grading.verdicts.store import GradeInput, record_verdict

MEMBERS = ("ext-a@1", "ext-b@1")


def jury_policy(project: Project, run: Run, *, on_abstain: str = "wait", max_gap: int = 1, deadline: int = 600) -> Jury:
    """The run's policy names jury "pair" of MEMBERS, agree or abstain beyond `max_gap`."""
    jury, _ = save_jury(
        project=project, name="pair", members=list(MEMBERS), rule="agree_or_abstain", max_gap=max_gap, on_abstain=on_abstain
    )
    update_run_policy(run=run, changes={"jury": "pair", "grading_deadline_seconds": deadline})
    return jury


def grade(group: Group, grader: str, tiers: dict[int, str], *, cheat=()) -> Verdict:
    """A valid verdict of `grader`: these tiers, ranked in tier order, cheats flagged on `cheat`."""
    order = sorted(tiers, key=lambda i: (tiers[i], i))
    grades = [GradeInput(i, tiers[i], order.index(i) + 1, cheat=i in cheat) for i in sorted(tiers)]
    verdict, _ = record_verdict(group=group, grader=grader, status="valid", grades=grades)
    return verdict


def grade_pair(group: Group, a: dict[int, str], b: dict[int, str], *, cheat_a=(), cheat_b=()) -> None:
    grade(group, MEMBERS[0], a, cheat=cheat_a)
    grade(group, MEMBERS[1], b, cheat=cheat_b)
