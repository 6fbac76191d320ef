"""The calibration page's charts (templates/reviews/calibration.html; static/js/charts.js draws
them): plain dicts of labels and datasets built from the figures the view reads."""

from __future__ import annotations

from grading.method.tiers import TIERS
from grading.presenters.charts import lambda_histogram


def heatmap_chart(confusion: list) -> dict:
    """Grader tier against the people's consensus tier, as counts."""
    return {
        "type": "heatmap",
        "labels": list(TIERS),
        "matrix": confusion,
        "xlabel": "people (consensus)",
        "ylabel": "grader",
    }


def trend_chart(trend: list[dict]) -> dict:
    return {
        "type": "line",
        "labels": [f"step {t['step']}" for t in trend],
        "ylabel": "value",
        "datasets": [
            {"label": "κ grader vs people", "data": [t["kappa"] for t in trend]},
            {"label": "T1 share, grader", "data": [t["grader_t1_share"] for t in trend]},
            {"label": "T1 share, people", "data": [t["human_t1_share"] for t in trend]},
        ],
    }


def mapping_chart(fitted, active) -> dict:
    """The fitted factors as points with their 95% intervals as error bars, over the active
    mapping's band per tier (a shaded range; a band of one value is a line), drawn by
    static/js/charts.js ("mapping")."""
    tiers = list(TIERS)
    return {
        "type": "mapping",
        "labels": tiers,
        "ylabel": "discount factor f",
        "fitted": {"label": "fitted f", "data": [round(v, 4) for v in fitted.f]},
        "intervals": {
            "label": "95% interval",
            "data": [None if iv is None else [round(iv[0], 4), round(iv[1], 4)] for iv in fitted.intervals],
        }
        if fitted.intervals
        else None,
        "bands": {"label": f"active {active.label} (band)", "data": [sorted(active.bands[t]) for t in tiers]} if active else None,
    }


def lambda_chart(preview) -> dict:
    now, then = lambda_histogram(preview.lambdas_active), lambda_histogram(preview.lambdas_proposed)
    return {
        "type": "bar",
        "labels": now["labels"],
        "xlabel": "λ",
        "ylabel": "graded groups",
        "datasets": [
            {"label": f"active {preview.active.label}", "data": now["datasets"][0]["data"]},
            {"label": "fitted (preview)", "data": then["datasets"][0]["data"]},
        ],
    }
