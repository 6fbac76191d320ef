"""Turning people's judgments into the mapping a run uses (docs/method.md §5).

A calibrated mapping is a new, immutable FactorMapping version whose `fit` records what it
came from — the count table, k, q, the bootstrap intervals, how many judgments and
groups, and the slice (run / grader / step) they were drawn from — and, in `grader`, the
one grader version (or jury) whose verdicts it was fitted on; activating it is
the same versioned, logged, recomputing step as any other mapping (MappingActivation),
held to the project's minimum evidence (grading.method.evidence) like any other, and
refused for a run another grader grades (grading.method.services.activation.mapping_grader_refusal).
"""

from __future__ import annotations

import time

from django.db import transaction

from grading.jobs.policy import auto_grader_name
from grading.method.services.activation import GraderMismatch, activate_mapping, create_mapping, mapping_grader_refusal
from grading.models import FactorMapping, MappingActivation, Run
from grading.queueing import queue_on_commit
from reviews.stats.calibration import FittedMapping

MIN_REASON_CHARS = 3


@transaction.atomic
def activate_fitted_mapping(
    *,
    run: Run,
    fitted: FittedMapping,
    grader: str,
    user,
    reason: str,
    scope: dict,
    n_judgments: int,
    override: bool = False,
) -> tuple[FactorMapping, MappingActivation]:
    """Store the fit of `grader`'s verdicts as a new calibrated version and make it the run's
    active mapping.

    Below the project's minimum evidence it raises TooLittleEvidence (and stores nothing)
    unless `override`: the person has been shown what the fit rests on and confirmed. For a
    run graded by another grader it raises GraderMismatch (and stores nothing), override or not."""
    reason = (reason or "").strip()
    if len(reason) < MIN_REASON_CHARS:
        raise ValueError("say why: activating a mapping needs a reason")
    if fitted.n_judgments == 0:
        raise ValueError("no judgments pair a grader tier with a person's: nothing to fit")
    if not grader:
        raise ValueError("a fit is of one grader version's verdicts: name it")
    run_grader = auto_grader_name(run)
    refused = mapping_grader_refusal(run, grader, run_grader=run_grader)
    if refused is not None:
        raise GraderMismatch(f"the fit cannot be activated for {run.name}: {refused}")
    fit = {**fitted.to_dict(), "n_judgments": n_judgments, "n_pairs": fitted.n_judgments, "scope": scope, "grader": grader}
    mapping = create_mapping(
        project=run.project,
        name=f"{run.project.name}-calibrated",
        bands=fitted.bands(),
        note=reason,
        user=user,
        source=FactorMapping.Source.CALIBRATED,
        fit=fit,
        grader=grader,
    )
    return mapping, activate_mapping(run=run, mapping=mapping, user=user, reason=reason, override=override, run_grader=run_grader)


# Warming the calibration figures after judgments change --------------------------------
WARM_DELAY_SECONDS = 5  # judgments arriving within this long share one warming
WARM_FLAG = "gagar:calibration:warm-queued:{run_id}"
WARMED_AT = "gagar:calibration:warmed-at:{run_id}"  # when a worker last finished warming the run's figures


def shares_cache() -> bool:
    """Whether a worker's cache is the web processes' cache (a Redis cache, GAGAR_CACHE_URL):
    warming a process-local cache in a worker would help nobody."""
    from django.core.cache import caches
    from django.core.cache.backends.redis import RedisCache

    return isinstance(caches["default"], RedisCache)


def warming_enabled() -> bool:
    """Tasks go to real workers and the cache is shared (schedule_warm's conditions)."""
    from django.conf import settings

    return not getattr(settings, "CELERY_TASK_ALWAYS_EAGER", False) and shares_cache()


def schedule_warm(*, run_id: int) -> bool:
    """Queue one warming of the run's calibration figures after this transaction commits.

    A submit, an adjudication, an audit or a verdict changes the judgment frame, so the
    memoised figures of the changed slices are cold: the next calibration view or agreement
    call would resample them (seconds at a run's size). A worker computes them instead,
    once per burst: a flag in the shared cache lets the first change of a burst queue the
    task (WARM_DELAY_SECONDS later) and the rest find it queued. Nothing is queued when
    tasks run eagerly (it would run inside the request that changed the judgment) or when
    the cache is not shared. Returns whether a task was queued.
    """
    from django.core.cache import cache

    if not warming_enabled():
        return False
    if not cache.add(WARM_FLAG.format(run_id=run_id), 1, timeout=WARM_DELAY_SECONDS * 12):
        return False

    queue_on_commit("reviews.warm_calibration", robust=False, countdown=WARM_DELAY_SECONDS, run_id=run_id)
    return True


def warm_calibration(*, run_id: int) -> dict:
    """The task's body: the run's figures and its project's (every run), into the cache."""
    from django.core.cache import cache

    from reviews.selectors.calibration import MEMO_SECONDS, warm_figures

    cache.delete(WARM_FLAG.format(run_id=run_id))  # a change from now on queues another round
    run = Run.objects.select_related("project").filter(pk=run_id).first()
    if run is None:
        return {"run_id": run_id, "skipped": "run no longer exists"}
    shown = warm_figures(project=run.project, run=run)
    warm_figures(project=run.project, run=None)
    cache.set(WARMED_AT.format(run_id=run_id), time.time(), MEMO_SECONDS)
    return {"run_id": run_id, "judgments": shown.n_judgments}


def warmed_at(*, run_id: int) -> float | None:
    """When a worker last finished warming the run's figures (a Unix time), if it has."""
    from django.core.cache import cache

    return cache.get(WARMED_AT.format(run_id=run_id))
