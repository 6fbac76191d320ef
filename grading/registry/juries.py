"""Juries as definitions: a project's named sets of grader versions (name@version) whose verdicts
are combined into one under a rule; each change is a new version, whose verdicts are a new
grader's (``jury:<name>@<version>``). Their verdicts are grading.verdicts.deliberation's."""

from __future__ import annotations

from django.db import transaction

from grading.grader.combine import MAX_MEMBERS, RULES
from grading.models import Jury, Project
from grading.registry.backends import GraderUnavailable, grader_name
from grading.registry.defined import defined_names

JURY_PREFIX = "jury:"
MAX_JURY_NAME = 60
MAX_GAP = 2  # tiers T1..T3: a gap of 2 is the widest


class JuryError(ValueError):
    """A refused jury definition; `field` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def is_jury(grader: str) -> bool:
    return grader.startswith(JURY_PREFIX)


def _check(name, members, rule, max_gap, on_abstain) -> None:
    if not isinstance(name, str) or not name or len(name) > MAX_JURY_NAME or not all(c.isalnum() or c in "-_." for c in name):
        raise JuryError("name", f"name must be 1 to {MAX_JURY_NAME} letters, digits, '-', '_' or '.'")
    if (
        not isinstance(members, list)
        or not 2 <= len(members) <= MAX_MEMBERS
        or not all(isinstance(m, str) and 0 < len(m) <= 100 and "@" in m for m in members)
    ):
        raise JuryError("members", f"members must be 2 to {MAX_MEMBERS} grader names (name@version)")
    if len(set(members)) != len(members):
        raise JuryError("members", "a grader may sit on a jury once")
    if any(is_jury(m) for m in members):
        raise JuryError("members", "a jury cannot sit on a jury")
    if rule not in RULES:
        raise JuryError("rule", f"rule must be one of {', '.join(RULES)}")
    if isinstance(max_gap, bool) or not isinstance(max_gap, int) or not 0 <= max_gap <= MAX_GAP:
        raise JuryError("max_gap", f"max_gap must be a whole number of tiers from 0 to {MAX_GAP}")
    if on_abstain not in Jury.OnAbstain.values:
        raise JuryError("on_abstain", f"on_abstain must be one of {', '.join(Jury.OnAbstain.values)}")


@transaction.atomic
def save_jury(
    *, project: Project, name: str, members: list[str], rule: str, max_gap: int = 1, on_abstain: str = "fallback"
) -> tuple[Jury, bool]:
    """Define a jury, or edit it: a changed definition is a new version (its verdicts are a new
    grader's); the same definition again returns the current version. Returns (jury, created)."""
    _check(name, members, rule, max_gap, on_abstain)
    current = Jury.objects.select_for_update().filter(project=project, name=name).order_by("-version").first()
    if current is not None and (current.members, current.rule, current.max_gap, current.on_abstain) == (
        members,
        rule,
        max_gap,
        on_abstain,
    ):
        return current, False
    jury = Jury.objects.create(
        project=project,
        name=name,
        version=(current.version + 1) if current else 1,
        members=list(members),
        rule=rule,
        max_gap=max_gap,
        on_abstain=on_abstain,
    )
    return jury, True


def jury_list(project: Project) -> list[Jury]:
    return list(Jury.objects.filter(project=project).order_by("name", "-version"))


def current_jury(project: Project, name: str) -> Jury | None:
    return Jury.objects.filter(project=project, name=name).order_by("-version").first()


def member_backends(jury: Jury) -> list[str]:
    """The graders that grade here as the jury's members: the built-in backends (heuristic,
    llm) whose current version sits on it, and the project's defined LLM graders that do
    (grading.registry.defined). Members that match none run elsewhere and post their verdicts."""
    backends = []
    for backend in ("heuristic", "llm"):
        try:
            if grader_name(backend, jury.project_id) in jury.members:
                backends.append(backend)
        except GraderUnavailable:
            continue
    return backends + defined_names(jury.project_id, list(jury.members))
