"""Demo judgments, so a fresh `make run` shows the review desk and the calibration page with
data in them: two demo reviewers judge the demo's graded groups through the same services
a person uses, agreeing with the grader most of the time and a tier apart otherwise. With
seed_demo's default 8 steps the demo run's fit meets the default minimum evidence
(grading.method.evidence); `demo_evidence` says whether it does.
"""

from __future__ import annotations

import random

from django.contrib.auth import get_user_model

from grading.method.evidence import assess
from grading.method.minimums import minimum_for
from grading.method.tiers import TIERS
from grading.models import Group, Membership, Project, Role, RolloutGrade, Run, Verdict
from reviews.selectors.calibration import figures
from reviews.services.judgments import ItemInput, JudgmentConflict, submit_judgment
from reviews.services.queue import assign, update_policy

REVIEWERS = ("rita", "sam")


def _drift(rng: random.Random, tier: str, agree: float) -> str:
    if rng.random() < agree:
        return tier
    i = TIERS.index(tier)
    return TIERS[max(0, min(2, i + rng.choice((-1, 1))))]


def seed_judgments(
    *, project: Project, password: str, seed: int = 11, agree: float = 0.7, overlap: float = 0.3, leave_open: int = 3
) -> dict[str, int]:
    """rita judges every graded group but the last `leave_open` (left in the queue); sam
    judges the overlap share. Safe to run twice: stored judgments are kept."""
    rng = random.Random(seed)
    users = {}
    for name in REVIEWERS:
        user, created = get_user_model().objects.get_or_create(username=name)
        if created:
            user.set_password(password)
            user.save(update_fields=["password"])
        Membership.objects.get_or_create(project=project, user=user, defaults={"role": Role.REVIEWER})
        users[name] = user
    update_policy(project=project, overlap=overlap, blind=True, lease_minutes=120)
    graded = list(
        Group.objects.filter(run__project=project, is_mixed=True, verdicts__status=Verdict.Status.VALID)
        .select_related("run")
        .order_by("step__number", "uid")
        .distinct()
    )
    counts = {"stored": 0, "kept": 0}
    flagged = False  # sam calls one cheat, so the audit queue has a signal to show
    for _n, group in enumerate(graded[: max(0, len(graded) - leave_open)]):
        grades = RolloutGrade.objects.filter(verdict__group=group, verdict__status=Verdict.Status.VALID).select_related("rollout")
        people = ["rita"] + (["sam"] if rng.random() < overlap else [])
        for name in people:
            tiers = {g.rollout.index: _drift(rng, g.tier, agree) for g in grades}
            cheat = None
            if name == "sam" and not flagged:
                cheat, flagged = max(tiers, key=lambda i: (TIERS.index(tiers[i]), i)), True
            items = [
                ItemInput(
                    index=i,
                    tier=t,
                    cheat=i == cheat,
                    note="turn 3 pip-installs the released fix, then copies it" if i == cheat else "",
                )
                for i, t in tiers.items()
            ]
            assign(group=group, reviewer=users[name], blind=True)
            try:
                submit_judgment(
                    reviewer=users[name], group=group, items=items, note="demo judgment", seconds_spent=rng.randint(40, 400)
                )
                counts["stored"] += 1
            except JudgmentConflict:
                counts["kept"] += 1
    return counts


def demo_evidence(*, project: Project, run_name: str) -> str:
    """One line for seed_demo: what the run's fit rests on against the project's minimum."""
    run = Run.objects.filter(project=project, name=run_name).first()
    if run is None:
        return f"calibration: no run {run_name!r}"
    fitted = figures(project=project, run=run, with_slices=False).fitted  # the fit the calibration page shows
    found = assess(counts=fitted.counts, n_groups=fitted.n_groups, minimum=minimum_for(project))
    said = "enough evidence" if found.sufficient else "too little evidence (" + "; ".join(found.shortfalls) + ")"
    return (
        f"calibration of {run_name}: the fit rests on {found.n_groups} judged mixed groups, T1/T2/T3 seen in "
        f"{'/'.join(map(str, found.tier_pairs))} pairs: {said}"
    )
