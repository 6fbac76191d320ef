"""A project's graders and juries: as the run policy form offers them, and listed with their versions."""

from __future__ import annotations

from dataclasses import dataclass

from grading.models import Grader, Jury, Project, Run
from grading.registry.defined import newest_defined_versions


@dataclass(frozen=True)
class PolicyChoice:
    value: str  # as the run policy form posts it: a built-in's value, or "<name>@<version>"
    label: str
    selected: bool


def policy_graders(run: Run) -> list[PolicyChoice]:
    """The auto-graders the run's policy form offers: the built-ins, each of the project's
    defined LLM graders at its newest version, and the run's own if it pins an older one
    (one query)."""
    choices = [PolicyChoice(value, str(label), run.auto_grade == value) for value, label in Run.AutoGrade.choices]
    offered = {c.value for c in choices}
    for version in newest_defined_versions(run.project_id):
        label = f"{version.name}: {version.model}" + (f" ({version.grader.description})" if version.grader.description else "")
        choices.append(PolicyChoice(version.name, label[:200], run.auto_grade == version.name))
        offered.add(version.name)
    if run.auto_grade not in offered:
        choices.append(PolicyChoice(run.auto_grade, f"{run.auto_grade} (an older version)", True))
    return choices


def policy_juries(run: Run) -> list[PolicyChoice]:
    """The juries the run's policy form offers: each of the project's juries at its current
    version, and the run's own if it uses an older one (one query)."""
    current = run.jury
    choices: list[PolicyChoice] = []
    seen: set[str] = set()
    for jury in Jury.objects.filter(project_id=run.project_id).order_by("name", "-version"):
        is_current = jury.name not in seen
        seen.add(jury.name)
        if not is_current and (current is None or jury.pk != current.pk):
            continue
        rule = jury.get_rule_display()
        if jury.rule == Jury.Rule.AGREE_OR_ABSTAIN:
            rule += f" (gap {jury.max_gap}, then {jury.get_on_abstain_display()})"
        label = f"{jury.grader}: {rule} of {', '.join(jury.members)}" + ("" if is_current else " (an older version)")
        choices.append(PolicyChoice(f"{jury.name}@{jury.version}", label, current is not None and jury.pk == current.pk))
    return choices


def project_graders(project: Project) -> list[Grader]:
    """The project's graders, each with its versions in order: two queries."""
    return list(Grader.objects.filter(project=project).prefetch_related("versions").order_by("name"))
