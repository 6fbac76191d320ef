"""compute_step stores its rows by COPY on PostgreSQL: the same rows bulk_create stored, in a
number of queries that does not grow with the step."""

import pytest
from django.db.models import F

from grading.method.services.computation import compute_step, store_results
from grading.method.services.mappings import active_mapping
from grading.models import AdvantageResult, Step
from tests.factories import make_group, make_run, make_step, make_verdict

pytestmark = pytest.mark.django_db

FIELDS = [f.attname for f in AdvantageResult._meta.concrete_fields if f.attname != "id"]


def stored(step):
    return list(AdvantageResult.objects.filter(step=step).order_by("rollout_id").values(*FIELDS))


def graded_step(acme, groups: int, name: str = "r1"):
    step = make_step(make_run(acme, name=name, turn_weights=True))
    for n in range(groups):
        group = make_group(f"{name}-{n}@1", step=step, rewards=(1, 0, 1, 1))
        if n % 2 == 0:
            make_verdict(group, tiers={0: "T1", 2: "T2", 3: "T3"})
    make_group(f"{name}-unknown@1", step=step, rewards=(1, None, 0))  # filtered: an unknown reward
    return step


def test_copied_rows_are_those_bulk_create_stores(acme):
    step = graded_step(acme, 4)
    compute_step(step=step, mapping=active_mapping(step.run))
    copied = stored(step)
    assert len(copied) == 4 * 4 + 3
    assert {row["status"] for row in copied} == {"graded", "fallback", "filtered"}
    assert {None if row["turn_weights"] is None else "{}" for row in copied} <= {"{}", None}

    rows = [dict(row) for row in copied]
    AdvantageResult.objects.filter(step=step).delete()
    AdvantageResult.objects.bulk_create([AdvantageResult(**row) for row in rows])  # the old path
    assert stored(step) == copied

    AdvantageResult.objects.filter(step=step).delete()
    rows[0]["turn_weights"] = {"3": 0.5}
    rows[1]["turn_weights"] = None
    store_results(rows)
    again = stored(step)
    assert again[0]["turn_weights"] == {"3": 0.5} and again[1]["turn_weights"] is None
    assert again[2:] == copied[2:]


def test_group_totals_are_kept(acme):
    step = graded_step(acme, 3)
    compute_step(step=step, mapping=active_mapping(step.run))
    totals: dict[str, list[float]] = {}
    for row in AdvantageResult.objects.filter(step=step, status="graded").values("uid", "advantage", "redistributed_advantage"):
        before, after = totals.setdefault(row["uid"], [0.0, 0.0])
        totals[row["uid"]] = [before + row["advantage"], after + row["redistributed_advantage"]]
    assert totals and all(abs(before - after) < 1e-9 for before, after in totals.values())


def test_queries_do_not_grow_with_the_step(acme, django_assert_num_queries):
    small, large = graded_step(acme, 2, name="small"), graded_step(acme, 12, name="large")
    compute_step(step=small, mapping=active_mapping(small.run))  # the mapping and computation rows exist
    compute_step(step=large, mapping=active_mapping(large.run))
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        compute_step(step=small, mapping=active_mapping(small.run))
    with django_assert_num_queries(len(few.captured_queries)):
        compute_step(step=large, mapping=active_mapping(large.run))


def test_a_current_step_is_not_computed_again_by_a_reader(acme):
    step = graded_step(acme, 2)
    mapping = active_mapping(step.run)
    first = compute_step(step=step, mapping=mapping)
    rows = stored(step)

    again = compute_step(step=step, mapping=mapping, unless_current=True)  # e.g. the trainer after the worker
    assert again.computed_at == first.computed_at and stored(step) == rows

    Step.objects.filter(pk=step.pk).update(inputs_version=F("inputs_version") + 1)  # as mark_stale does
    later = compute_step(step=step, mapping=mapping, unless_current=True)
    assert later.computed_at > first.computed_at and later.inputs_version == first.inputs_version + 1
    forced = compute_step(step=step, mapping=mapping)  # asked by name: always computed
    assert forced.computed_at > later.computed_at
