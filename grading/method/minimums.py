"""A project's minimum evidence for calibrated mappings: read (the defaults where it has set
none), edited by its admins, and held against a mapping before it is activated."""

from __future__ import annotations

from django.db import transaction

from grading.method.evidence import Evidence, EvidenceMinimum, recorded_evidence
from grading.models import CalibrationMinimum, FactorMapping, Project


def minimum_for(project: Project | int) -> EvidenceMinimum:
    """The project's minimum; the defaults (30 groups, 5 pairs a tier) where it has none. One query."""
    project_id = project if isinstance(project, int) else project.pk
    row = CalibrationMinimum.objects.filter(project_id=project_id).values_list("groups", "tier_pairs").first()
    return EvidenceMinimum() if row is None else EvidenceMinimum(groups=row[0], tier_pairs=row[1])


@transaction.atomic
def save_minimum(*, project: Project, user, groups: int, tier_pairs: int) -> CalibrationMinimum:
    """Store the project's minimum (ValueError, naming the field, for a value out of range)."""
    minimum = EvidenceMinimum(groups=groups, tier_pairs=tier_pairs)
    row, _ = CalibrationMinimum.objects.update_or_create(project=project, defaults={**minimum.to_dict(), "updated_by": user})
    return row


def mapping_evidence(mapping: FactorMapping, *, project: Project | int) -> Evidence | None:
    """What a mapping's recorded fit rests on against the project's minimum now; None for a
    mapping that records no fit (the built-in default, one set by hand)."""
    if mapping.source != FactorMapping.Source.CALIBRATED:
        return None
    return recorded_evidence(mapping.fit, minimum_for(project))
