"""Turning people's judgments into the mapping a run uses (docs/method.md §5).

A calibrated mapping is a new, immutable FactorMapping version whose `fit` records what it
came from — the count table, k, q, the bootstrap intervals, how many judgments and
groups, and the slice (run / grader / step) they were drawn from — and activating it is
the same versioned, logged, recomputing step as any other mapping (MappingActivation).
"""

from __future__ import annotations

from django.db import transaction

from grading.method.services import activate_mapping, create_mapping
from grading.models import FactorMapping, MappingActivation, Run
from reviews.stats.calibration import FittedMapping

MIN_REASON_CHARS = 3


@transaction.atomic
def activate_fitted_mapping(*, run: Run, fitted: FittedMapping, user, reason: str, scope: dict,
                            n_judgments: int) -> tuple[FactorMapping, MappingActivation]:
    reason = (reason or "").strip()
    if len(reason) < MIN_REASON_CHARS:
        raise ValueError("say why: activating a mapping needs a reason")
    if fitted.n_judgments == 0:
        raise ValueError("no judgments pair a grader tier with a person's: nothing to fit")
    fit = {**fitted.to_dict(), "n_judgments": n_judgments, "n_pairs": fitted.n_judgments, "scope": scope}
    mapping = create_mapping(project=run.project, name=f"{run.project.name}-calibrated", bands=fitted.bands(),
                             note=reason, user=user, source=FactorMapping.Source.CALIBRATED, fit=fit)
    return mapping, activate_mapping(run=run, mapping=mapping, user=user, reason=reason)
