"""Reads of factor mappings for the API: which a project sees, which runs each is in force
for, and a run's activation history."""

from __future__ import annotations

from django.db.models import OuterRef, Q, QuerySet, Subquery

from grading.method.services import active_mapping, default_mapping
from grading.models import FactorMapping, MappingActivation, Project, Run


def visible_mappings(project: Project) -> QuerySet[FactorMapping]:
    """The built-in default(s) and the project's own, as `resolve_mapping` sees them."""
    return FactorMapping.objects.filter(Q(project__isnull=True) | Q(project=project)).select_related(
        "project", "created_by__service_account__created_by"
    )


def with_active_runs(project: Project, mappings: list[FactorMapping]) -> list[FactorMapping]:
    """Set `active_runs` on each mapping: the runs of `project` it is in force for now.

    One query, plus one when the built-in default is not among `mappings` (or must be recreated).
    """
    latest = MappingActivation.objects.filter(run=OuterRef("pk")).order_by("-created_at", "-id").values("mapping_id")[:1]
    runs = (
        Run.objects.filter(project=project).annotate(active_id=Subquery(latest)).order_by("name").values_list("name", "active_id")
    )
    by_mapping: dict[int, list[str]] = {}
    default_id = None
    for name, active_id in runs:
        if active_id is None:  # never activated: the built-in default applies (active_mapping)
            if default_id is None:
                default_id = next(
                    (m.pk for m in mappings if m.project_id is None and (m.name, m.version) == ("default", 1)), None
                )
                default_id = default_id or default_mapping().pk
            active_id = default_id
        by_mapping.setdefault(active_id, []).append(name)
    for mapping in mappings:
        # not a model field: MappingListItemSerializer reads it
        mapping.active_runs = by_mapping.get(mapping.pk, [])  # type: ignore[attr-defined]
    return mappings


def visible_mapping(project: Project, pk: int) -> FactorMapping | None:
    """The mapping of that id if `project` sees it (visible_mappings), None otherwise."""
    return visible_mappings(project).filter(pk=pk).first()


def mapping_list(project: Project) -> list[FactorMapping]:
    """Every mapping `project` sees, each with its `active_runs` (with_active_runs)."""
    return with_active_runs(project, list(visible_mappings(project)))


def activation_history(run: Run) -> list[MappingActivation]:
    """Every activation of the run, newest first, with what the API shows of each."""
    return list(
        run.mapping_activations.select_related(
            "run",
            "mapping__project",
            "mapping__created_by__service_account__created_by",
            "activated_by__service_account__created_by",
        )
    )


def run_mapping(run: Run, history: list[MappingActivation]) -> FactorMapping:
    """The mapping in force for the run: the latest activation's, or the built-in default."""
    return history[0].mapping if history else active_mapping(run)  # the built-in default: no project, no author
