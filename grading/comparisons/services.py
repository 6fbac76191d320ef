"""Build a blind comparison between two runs or checkpoints, the method's protocol: the tasks both
sides solved, up to k passing rollouts of each side per task, shuffled into one cross-run group
per task, stored in a run of the comparison's own name and judged like any group
(Group.in_comparison puts them in the review queue and in reach of the graders).

The rollouts are copied through the ingest service, so a comparison's groups are clustered,
highlighted, indexed and scanned like every other. Which side a copy came from is written only
to ComparisonEntry; nothing on the copy says it (its index is its place in the shuffle).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson
from django.db import IntegrityError, transaction

from grading.formats.groupline import MAX_NAME, LineError, check_name
from grading.ingest.service import ingest_group_lines
from grading.jobs.grade import queue_step
from grading.models import Comparison, ComparisonEntry, Group, Project, Rollout, Run
from grading.registry.backends import GraderUnavailable
from grading.selectors.lines import rollout_as_line, task_as_line

DEFAULT_PER_SIDE = 4
MAX_PER_SIDE = 16
DEFAULT_MAX_TASKS = 100
MAX_TASKS = 2000
STEP = 1  # the comparison run's one step


class ComparisonError(ValueError):
    """A refused comparison; `field` names what was wrong, `status` the HTTP status it is."""

    def __init__(self, field: str, message: str, *, status: int = 400):
        super().__init__(message)
        self.field = field
        self.status = status


@dataclass(frozen=True)
class SideSpec:
    run: Run
    first: int
    last: int

    @property
    def label(self) -> str:
        steps = f"{self.first}" if self.first == self.last else f"{self.first}-{self.last}"
        return f"{self.run.name}@{steps}"


@dataclass(frozen=True)
class ComparisonSpec:
    name: str
    a: SideSpec
    b: SideSpec
    per_side: int
    max_tasks: int
    seed: int
    grader: str


def _whole(body: Mapping[str, Any], key: str, *, default: int, low: int, high: int, field: str | None = None) -> int:
    value = body.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ComparisonError(field or key, f"must be a whole number from {low} to {high}, got {value!r}"[:300])
    return value


def _side(project: Project, body: Mapping[str, Any], key: str) -> SideSpec:
    raw = body.get(key)
    if not isinstance(raw, Mapping):
        raise ComparisonError(key, 'required: an object {"run": <name>, "steps": [first, last]} or {"run", "step"}')
    name = raw.get("run")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise ComparisonError(f"{key}.run", "required: the name of one of the project's runs")
    run = Run.objects.filter(project=project, name=name).first()
    if run is None:
        raise ComparisonError(f"{key}.run", f"no run {name!r} in {project.name}", status=404)
    numbers = list(run.steps.order_by("number").values_list("number", flat=True))
    if not numbers:
        raise ComparisonError(f"{key}.run", f"run {name!r} holds no steps yet")
    if "steps" in raw and "step" in raw:
        raise ComparisonError(f"{key}.steps", "give steps or step, not both")
    if "step" in raw:
        first = last = _whole(raw, "step", default=numbers[-1], low=0, high=2**31 - 1, field=f"{key}.step")
    elif "steps" in raw:
        steps = raw["steps"]
        if (
            not isinstance(steps, list)
            or len(steps) != 2
            or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in steps)
            or steps[0] > steps[1]
        ):
            raise ComparisonError(f"{key}.steps", "must be [first, last]: two whole numbers, first <= last")
        first, last = steps
    else:  # the run's latest checkpoint
        first = last = numbers[-1]
    if not any(first <= n <= last for n in numbers):
        raise ComparisonError(f"{key}.steps", f"run {name!r} holds no step from {first} to {last}")
    return SideSpec(run=run, first=first, last=last)


def read_spec(project: Project, body: Any) -> ComparisonSpec:
    """The comparison a request body asks for; ComparisonError naming the field otherwise."""
    if not isinstance(body, Mapping):
        raise ComparisonError("body", "must be a JSON object")
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ComparisonError("name", "required: the comparison's name (also the name of the run holding its groups)")
    name = name.strip()
    if len(name) > 100:
        raise ComparisonError("name", "at most 100 characters")
    try:
        check_name(name, "name", kind="run")
    except LineError as exc:
        raise ComparisonError("name", str(exc).removeprefix("name: ")) from None
    if Run.objects.filter(project=project, name=name).exists():
        raise ComparisonError("name", f"{project.name} already has a run named {name!r}", status=409)
    a, b = _side(project, body, "a"), _side(project, body, "b")
    if a.run.pk == b.run.pk and not (a.last < b.first or b.last < a.first):
        raise ComparisonError("b.steps", "the two sides of one run must cover steps that do not overlap")
    grader = body.get("grader") or ""
    if not isinstance(grader, str) or len(grader) > 100:
        raise ComparisonError("grader", "a grader's name (heuristic, llm, or a defined grader's <name>@<version>)")
    return ComparisonSpec(
        name=name,
        a=a,
        b=b,
        per_side=_whole(body, "per_side", default=DEFAULT_PER_SIDE, low=1, high=MAX_PER_SIDE),
        max_tasks=_whole(body, "max_tasks", default=DEFAULT_MAX_TASKS, low=1, high=MAX_TASKS),
        seed=_whole(body, "seed", default=0, low=0, high=2**63 - 1),
        grader=grader,
    )


def _passing(side: SideSpec) -> dict[str, list[int]]:
    """Instance id -> ids of the side's passing rollouts: passed, kept by the trainer, no
    confirmed cheat (a confirmed cheat's reward is zeroed: it did not pass)."""
    rows = (
        Rollout.objects.filter(
            group__run=side.run, group__step_number__gte=side.first, group__step_number__lte=side.last, passed=True, dropped=""
        )
        .exclude(cheat_decisions__confirmed=True)
        .order_by("pk")
        .values_list("group__task__instance_id", "pk")
    )
    out: dict[str, list[int]] = defaultdict(list)
    for instance_id, pk in rows:
        out[instance_id].append(pk)
    return out


@dataclass(frozen=True)
class Pick:
    instance_id: str
    members: list[tuple[str, int]]  # (side, source rollout id) in the group's shuffled order


def sample(spec: ComparisonSpec) -> tuple[int, list[Pick]]:
    """(tasks both sides solved, the picks): up to max_tasks of those tasks, and per task up to
    per_side rollouts of each side, shuffled; the same spec and data give the same picks."""
    a, b = _passing(spec.a), _passing(spec.b)
    both = sorted(set(a) & set(b))
    rng = np.random.default_rng(spec.seed)
    tasks = both
    if len(both) > spec.max_tasks:
        tasks = sorted(both[i] for i in rng.choice(len(both), size=spec.max_tasks, replace=False))
    picks = []
    for instance_id in tasks:
        members: list[tuple[str, int]] = []
        for side, ids in ((Comparison.Side.A, a[instance_id]), (Comparison.Side.B, b[instance_id])):
            if len(ids) > spec.per_side:
                ids = [ids[i] for i in sorted(rng.choice(len(ids), spec.per_side, replace=False))]
            members += [(str(side), pk) for pk in ids]
        order = rng.permutation(len(members))
        picks.append(Pick(instance_id=instance_id, members=[members[i] for i in order]))
    return len(both), picks


def _lines(spec: ComparisonSpec, picks: list[Pick]) -> Iterator[tuple[int, bytes]]:
    """The comparison's groups as `gagar-group/1` lines, one task's rollouts read at a time."""
    for number, pick in enumerate(picks, 1):
        ids = [pk for _, pk in pick.members]
        rollouts = {r.pk: r for r in Rollout.objects.filter(pk__in=ids).select_related("content", "group__step", "group__task")}
        task = rollouts[next(pk for side, pk in pick.members if side == Comparison.Side.A)].group.task  # side A's
        out = []
        for index, pk in enumerate(ids):
            rollout = rollouts[pk]
            line = rollout_as_line(rollout)
            line["index"] = index
            out.append(line)
        group = {"format": "gagar-group/1", "run": spec.name, "step": STEP, "uid": pick.instance_id}
        group |= {"task": task_as_line(task), "rollouts": out}
        yield number, orjson.dumps(group)


def _source_labels(ids: list[int], chunk: int = 500) -> dict[int, str]:
    """Each source rollout as "<run>@<step>/<group uid>#<index>", read `chunk` ids a query
    (a comparison may pick tens of thousands; SQLite caps a query's parameters)."""
    out: dict[int, str] = {}
    for start in range(0, len(ids), chunk):
        rows = Rollout.objects.filter(pk__in=ids[start : start + chunk]).values_list(
            "pk", "group__run__name", "group__step_number", "group__uid", "index"
        )
        out |= {pk: f"{run}@{step}/{uid}#{index}" for pk, run, step, uid, index in rows}
    return out


def create_comparison(*, project: Project, body: Any, user=None) -> Comparison:
    """Sample, store and (when the body names a grader) queue a comparison; all of it or none.
    ComparisonError (naming the field) when the body is refused or no task was solved by both."""
    spec = read_spec(project, body)
    n_both, picks = sample(spec)
    if not picks:
        raise ComparisonError(
            "b", f"no task was solved by both {spec.a.label} and {spec.b.label}: there is nothing to compare", status=422
        )
    labels = _source_labels([pk for p in picks for _, pk in p.members])
    with transaction.atomic():
        try:  # the run first: a request that took the name meanwhile makes this one wait, then refuses it
            with transaction.atomic():
                run = Run.objects.create(
                    project=project, name=spec.name, description=f"The cross-run groups of the blind comparison {spec.name!r}."
                )
        except IntegrityError:
            raise ComparisonError("name", f"{project.name} already has a run named {spec.name!r}", status=409) from None
        report = ingest_group_lines(project=project, lines=_lines(spec, picks))
        if report.errors:  # a stored rollout that no longer reads as a line: refuse it all
            first = report.errors[0]
            raise ComparisonError("a", f"a rollout could not be copied: {first.error}"[:500], status=422)
        comparison = Comparison.objects.create(
            project=project,
            name=spec.name,
            run=run,
            run_a=spec.a.run,
            steps_a=[spec.a.first, spec.a.last],
            label_a=spec.a.label,
            run_b=spec.b.run,
            steps_b=[spec.b.first, spec.b.last],
            label_b=spec.b.label,
            per_side=spec.per_side,
            max_tasks=spec.max_tasks,
            seed=spec.seed,
            n_solved_both=n_both,
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        stored = Rollout.objects.filter(group__run=run).values_list("pk", "group__uid", "index")
        copies = {(uid, index): pk for pk, uid, index in stored}
        ComparisonEntry.objects.bulk_create(
            ComparisonEntry(
                comparison=comparison,
                rollout_id=copies[(pick.instance_id, index)],
                side=side,
                source_id=pk,
                source_label=labels[pk][:1200],
            )
            for pick in picks
            for index, (side, pk) in enumerate(pick.members)
        )
        Group.objects.filter(run=run).update(in_comparison=True)
        if spec.grader:
            try:
                queue_step(step=run.steps.get(number=STEP), backend=spec.grader)
            except GraderUnavailable as exc:
                raise ComparisonError("grader", str(exc)) from None
    return comparison
