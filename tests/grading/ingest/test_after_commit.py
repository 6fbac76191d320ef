"""What a committed ingest batch queues after its commit cannot undo it: a hook that fails
(the broker gone; with eager Celery, the task's own database work) is logged, and the
answer still counts every stored group — never a 500, never "0 created" for stored rows."""

from __future__ import annotations

import pytest
from django.db import OperationalError

import grading.highlights.tasks
from grading.models import Group, Rollout
from tests.helpers.groups import small_group
from tests.helpers.ingest import post_groups

pytestmark = pytest.mark.django_db(transaction=True)  # the commit happens, so its hooks run


def test_a_failing_after_commit_hook_leaves_the_batch_stored_and_counted(client, alice_token, monkeypatch, caplog):
    def broker_gone(**kwargs):
        raise OperationalError("the broker is gone")

    monkeypatch.setattr(grading.highlights.tasks.highlight_rollouts_task, "delay", broker_gone)
    report = post_groups(client, alice_token, small_group("a@1"), small_group("b@1", instance_id="t-2"))
    assert report["groups"] == {"created": 2, "extended": 0, "unchanged": 0}
    assert report["rollouts"]["created"] == 6
    assert Group.objects.count() == 2 and Rollout.objects.count() == 6
    assert any("in on_commit()" in r.getMessage() for r in caplog.records)
