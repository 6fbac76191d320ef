"""Chart data for the pages' charts (static/js draws them): plain dicts of labels and datasets."""

from __future__ import annotations

from typing import Any

LAMBDA_BINS = [0.0, 0.8, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2, 1.5, float("inf")]


def lambda_histogram(lambdas: list[float]) -> dict[str, Any]:
    """Counts of per-group lambda in fixed bins, as chart data."""
    counts = [0] * (len(LAMBDA_BINS) - 1)
    for value in lambdas:
        for i in range(len(counts)):
            if LAMBDA_BINS[i] <= value < LAMBDA_BINS[i + 1] or (i == len(counts) - 1 and value >= LAMBDA_BINS[i]):
                counts[i] += 1
                break
    labels = [
        f"{LAMBDA_BINS[i]:g}–{LAMBDA_BINS[i + 1]:g}" if LAMBDA_BINS[i + 1] != float("inf") else f"≥{LAMBDA_BINS[i]:g}"
        for i in range(len(counts))
    ]
    return {
        "type": "bar",
        "labels": labels,
        "datasets": [{"label": "groups", "data": counts}],
        "xlabel": "λ",
        "ylabel": "graded groups",
    }


def credit_chart(rows: list[tuple[int, dict[str, float]]]) -> dict[str, Any]:
    """Per-step positive credit before/after redistribution and under discount-only, as chart data."""
    return {
        "type": "bar",
        "labels": [f"step {n}" for n, _ in rows],
        "datasets": [
            {"label": "Σ positive credit, baseline", "data": [round(s["positive_credit_before"], 6) for _, s in rows]},
            {"label": "Σ positive credit, redistributed", "data": [round(s["positive_credit_after"], 6) for _, s in rows]},
            {
                "label": "Σ positive credit, discount-only",
                "data": [round(s["discount_only_positive_credit"], 6) for _, s in rows],
            },
        ],
        "ylabel": "credit",
    }
