"""The run timeline: the trainer's metrics and the desk's over steps, runs side by side, the
differences at a step, and the warnings (grading.health)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from grading.formats import params
from grading.health.compare import paired_difference
from grading.method.services.mappings import active_mapping
from grading.models import Capability, Run
from grading.presenters import timeline as present
from grading.projects.access import page_run
from grading.selectors.metrics import TASK_FIGURES, run_health, task_figures
from grading.selectors.metrics import run_timeline as timeline_of
from grading.selectors.runs import run_list, run_named


@login_required
@require_GET
def run_timeline(request: HttpRequest, project: str, run: str) -> HttpResponse:
    project_obj, membership, run_obj = page_run(request, project, run, Capability.VIEW)
    query = request.GET
    first = params.whole_or(query.get("from"), "from", default=None)
    last = params.whole_or(query.get("to"), "to", default=None)
    health = run_health(run_obj, active_mapping(run_obj), first=first, last=last, project=project_obj)
    runs = [present.RunSeries(run_obj.name, health.timeline)]
    compared: list[Run] = []
    unknown: list[str] = []
    for name in dict.fromkeys(query.getlist("compare")):
        other = run_named(project_obj, name) if name and name != run_obj.name else None
        if other is None:
            unknown.append(name[:100])
            continue
        if len(compared) < present.MAX_COMPARED:
            compared.append(other)
            runs.append(present.RunSeries(other.name, timeline_of(other, active_mapping(other), first=first, last=last)))

    available = present.available_names([(r.run, r.timeline) for r in runs])
    names = [n for n in dict.fromkeys(query.getlist("show")) if n in available] or present.default_names(health.timeline)
    names = names[: present.MAX_CHARTS]
    overlay = [query.get("overlay", ""), query.get("with", "")]
    overlay_chart = present.overlay_chart(project, runs[0], *overlay) if all(n in available for n in overlay) else None

    differences = []
    at = params.whole_or(query.get("at"), "at", default=None)
    if compared:
        steps = set(health.timeline.steps)
        for r in runs[1:]:
            steps &= set(r.timeline.steps)
        at = at if at is not None else max(steps, default=None)
        if at is not None:
            base = task_figures(run_obj, at)
            for other in compared:
                theirs = task_figures(other, at)
                for figure in TASK_FIGURES:
                    found = paired_difference(figure, base[figure], theirs[figure])
                    if found is not None:
                        relative = found.relative
                        differences.append(
                            {"run": other.name, "difference": found, "relative_pct": None if relative is None else 100 * relative}
                        )

    return render(
        request,
        "grading/timeline.html",
        {
            "project": project_obj,
            "run": run_obj,
            "caps": membership.capabilities,
            "charts": [{**present.metric_chart(project, runs, n), "id": f"metric-{i}"} for i, n in enumerate(names)],
            "overlay_chart": overlay_chart,
            "overlay": overlay,
            "names": names,
            "available": available,
            "labels": {n: present.label(n) for n in available},
            "first": first,
            "last": last,
            "compared": [r.name for r in compared],
            "unknown": unknown,
            "other_runs": [r.name for r in run_list(project_obj) if r.pk != run_obj.pk],
            "at": at,
            "differences": differences,
            "warnings": present.warning_rows(project, run_obj.name, health.warnings),
            "thresholds_changed": health.thresholds.overrides(),
        },
    )
