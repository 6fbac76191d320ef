"""Building a blind comparison from two runs of real trajectories: what it stores, that the
same seed gives the same groups, that its groups are judged and graded, and that a refused
body names its field and stores nothing."""

from __future__ import annotations

import pytest

from grading.comparisons.services import ComparisonError, create_comparison
from grading.models import Comparison, ComparisonEntry, Group, Rollout, Run, Task, Verdict
from reviews.selectors.queue import queue_groups
from reviews.services.queue import update_policy
from tests.helpers.comparisons import TASKS, solved, two_runs

pytestmark = pytest.mark.django_db
BODY = {"name": "final", "a": {"run": "baseline"}, "b": {"run": "gagar"}, "per_side": 2}


@pytest.fixture
def runs(acme):
    two_runs(acme)
    return acme


def _members(comparison: Comparison) -> dict[str, list[tuple[int, str, int]]]:
    out: dict[str, list[tuple[int, str, int]]] = {}
    for e in ComparisonEntry.objects.filter(comparison=comparison).select_related("rollout__group").order_by("rollout__index"):
        out.setdefault(e.rollout.group.uid, []).append((e.rollout.index, e.side, e.source_id))
    return out


def test_a_comparison_holds_the_tasks_both_sides_solved_and_up_to_k_passes_of_each(runs):
    comparison = create_comparison(project=runs, body=BODY)
    both = solved(0) & solved(TASKS)
    assert comparison.n_solved_both == len(both) and comparison.label_a == "baseline@2" and comparison.label_b == "gagar@2"
    groups = Group.objects.filter(run=comparison.run)
    assert {g.uid for g in groups} == both
    assert all(g.in_comparison and g.to_judge and not g.is_mixed and g.n_passed == g.n_rollouts for g in groups)
    for uid, members in _members(comparison).items():
        assert [index for index, _, _ in members] == list(range(len(members)))
        for side, run in (("a", "baseline"), ("b", "gagar")):
            sources = Rollout.objects.filter(pk__in=[s for _, sd, s in members if sd == side]).select_related("group__run")
            available = Rollout.objects.filter(
                group__run__name=run, group__step__number=2, group__task__instance_id=uid, passed=True
            )
            assert 1 <= len(sources) == min(2, available.count())
            assert all(s.group.run.name == run and s.group.step.number == 2 and s.passed for s in sources)
    # A copy is its source: the same patch, messages and verdict; nothing on it names the side.
    for entry in ComparisonEntry.objects.filter(comparison=comparison).select_related("rollout__content", "source__content"):
        assert entry.rollout.content.patch == entry.source.content.patch
        assert entry.rollout.content.messages == entry.source.content.messages
        assert entry.rollout.passed and entry.rollout.reward == 1.0
    assert "baseline" not in comparison.run.description and "gagar" not in comparison.run.description
    for group in groups.select_related("task"):  # the task as side A's run holds it (the two differ here)
        a_task = Task.objects.get(run__name="baseline", instance_id=group.uid)
        b_task = Task.objects.get(run__name="gagar", instance_id=group.uid)
        assert a_task.problem_statement != b_task.problem_statement
        assert (group.task.problem_statement, group.task.repo) == (a_task.problem_statement, a_task.repo)


def test_the_same_seed_gives_the_same_groups_and_sides_are_shuffled(runs, acme):
    first = _members(create_comparison(project=acme, body=BODY))
    again = _members(create_comparison(project=acme, body={**BODY, "name": "final-again"}))
    assert {uid: [(i, sd) for i, sd, _ in m] for uid, m in first.items()} == {
        uid: [(i, sd) for i, sd, _ in m] for uid, m in again.items()
    }
    assert {uid: [s for *_, s in m] for uid, m in first.items()} == {uid: [s for *_, s in m] for uid, m in again.items()}
    orders = {"".join(sd for _, sd, _ in m) for m in first.values()}
    assert any(o != "".join(sorted(o)) for o in orders)  # not every group lists side A first


def test_step_ranges_max_tasks_and_checkpoints_of_one_run(runs, acme):
    comparison = create_comparison(
        project=acme, body={"name": "early-late", "a": {"run": "gagar", "step": 1}, "b": {"run": "gagar", "steps": [2, 2]}}
    )
    assert (comparison.label_a, comparison.label_b) == ("gagar@1", "gagar@2")
    sources = ComparisonEntry.objects.filter(comparison=comparison).values_list("side", "source__group__step_number")
    assert {(s, n) for s, n in sources} == {("a", 1), ("b", 2)}
    body = {**BODY, "name": "two", "max_tasks": 2, "a": {"run": "baseline", "steps": [1, 2]}}
    small = create_comparison(project=acme, body=body)
    assert small.run.groups.count() == 2 and small.label_a == "baseline@1-2"


def test_its_groups_enter_the_review_queue(runs, acme, bob):
    update_policy(project=acme, overlap=0.0, blind=True, lease_minutes=60)
    comparison = create_comparison(project=acme, body=BODY)
    queued = {g.uid for g in queue_groups(project=acme, reviewer=bob) if g.run_id == comparison.run_id}
    assert queued == set(comparison.run.groups.values_list("uid", flat=True))


def test_a_grader_named_in_the_body_grades_every_group(runs, acme, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        comparison = create_comparison(project=acme, body={**BODY, "grader": "heuristic"})
    verdicts = Verdict.objects.filter(group__run=comparison.run)
    assert verdicts.count() == comparison.run.groups.count()
    assert all(v.status == Verdict.Status.VALID for v in verdicts)
    assert all(v.grades.count() == v.group.n_rollouts for v in verdicts)


@pytest.mark.parametrize(
    ("body", "field", "status"),
    [
        ({**BODY, "a": {"run": "nope"}}, "a.run", 404),
        ({**BODY, "b": "gagar"}, "b", 400),
        ({**BODY, "name": ""}, "name", 400),
        ({**BODY, "name": "gagar"}, "name", 409),
        ({**BODY, "name": "a/b"}, "name", 400),
        ({**BODY, "a": {"run": "baseline", "steps": [3, 9]}}, "a.steps", 400),
        ({**BODY, "a": {"run": "baseline", "steps": [2, 1]}}, "a.steps", 400),
        ({**BODY, "a": {"run": "gagar", "steps": [1, 2]}, "b": {"run": "gagar", "step": 2}}, "b.steps", 400),
        ({**BODY, "per_side": 0}, "per_side", 400),
        ({**BODY, "per_side": "4"}, "per_side", 400),
        ({**BODY, "max_tasks": True}, "max_tasks", 400),
        ({**BODY, "grader": "no-such-grader"}, "grader", 400),
        ("[]", "body", 400),
    ],
)
def test_a_refused_body_names_its_field_and_stores_nothing(runs, acme, body, field, status):
    runs_before, groups_before = Run.objects.count(), Group.objects.count()
    with pytest.raises(ComparisonError) as refused:
        create_comparison(project=acme, body=body)
    assert (refused.value.field, refused.value.status) == (field, status)
    assert (Run.objects.count(), Group.objects.count(), Comparison.objects.count()) == (runs_before, groups_before, 0)


def test_sides_that_share_no_solved_task_are_refused(acme):
    from tests.helpers.comparisons import side_groups
    from tests.helpers.ingest import ingest_groups

    a = [g for g in side_groups("baseline", offset=0, steps=(1,)) if g["uid"] == "task-0@1"]
    b = [{**g, "uid": "task-1@1", "task": {**g["task"], "instance_id": "task-1"}} for g in a]
    ingest_groups(acme, *[{**g, "run": "baseline"} for g in a], *[{**g, "run": "gagar"} for g in b])
    with pytest.raises(ComparisonError) as refused:
        create_comparison(project=acme, body={**BODY, "a": {"run": "baseline"}, "b": {"run": "gagar"}})
    assert refused.value.status == 422 and "no task was solved by both" in str(refused.value)
    assert not Run.objects.filter(name="final").exists()


def test_a_name_taken_while_sampling_is_refused_and_nothing_is_stored(runs, acme, monkeypatch):
    from grading.comparisons import services

    original = services.sample

    def meanwhile(spec):  # another request stores a run of that name after this one checked it
        Run.objects.create(project=acme, name="final")
        return original(spec)

    monkeypatch.setattr(services, "sample", meanwhile)
    groups = Group.objects.count()
    with pytest.raises(ComparisonError) as refused:
        create_comparison(project=acme, body=BODY)
    assert (refused.value.field, refused.value.status) == ("name", 409)
    assert Group.objects.count() == groups and not Comparison.objects.exists()
    assert Run.objects.get(name="final").groups.count() == 0
