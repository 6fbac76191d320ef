"""Every list page and "judge next group" takes the same number of queries however big the run.

A small run is built through the services (ingest, verdicts, judgments, cheat flags, audits,
adjudications, import jobs), every page is requested and its queries counted; then steps,
groups per step, verdicts, judgments and signals all double and the counts must not move.
Each page is requested once before counting, so a stale step computed on a page view
(grading.method.services.computation.refresh_stale_step) is computed in both rounds alike.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from grading.models import CheatDecision, Group, ImportJob, Role, Run
from grading.verdicts.store import GradeInput, record_verdict
from reviews.models import Assignment, GroupReview, Judgment
from reviews.services.audit import audit_cheat
from reviews.services.judgments import ItemInput, submit_judgment
from reviews.services.queue import next_assignment, skip_assignment, update_policy
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member

pytestmark = pytest.mark.django_db

REWARDS = (1, 1, 0, 1)  # mixed: rollouts 0, 1 and 3 pass
TIERS = [("T1", "T2", "T3"), ("T2", "T1", "T2"), ("T1", "T1", "T3")]


def grow(project, *, steps: int, groups_per_step: int, people: list, adjudicator, auditor) -> None:
    """Bring run r1 to `steps` x `groups_per_step` mixed groups (plus one all-pass group per
    step), every mixed group graded; two reviewers judge half of them as the queue serves
    them, disagreeing, with a cheat flag now and then; the adjudicator settles one in
    three disagreements and the auditor decides half the open signals."""
    known = set(Group.objects.filter(run__project=project).values_list("uid", flat=True))
    lines = []
    for step in range(1, steps + 1):
        lines += [small_group(f"t{g}@{step}", step=step, instance_id=f"t{g}", rewards=REWARDS) for g in range(groups_per_step)]
        lines.append(small_group(f"pass@{step}", step=step, instance_id="pass", rewards=(1, 1)))
    ingest_groups(project, *[g for g in lines if g["uid"] not in known])
    for n, group in enumerate(Group.objects.filter(run__project=project, is_mixed=True).exclude(uid__in=known).order_by("id")):
        tiers = TIERS[n % len(TIERS)]
        record_verdict(
            group=group,
            grader="grader@1",
            status="valid",
            grades=[
                GradeInput(i, t, r, cheat=(i == 3 and n % 4 == 0))
                for r, (i, t) in enumerate(zip((0, 1, 3), tiers, strict=True), 1)
            ],
        )
    judge_each = steps * groups_per_step // 2  # half the groups: the rest stays in the queue
    for k, person in enumerate(people):
        while Judgment.objects.filter(reviewer=person).count() < judge_each:
            assignment = next_assignment(project=project, reviewer=person)
            tiers = TIERS[(assignment.group_id + k) % len(TIERS)]
            submit_judgment(
                reviewer=person,
                group=assignment.group,
                items=[
                    ItemInput(i, t, cheat=(i == 3 and assignment.group_id % 3 == 0))
                    for i, t in zip((0, 1, 3), tiers, strict=True)
                ],
            )
    for n, review in enumerate(GroupReview.objects.filter(needs_adjudication=True).select_related("group").order_by("group_id")):
        if n % 3 == 0:
            submit_judgment(
                reviewer=adjudicator,
                group=review.group,
                kind=Judgment.Kind.ADJUDICATION,
                reason=Judgment.Reason.REVIEWERS_DISAGREE,
                items=[ItemInput(0, "T1"), ItemInput(1, "T2"), ItemInput(3, "T3")],
            )
    pending = list(CheatDecision.objects.filter(confirmed__isnull=True).order_by("id"))
    for decision in pending[: len(pending) // 2]:
        audit_cheat(decision=decision, auditor=auditor, confirmed=decision.pk % 2 == 0, reason="read the trajectory")
    run = Run.objects.get(project=project, name="r1")
    for _ in range(steps):
        ImportJob.objects.create(project=project, run=run, step=1, status=ImportJob.Status.DONE)


def count_queries(client, method: str, url: str, expected: int = 200) -> int:
    send = client.get if method == "GET" else client.post
    warm = send(url)  # a stale step is computed here, not in the counted request
    assert warm.status_code == expected, (url, warm.status_code)
    if method == "POST":
        return -1
    with CaptureQueriesContext(connection) as ctx:
        response = send(url)
        if response.streaming:
            b"".join(response.streaming_content)
    assert response.status_code == expected, (url, response.status_code)
    return len(ctx.captured_queries)


def next_group_queries(client, person, acme) -> int:
    """POST /review/next/ for a fresh pick: the reviewer's open assignment is skipped first."""
    for assignment in Assignment.objects.filter(reviewer=person, status=Assignment.Status.OPEN):
        skip_assignment(assignment=assignment)
    with CaptureQueriesContext(connection) as ctx:
        response = client.post("/projects/acme/review/next/")
    assert response.status_code == 302 and "/groups/" in response["Location"], response.get("Location")
    return len(ctx.captured_queries)


PAGES = {
    "project": "/projects/acme/",
    "run": "/projects/acme/runs/r1/",
    "run, page 2 of steps": "/projects/acme/runs/r1/?page=2",
    "step": "/projects/acme/runs/r1/steps/1/",
    "step, mixed": "/projects/acme/runs/r1/steps/2/?show=mixed",
    "group": "/projects/acme/runs/r1/groups/t0@1/",
    "review queue": "/projects/acme/review/",
    "audit": "/projects/acme/audit/?status=all",
    "audit, pending": "/projects/acme/audit/",
    "adjudication": "/projects/acme/adjudication/?show=all",
    "calibration": "/projects/acme/calibration/",
    "import jobs API": "/api/v1/imports/?project=acme",
    "labeled groups API": "/api/v1/labeled-groups/?project=acme&run=r1",
    "labeled groups API, since": "/api/v1/labeled-groups/?project=acme&run=r1&since=2000-01-01T00:00:00Z",
}


def test_pages_and_next_group_keep_their_query_count_as_the_run_doubles(client, acme, alice, bob, monkeypatch):
    from grading.selectors import steps as step_selectors

    monkeypatch.setattr(step_selectors, "STEPS_PER_PAGE", 2)  # so the run page has a second page in both rounds
    dan = member("dan", acme, Role.REVIEWER)
    fay = member("fay", acme, Role.ADJUDICATOR)
    erin = member("erin", acme, Role.AUDITOR)
    newcomer = member("nina", acme, Role.REVIEWER)  # asks for "next group" in both rounds
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)

    counts, sizes = [], []
    for steps, per_step in ((3, 3), (6, 6)):
        grow(acme, steps=steps, groups_per_step=per_step, people=[bob, dan], adjudicator=fay, auditor=erin)
        round_ = {}
        client.force_login(alice)
        for name, url in PAGES.items():
            round_[name] = count_queries(client, "GET", url)
        client.force_login(bob)
        round_["review queue (a reviewer)"] = count_queries(client, "GET", "/projects/acme/review/")
        client.force_login(newcomer)
        round_["judge next group"] = next_group_queries(client, newcomer, acme)
        round_["judge next group, again"] = next_group_queries(client, newcomer, acme)
        counts.append(round_)
        sizes.append(
            {
                "signals": CheatDecision.objects.count(),
                "audited": CheatDecision.objects.filter(confirmed__isnull=False).count(),
                "adjudicated": GroupReview.objects.filter(adjudicated=True).count(),
                "jobs": ImportJob.objects.count(),
            }
        )

    small, large = counts
    # The second round really is twice the first.
    assert Group.objects.filter(run__name="r1", is_mixed=True).count() == 36
    assert Judgment.objects.filter(kind=Judgment.Kind.REVIEW).count() == 2 * 18  # bob and dan, half of the 36 each
    assert all(sizes[1][k] >= 2 * sizes[0][k] > 0 for k in sizes[0]), sizes
    assert {name: large[name] for name in small} == small
