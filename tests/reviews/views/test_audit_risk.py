"""The cheat audit lists the rollouts with the most credit at stake first: a signal on a pass
the method gave the most credit comes before a newer signal on a rollout that earned nothing."""

from __future__ import annotations

import re

import pytest

from grading.method.services.computation import refresh_stale_step
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, CheatDecision, Group
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups


@pytest.mark.django_db
def test_the_audit_puts_the_most_credit_at_stake_first(client, acme, alice):
    ingest_groups(acme, small_group("g1@1", rewards=(1, 1, 0, 0)))
    group = Group.objects.get(uid="g1@1")
    record_verdict(group=group, grader="test@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(1, "T3", 2)])
    refresh_stale_step(step=group.step, mapping=active_mapping(group.run))  # as the run page or an export would
    strong, weak, failed = (group.rollouts.get(index=i) for i in (0, 1, 2))
    stakes = {r.index: r.redistributed_advantage for r in AdvantageResult.objects.filter(rollout__group=group)}
    assert stakes[0] > stakes[1] > 0 > stakes[2]
    for rollout in (strong, failed, weak):  # the weak pass's signal is the newest
        CheatDecision.objects.create(
            rollout=rollout, source=CheatDecision.Source.PRESCREEN, reason="skip: planted", author="skip@1", evidence=[]
        )
    client.force_login(alice)
    page = client.get("/projects/acme/audit/").content.decode()
    listed = [int(pk) for pk in re.findall(r'<tr id="audit-rollout-(\d+)"', page)]
    assert listed == [strong.pk, weak.pk, failed.pk]  # by credit at stake, the failed rollout (none) last
