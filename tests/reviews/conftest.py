"""People and groups of the review desk tests.

- alice: admin of acme; bob, dan: reviewers in acme; erin: auditor; fay: adjudicator
- carol: admin of "other" only, so every acme group is 404 for her
Groups (run r1, step 1): g1@1 and g2@1 mixed (rollouts 0, 1, 3 pass; 2 fails), g1 graded by
"secret-grader@1" with an evidence note no blind page may show; g3@1 all pass (filtered).
"""

from __future__ import annotations

import pytest

from grading.models import Group, Role
from grading.verdicts.store import GradeInput, record_verdict
from reviews.services.judgments import ItemInput, submit_judgment
from tests.helpers.desk import GRADER, SECRET_NOTE
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member


@pytest.fixture
def dan(acme):
    return member("dan", acme, Role.REVIEWER)


@pytest.fixture
def erin(acme):
    return member("erin", acme, Role.AUDITOR)


@pytest.fixture
def fay(acme):
    return member("fay", acme, Role.ADJUDICATOR)


@pytest.fixture
def groups(acme, alice):
    g1 = small_group("g1@1", rewards=(1, 1, 0, 1), gold_patch="--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 0\n+y = 9\n")
    ingest_groups(
        acme,
        g1,
        small_group("g2@1", instance_id="t-2", rewards=(1, 1, 0, 1)),
        small_group("g3@1", instance_id="t-3", rewards=(1, 1)),
    )
    graded = Group.objects.get(uid="g1@1")
    record_verdict(
        group=graded,
        grader=GRADER,
        status="valid",
        grades=[
            GradeInput(0, "T1", 1, evidence=[]),
            GradeInput(1, "T2", 2, evidence=[{"kind": "patch", "rollout": 1, "locator": "w.py:2", "note": SECRET_NOTE}]),
            GradeInput(3, "T3", 3, cheat=True, evidence=[{"kind": "turn", "rollout": 3, "locator": "1", "note": "read the fix"}]),
        ],
    )
    return {g.uid: g for g in Group.objects.all()}


@pytest.fixture
def judged(groups, bob, dan):
    """g2@1 graded too; bob and dan judged g1@1 (a tier apart on #1), bob judged g2@1."""
    record_verdict(
        group=groups["g2@1"],
        grader=GRADER,
        status="valid",
        grades=[GradeInput(0, "T2", 2), GradeInput(1, "T1", 1), GradeInput(3, "T2", 2)],
    )
    for person, tiers in ((bob, {0: "T1", 1: "T2", 3: "T3"}), (dan, {0: "T1", 1: "T3", 3: "T3"})):
        submit_judgment(reviewer=person, group=groups["g1@1"], items=[ItemInput(i, t) for i, t in tiers.items()])
    submit_judgment(reviewer=bob, group=groups["g2@1"], items=[ItemInput(0, "T2"), ItemInput(1, "T1"), ItemInput(3, "T3")])
    return groups
