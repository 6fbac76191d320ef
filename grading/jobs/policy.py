"""A run's grading policy: which grader tiers its mixed groups as they arrive, how
long a step waits for it, and the baseline. Set by an admin from the run page, the admin
site or `PATCH /api/v1/runs/{name}/`; checked here once for all three."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from django.db import IntegrityError, transaction

from grading.formats.groupline import MAX_NAME, LineError, check_name
from grading.method import partial
from grading.method.services.staleness import mark_stale
from grading.models import Jury, Project, Run
from grading.registry.backends import GraderUnavailable, grader_for, grader_name
from grading.registry.defined import newest_defined
from grading.verdicts.disagreements import refresh_run

POLICY_FIELDS = (
    "baseline",
    "auto_grade",
    "jury",
    "grading_deadline_seconds",
    "description",
    "drop_policy",
    "turn_weights",
    "settle_identical",
)
MAX_DESCRIPTION = 10_000


class PolicyError(ValueError):
    """A refused policy value; `field` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def auto_grader_name(run: Run) -> str | None:
    """The grader whose verdicts the run's method uses: its jury's name (jury:<name>@<version>)
    when the policy names one, else the version auto-grading uses (e.g. heuristic@1), or None
    when it is off or cannot run."""
    if run.jury is not None:
        return run.jury.grader
    if run.auto_grade == Run.AutoGrade.NONE:
        return None
    try:
        return grader_name(run.auto_grade, run.project_id)
    except GraderUnavailable:
        return None


def check_policy(fields: MutableMapping[str, Any], *, project: Project | None = None) -> MutableMapping[str, Any]:
    # Returns `fields` itself, with its `drop_policy` (if any) replaced in place by the checked
    # one, its `jury` (a name, or null for none) by the jury's current version and an
    # `auto_grade` naming a defined grader by the version it names (its newest for a bare name).
    unknown = set(fields) - set(POLICY_FIELDS)
    if unknown:
        name = sorted(unknown)[0]
        raise PolicyError(name, f"unknown field {name!r}; a run's policy has {', '.join(POLICY_FIELDS)}")
    if "baseline" in fields and fields["baseline"] not in Run.Baseline.values:
        raise PolicyError("baseline", f"baseline must be one of {', '.join(Run.Baseline.values)}")
    if "auto_grade" in fields:
        fields["auto_grade"] = _policy_auto_grade(fields["auto_grade"], project)
    if "grading_deadline_seconds" in fields:
        value = fields["grading_deadline_seconds"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= Run.MAX_DEADLINE_SECONDS:
            raise PolicyError(
                "grading_deadline_seconds",
                f"grading_deadline_seconds must be a whole number of seconds from 1 to {Run.MAX_DEADLINE_SECONDS}",
            )
    if "description" in fields:
        value = fields["description"]
        if not isinstance(value, str) or "\x00" in value or len(value) > MAX_DESCRIPTION:
            raise PolicyError("description", f"description must be text of at most {MAX_DESCRIPTION} characters, without NUL")
    for flag in ("turn_weights", "settle_identical"):
        if flag in fields and not isinstance(fields[flag], bool):
            raise PolicyError(flag, f"{flag} must be true or false, got {fields[flag]!r}")
    if "jury" in fields:
        fields["jury"] = _policy_jury(fields["jury"], project)
    if "drop_policy" in fields:
        try:
            fields["drop_policy"] = partial.check_policy(fields["drop_policy"])
        except ValueError as exc:
            raise PolicyError("drop_policy", str(exc)) from None
    return fields


def _policy_auto_grade(value: Any, project: Project | None) -> str:
    built_in = ", ".join(Run.AutoGrade.values)
    if not isinstance(value, str) or not value:
        raise PolicyError("auto_grade", f"auto_grade must be one of {built_in} or one of the project's defined graders")
    if value == Run.AutoGrade.NONE:
        return value
    project_id = project.pk if project is not None else None
    if value not in Run.AutoGrade.values:
        version = newest_defined(project_id, value[:MAX_NAME]) if project_id is not None else None
        if version is None:
            raise PolicyError(
                "auto_grade",
                f"auto_grade must be one of {built_in} or one of the project's defined graders (name, or name@version); "
                f"{value[:100]!r} is none of them",
            )
        value = version.name
    try:
        grader_for(value, project_id)  # refused now, when it is set, not later when a job fails
    except GraderUnavailable as exc:
        raise PolicyError("auto_grade", f"auto_grade={value} cannot run here: {exc}") from None
    return value


def _policy_jury(value: Any, project: Project | None) -> Jury | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or project is None:
        raise PolicyError("jury", "jury must be the name of one of the project's juries, or null")
    # "pair" is the jury's current version; "pair@2" (or "jury:pair@2") that version
    name, _, version = value.removeprefix("jury:").partition("@")
    juries = Jury.objects.filter(project=project, name=name)
    if version:
        if not version.isdecimal() or len(version) > 9:
            raise PolicyError("jury", f"a jury's version is a whole number, got {version[:20]!r}")
        juries = juries.filter(version=int(version))
    jury = juries.order_by("-version").first()
    if jury is None:
        raise PolicyError("jury", f"the project has no jury {value.removeprefix('jury:')[:80]!r}")
    for backend in ("heuristic", "llm"):  # a member this desk runs must be able to run now
        try:
            if grader_name(backend) in jury.members:
                grader_for(backend)
        except GraderUnavailable as exc:
            if backend == "heuristic":
                raise PolicyError("jury", f"jury {name} cannot run here: {exc}") from None
    return jury


def create_run(*, project: Project, name: str, policy: MutableMapping[str, Any]) -> Run:
    """A new run with its policy (a request's fields, checked here), before any group arrives.
    Refuses a name already taken."""
    if not isinstance(name, str) or not name.strip():
        raise PolicyError("name", "name must be a non-empty string")
    if len(name) > MAX_NAME:
        raise PolicyError("name", f"name must be at most {MAX_NAME} characters")
    try:
        check_name(name, "name", kind="run")
    except LineError as exc:
        raise PolicyError("name", str(exc)) from None
    fields = check_policy(policy, project=project)
    try:
        with transaction.atomic():
            return Run.objects.create(project=project, name=name, **fields)
    except IntegrityError:
        raise PolicyError("name", f"run {name!r} already exists in {project.name}; change its policy with PATCH") from None


@transaction.atomic
def update_run_policy(*, run: Run, changes: MutableMapping[str, Any]) -> Run:
    """Change some of a run's policy. A new baseline changes every step's advantages (they are
    recomputed), and so do a new drop policy (what a dropped rollout does to its group) and
    turning turn weights on or off (what the rows hold); a new auto-grader applies to groups
    stored from now on (grade earlier steps from their grading page or POST
    /api/v1/steps/{n}/grade/); a new deadline applies at once, and so does identical-patch
    settling, to the groups a worker takes from then on (grading.verdicts.identical)."""
    fields = check_policy(changes, project=run.project)
    run = Run.objects.select_for_update().get(pk=run.pk)
    changed = [name for name, value in fields.items() if getattr(run, name) != value]
    for name in changed:
        setattr(run, name, fields[name])
    if changed:
        run.save(update_fields=changed)
    if {"baseline", "drop_policy", "turn_weights", "jury"} & set(changed):  # a jury changes which verdict counts
        mark_stale(step_ids=list(run.steps.values_list("id", flat=True)))
    if {"jury", "grading_deadline_seconds"} & set(changed):  # whether, and until when, a jury waits for a person
        refresh_run(run)
    return run
