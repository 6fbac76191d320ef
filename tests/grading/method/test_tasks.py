"""Recomputation is batched per step and never loses the last change.

Not transactional on purpose: on_commit callbacks (the queued recomputations) are captured
instead of run, so the test sees what would be queued.
"""

import pytest
from django.db.models import F

from grading.models import Group, StepComputation
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db


@pytest.fixture
def step_with_verdict(acme):
    ingest_groups(acme, small_group("g1@1", rewards=(1, 1, 0)))
    group = Group.objects.get(uid="g1@1")
    record_verdict(group=group, grader="test@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(1, "T2", 2)])
    return group.step


def test_changes_to_a_step_queue_one_recomputation_until_it_runs(step_with_verdict, django_capture_on_commit_callbacks):
    from grading.method.services.computation import compute_step
    from grading.method.services.mappings import default_mapping
    from grading.method.services.staleness import mark_stale

    step = step_with_verdict
    compute_step(step=step, mapping=default_mapping())
    with django_capture_on_commit_callbacks() as queued:
        mark_stale(step_ids=[step.pk])  # current -> stale: queue a recomputation
        mark_stale(step_ids=[step.pk])  # already queued: only the version moves
        mark_stale(step_ids=[step.pk])
    assert len(queued) == 1
    step.refresh_from_db()
    assert step.inputs_version >= 3 and StepComputation.objects.get(step=step).stale


def test_inputs_changing_during_a_computation_leave_it_stale_and_queue_another(
    step_with_verdict, django_capture_on_commit_callbacks, monkeypatch
):
    from grading.method.services import computation as advantages
    from grading.method.services.mappings import default_mapping
    from grading.models import Step

    step = step_with_verdict
    real_inputs = advantages.step_inputs

    def inputs_then_a_new_verdict(s):
        result = real_inputs(s)
        Step.objects.filter(pk=s.pk).update(inputs_version=F("inputs_version") + 1)  # a change lands meanwhile
        return result

    monkeypatch.setattr(advantages, "step_inputs", inputs_then_a_new_verdict)
    with django_capture_on_commit_callbacks() as queued:
        computation = advantages.compute_step(step=step, mapping=default_mapping())
    assert computation.stale and len(queued) == 1
