"""The calibration page: agreement with intervals, slices, heatmap, trends, fitted vs active
mapping with the evidence it rests on, a what-if preview on one step, and activation (admins,
confirmed in a dialog that says what it changes; below the project's minimum evidence an
override), and the project's minimum (admins)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from grading.formats import params
from grading.jobs.policy import auto_grader_name
from grading.method.advantage import MappingSpec
from grading.method.evidence import MAX_MINIMUM, TooLittleEvidence, assess
from grading.method.minimums import minimum_for, save_minimum
from grading.method.services.activation import mapping_grader_refusal
from grading.method.services.mappings import active_mapping
from grading.method.tiers import TIERS
from grading.models import Capability
from grading.projects.access import page_project
from reviews.presenters.calibration_page import heatmap_chart, lambda_chart, mapping_chart, trend_chart
from reviews.selectors import calibration as data
from reviews.services.calibration import activate_fitted_mapping


def _scope(request: HttpRequest, project) -> dict:
    """The run / grader / step the page is about, from the query (or the activation form)."""
    return data.page_scope(project, request.POST if request.method == "POST" else request.GET)


def _figures(project, scope, hidden_from=None) -> data.Figures:
    return data.figures(project=project, run=scope["run"], grader=scope["grader"], step=scope["step"], hidden_from=hidden_from)


@login_required
@require_GET
def calibration(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, membership = page_project(request, project, Capability.VIEW)
    scope = _scope(request, project_obj)
    frames = _figures(project_obj, scope, hidden_from=request.user)  # none of the viewer's open blind groups
    overall, fitted = frames.overall, frames.fitted
    run = scope["run"]
    active = active_mapping(run) if run else None
    steps = data.run_steps(run) if run else []
    preview = impact = refusal = None
    can_activate = Capability.MANAGE in membership.capabilities and run is not None
    if can_activate and frames.grader and fitted.n_judgments:  # a fit of another grader than the run's is refused
        refusal = mapping_grader_refusal(run, frames.grader, run_grader=auto_grader_name(run))
        can_activate = refusal is None
    minimum = minimum_for(project_obj)
    evidence = assess(counts=fitted.counts, n_groups=fitted.n_groups, minimum=minimum)
    if run and steps and fitted.n_judgments:
        chosen = request.GET.get("preview_step", "")
        step = next((s for s in steps if str(s.number) == chosen), steps[-1])
        proposed = MappingSpec.from_dict(fitted.bands())
        preview = data.preview(step=step, proposed=proposed)
        if can_activate:  # what the confirmation dialog says activating changes
            impact = data.activation_impact(run=run, proposed=proposed)
    trend = frames.trend
    assert frames.slices is not None  # figures() reads them unless told not to
    rows, hidden_steps = data.latest_step_slices(
        frames.slices, None if request.GET.get("steps") == "all" else data.STEP_SLICES_SHOWN
    )
    all_steps = request.GET.copy()
    all_steps["steps"] = "all"
    context = {
        "project": project_obj,
        "membership": membership,
        "scope": scope,
        "frames": frames,
        "overall": overall,
        "rows": rows,
        "hidden_steps": hidden_steps,
        "all_steps_query": all_steps.urlencode(),
        "ceiling": frames.ceiling,
        "fitted": fitted,
        "active": active,
        "steps": steps,
        "preview": preview,
        "trend": trend,
        "can_activate": can_activate,
        "refusal": refusal,
        "fits": _fits(scope, frames, run),
        "impact": impact,
        "evidence": evidence,
        "minimum": minimum,
        "max_minimum": MAX_MINIMUM,
        "can_set_minimum": Capability.MANAGE in membership.capabilities,
        "fitted_rows": _mapping_rows(fitted, active),
        "heatmap": heatmap_chart(overall["confusion"]),
        "confusion_rows": list(zip(TIERS, overall["confusion"])),
        "trend_chart": trend_chart(trend),
        "mapping_chart": mapping_chart(fitted, active),
        "lambda_chart": lambda_chart(preview) if preview else None,
    }
    return render(request, "reviews/calibration.html", context)


def _fits(scope, frames: data.Figures, run) -> dict:
    """Which grader version the figures and the fit are for, and why that one; the picker's
    versions (the one fitted first among them when it graded none of the judged groups)."""
    if scope["grader"]:
        why = "chosen"
    elif run is not None and auto_grader_name(run) is not None:
        why = "the run's grader"
    else:
        why = "the version that graded the most judged groups here"
    versions = dict(frames.versions)
    if frames.grader and frames.grader not in versions:
        versions = {frames.grader: 0, **versions}
    return {"grader": frames.grader, "why": why, "versions": list(versions.items())}


def _mapping_rows(fitted, active) -> list[dict]:
    """One row per grader tier. A tier without pairs has no interval, and says why: its f is
    the prior q (or its pooled neighbour's), not something the judgments measured."""
    bands = active.bands if active else {}
    rows = []
    for n, tier in enumerate(TIERS):
        interval = fitted.intervals[n] if fitted.intervals else None
        pairs = sum(fitted.counts[n])
        why = ""
        if not pairs:
            why = f"no pairs: the grader gave {tier} to none of the judged rollouts, so f is the prior, not a measurement"
        elif interval is None:
            why = "no interval asked for"
        rows.append(
            {
                "tier": tier,
                "f": fitted.f[n],
                "lo": interval[0] if interval else None,
                "hi": interval[1] if interval else None,
                "why": why,
                "pairs": pairs,
                "m": fitted.m[n],
                "counts": fitted.counts[n],
                "active": bands.get(tier),
            }
        )
    return rows


@login_required
@require_POST
def activate(request: HttpRequest, project: str) -> HttpResponse:
    project_obj, _ = page_project(request, project, Capability.MANAGE)
    scope = _scope(request, project_obj)
    back = reverse("calibration", args=[project]) + ("?" + urlencode({"run": scope["run"].name}) if scope["run"] else "")
    if scope["run"] is None:
        messages.error(request, "Choose the run the mapping is for.")
        return redirect(back)
    frames = _figures(project_obj, scope)
    fitted = frames.fitted
    try:
        mapping, activation = activate_fitted_mapping(
            run=scope["run"],
            fitted=fitted,
            user=request.user,
            reason=request.POST.get("reason", ""),
            scope={"run": scope["run"].name, "grader": frames.grader, "step": scope["step"]},
            grader=frames.grader or "",
            n_judgments=frames.n_judgments,
            override=request.POST.get("override") == "1",
        )
    except TooLittleEvidence as refused:
        messages.error(
            request,
            f"Not activated: the fit rests on too little evidence ({'; '.join(refused.evidence.shortfalls)}). "
            "Activating it anyway needs the override in the confirmation dialog.",
        )
        return redirect(back)
    except ValueError as error:
        messages.error(request, f"Not activated: {error}")
        return redirect(back)
    below = " below the project's minimum evidence, by override" if activation.overrode_minimum else ""
    messages.success(
        request, f"{mapping.label} is now active for {scope['run'].name}{below}; every step's advantages are being recomputed."
    )
    return redirect(back)


@login_required
@require_POST
def minimum(request: HttpRequest, project: str) -> HttpResponse:
    """The project's minimum evidence for activating a fit without an override (admins)."""
    project_obj, _ = page_project(request, project, Capability.MANAGE)
    back = reverse("calibration", args=[project])
    if request.POST.get("run") and params.usable_name(request.POST["run"]):
        back += "?" + urlencode({"run": request.POST["run"]})
    values = {name: request.POST.get(name, "").strip() for name in ("groups", "tier_pairs")}
    bad = [name for name, value in values.items() if not params.is_whole(value) or len(value) > 7 or int(value) > MAX_MINIMUM]
    if bad:
        labels = {"groups": "judged mixed groups", "tier_pairs": "pairs a tier"}
        messages.error(
            request,
            f"Minimum not changed: {' and '.join(labels[b] for b in bad)} must be a whole number from 0 to {MAX_MINIMUM:,}.",
        )
        return redirect(back)
    row = save_minimum(project=project_obj, user=request.user, groups=int(values["groups"]), tier_pairs=int(values["tier_pairs"]))
    messages.success(
        request,
        f"Minimum evidence for {project_obj.name}: {row.groups} judged mixed groups and every tier "
        f"seen in at least {row.tier_pairs} pairs.",
    )
    return redirect(back)
