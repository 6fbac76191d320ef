"""Creating a tier->factor mapping and activating it for a run: refused below the project's
minimum evidence unless overridden, and for a run graded by another grader than the one the
mapping was fitted on."""

from __future__ import annotations

import logging
from typing import cast

from django.db import IntegrityError, transaction
from django.db.models import F, FloatField, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Abs, Coalesce

from grading.method.evidence import TooLittleEvidence
from grading.method.minimums import mapping_evidence
from grading.method.services.staleness import mark_stale
from grading.models import (
    AdvantageResult,
    FactorMapping,
    Group,
    MappingActivation,
    Run,
    Verdict,
)

logger = logging.getLogger(__name__)


NOT_GIVEN = object()  # activate_mapping's run_grader when the caller named none


def create_mapping(
    *,
    project,
    name: str,
    bands: dict,
    note: str = "",
    user=None,
    source: str = FactorMapping.Source.MANUAL,
    fit: dict | None = None,
    grader: str = "",
) -> FactorMapping:
    """A new mapping `name@N`, N one past the newest version of that name the project can see.

    Versions count per project: the project's own versions of the name and the built-in
    (project-less) ones, never another project's, so a name used elsewhere neither shows
    nor moves the count (a built-in mapping counts every project's). (project, name,
    version) is unique, and (name, version) among built-in mappings. Two admins creating
    the same name at once both succeed, one version apart.
    """
    mine = Q(project__isnull=True) | Q(project=project) if project is not None else Q()
    attempts = 3
    while True:
        try:
            with transaction.atomic():
                newest = FactorMapping.objects.filter(mine, name=name).aggregate(v=Max("version"))["v"] or 0
                return FactorMapping.objects.create(
                    project=project,
                    name=name,
                    version=newest + 1,
                    bands=bands,
                    note=note,
                    source=source,
                    fit=fit or {},
                    grader=grader,
                    created_by=user,
                )
        except IntegrityError:  # someone took that version meanwhile
            attempts -= 1
            if not attempts:
                raise


class GraderMismatch(ValueError):
    """A calibrated mapping fitted on one grader's verdicts, refused for a run another grader grades."""


def mapping_grader_refusal(run: Run, grader: str, *, run_grader: str | None) -> str | None:
    """Why a mapping fitted on `grader`'s verdicts may not be activated for `run`, or None when
    it may. A fit describes one grader version's tiers, so it is used only where those tiers
    are the ones the method reads: `run_grader`, the run's policy grader or jury (the caller's
    grading.jobs.policy.auto_grader_name), or,
    when the policy names none and the newest verdict of each group counts, a run whose
    valid verdicts are all `grader`'s. An empty `grader` (default and manual mappings) may
    be activated anywhere. At most one query."""
    if not grader:
        return None
    named = run_grader
    if named is not None:
        if named == grader:
            return None
        return (
            f"it was fitted on {grader}'s verdicts, but run {run.name!r} is graded by {named}: "
            f"fit a mapping on {named}'s verdicts, or make {grader} the run's grader first"
        )
    found = list(
        Verdict.objects.filter(group__run=run, status=Verdict.Status.VALID)
        .order_by()
        .values_list("grader", flat=True)
        .distinct()[:2]
    )
    if found == [grader]:
        return None
    held = "no valid verdict" if not found else "verdicts of other graders"
    return (
        f"it was fitted on {grader}'s verdicts, but run {run.name!r} names no grader in its policy and holds {held}: "
        f"make {grader} the run's grader (auto-grade or jury) first"
    )


@transaction.atomic
def activate_mapping(
    *,
    run: Run,
    mapping: FactorMapping,
    user=None,
    reason: str = "",
    override: bool = False,
    run_grader: str | object | None = NOT_GIVEN,
) -> MappingActivation:
    """Make `mapping` the run's active one. A calibrated mapping whose recorded fit is below
    the project's minimum evidence (grading.method.evidence) raises TooLittleEvidence unless
    `override`; an activation that overrode the minimum says so. A mapping fitted on one
    grader version's verdicts (`mapping.grader`) raises GraderMismatch on a run whose numbers
    rest on another grader's (mapping_grader_refusal), override or not: such a mapping needs
    `run_grader`, the grader the run's policy names (grading.jobs.policy.auto_grader_name)."""
    if mapping.project_id not in (None, run.project_id):
        raise ValueError("that mapping belongs to another project")
    if mapping.grader:
        if run_grader is NOT_GIVEN:
            raise TypeError(f"{mapping.label} was fitted on one grader's verdicts: name the run's grader (run_grader=)")
        refused = mapping_grader_refusal(run, mapping.grader, run_grader=cast("str | None", run_grader))
        if refused is not None:
            raise GraderMismatch(f"{mapping.label} cannot be activated for {run.name}: {refused}")
    evidence = mapping_evidence(mapping, project=run.project_id)
    below = evidence is not None and not evidence.sufficient
    if below and evidence is not None and not override:  # `below` already says it is not None
        raise TooLittleEvidence(evidence)
    activation = MappingActivation.objects.create(
        run=run, mapping=mapping, activated_by=user, reason=reason, overrode_minimum=below
    )
    # Until the recomputation lands, the queue orders by what is stored under the new mapping.
    stored = (
        AdvantageResult.objects.filter(step_id=OuterRef("step_id"), uid=OuterRef("uid"), mapping=mapping)
        .order_by()
        .values("step_id")
        .annotate(s=Sum(Abs(F("redistributed_advantage") - F("advantage"))))
        .values("s")
    )
    Group.objects.filter(run=run).update(credit_moved=Coalesce(Subquery(stored, output_field=FloatField()), 0.0))
    mark_stale(step_ids=list(run.steps.values_list("id", flat=True)))
    return activation
