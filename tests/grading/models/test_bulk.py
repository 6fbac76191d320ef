"""Rollout bodies are written by COPY on PostgreSQL (grading.models.bulk), bulk_create on SQLite:
what is stored is what was sent, byte for byte, and a value the database refuses costs only
its own line."""

from __future__ import annotations

import pytest
from django.db import DataError, connection, transaction

from grading.ingest.service import ingest_group_lines
from grading.models import Group, Rollout, RolloutContent, RolloutSearch, SearchChunk
from tests.helpers.groups import line, small_group

# What COPY's text format treats specially (backslash, tab, newline, carriage return, its
# end-of-data marker `\.`), quotes, and text outside ASCII.
AWKWARD = "tab\there\nnew line\r\n\\. alone\n\\N not null \\\\ two 'single' \"double\" Ünïcödé 🎯 \u2028"


def awkward_group(uid: str) -> dict:
    group = small_group(uid, instance_id=f"t-{uid}")
    for rollout in group["rollouts"]:
        rollout["messages"][1]["content"] = AWKWARD
        rollout["messages"][1]["observation"] = AWKWARD * 3
        rollout["patch"] += f"+# {AWKWARD.splitlines()[0]}\n"
        rollout["test_log"] = AWKWARD
        rollout["tests"]["PASS_TO_PASS"] = {"success": [AWKWARD], "failure": []}
        rollout["metadata"] = {"note": AWKWARD, "nested": {"k\\ey": [1, 2.5, None, True]}}
    return group


@pytest.mark.django_db
def test_bodies_are_stored_exactly_as_sent(acme):
    sent = awkward_group("awk@1")
    report = ingest_group_lines(project=acme, lines=[(1, line(sent))])
    assert report.rollouts_created == 3 and not report.errors
    stored = {c.rollout.index: c for c in RolloutContent.objects.select_related("rollout")}
    for rollout in sent["rollouts"]:
        body = stored[rollout["index"]]
        assert body.messages == rollout["messages"]
        assert (body.patch, body.test_log) == (rollout["patch"], rollout["test_log"])
        assert body.tests == rollout["tests"] and body.metadata == rollout["metadata"]
    assert SearchChunk.objects.filter(text__contains="Ünïcödé 🎯").values("rollout_id").distinct().count() == 3


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY is PostgreSQL's; needs DATABASE_URL (CI sets it)")
def test_a_value_copy_cannot_store_raises_djangos_error_and_costs_only_its_line(acme, monkeypatch):
    """Ingest replays a batch line by line on Django's DataError. COPY bypasses Django's cursor
    wrapper, so copy_rows must raise Django's error, not psycopg's, or the request would 500.
    A body whose metadata the server refuses as jsonb is refused alone, with its reason."""
    from grading.ingest import service
    from grading.models.bulk import copy_rows

    with pytest.raises(DataError), transaction.atomic():
        copy_rows(connection, "grading_rolloutcontent", ("rollout_id", "metadata"), [(1, "{not json")])

    real_jsonb = service.jsonb
    monkeypatch.setattr(service, "jsonb", lambda value: "{not json" if value == {"poison": True} else real_jsonb(value))
    poisoned = small_group("bad@1", instance_id="t-bad")
    poisoned["rollouts"][1]["metadata"] = {"poison": True}
    report = ingest_group_lines(
        project=acme,
        lines=[
            (1, line(small_group("a@1", instance_id="t-a"))),
            (2, line(poisoned)),
            (3, line(small_group("b@1", instance_id="t-b"))),
        ],
    )
    assert [(e.line, e.uid) for e in report.errors] == [(2, "bad@1")]
    assert report.errors[0].error.startswith(
        "could not be stored: the database refused a value (invalid input syntax for type json"
    )
    assert set(Group.objects.values_list("uid", flat=True)) == {"a@1", "b@1"}
    assert Rollout.objects.count() == RolloutContent.objects.count() == RolloutSearch.objects.count() == 6
