"""The run timeline page: the trainer's metrics and the desk's as charts whose points open their
steps, an overlay, runs side by side with their differences at a step, and the warnings with
the steps behind them; a fixed number of queries whatever the run's length."""

from __future__ import annotations

import json
import re

import pytest

from grading.health.metrics import MetricValue
from grading.health.services import record_metrics
from grading.models import Run
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

PAGE = "/projects/acme/runs/{}/timeline/"


def chart_specs(html: str) -> dict[str, dict]:
    return {
        m.group(1): json.loads(m.group(2))
        for m in re.finditer(r'<script id="([\w-]+)" type="application/json">(.*?)</script>', html, re.S)
    }


def log(run: Run, series: dict[str, list[float]], first_step: int = 1) -> None:
    record_metrics(
        run=run,
        values=[MetricValue(first_step + i, name, v) for name, values in series.items() for i, v in enumerate(values)],
    )


@pytest.fixture
def two_runs(acme):
    for run, rewards in (("base", ((1, 0, 0), (1, 1, 0))), ("gagar", ((1, 1, 0), (1, 1, 1)))):
        ingest_groups(
            acme,
            *[
                small_group(f"{run}-t{t}@{s}", run=run, step=s, instance_id=f"t{t}", rewards=rewards[t])
                for s in (1, 2)
                for t in (0, 1)
            ],
        )
    return Run.objects.get(name="base"), Run.objects.get(name="gagar")


@pytest.mark.django_db
def test_charts_link_each_point_to_its_step_and_a_collapse_is_warned(client, alice, acme, two_runs, django_assert_num_queries):
    base, _ = two_runs
    steps = 12
    log(
        base,
        {
            "actor/entropy": [0.36 + 0.05 * i for i in range(steps)],
            "response_length/mean": [900 + 120 * i for i in range(steps)],
            "critic/score/mean": [0.5] * steps,
        },
    )
    client.force_login(alice)
    # session, user, project, membership, run, mapping (2), trainer, desk (4), the other runs to compare with
    with django_assert_num_queries(13):
        page = client.get(PAGE.format("base"))
    html = page.content.decode()
    specs = chart_specs(html)
    entropy = next(s for s in specs.values() if s["title"] == "actor/entropy")
    assert entropy["labels"] == list(range(1, 13)) and entropy["points"] == 12
    assert entropy["links"][0][0] == "/projects/acme/runs/base/steps/1/"
    length = next(s for s in specs.values() if s["title"] == "response_length/mean")
    assert length["links"][0][4] == "/projects/acme/runs/base/steps/5/?sort=longest"
    # no collapse: the pass rate (two steps of groups) does not fall over a window; say so
    assert 'data-testid="no-warnings"' in html

    # the same run whose pass rate falls step after step: the desk's figure, planted as steps of groups
    for step in range(3, steps + 1):
        ingest_groups(
            acme, small_group(f"late-{step}@{step}", run="base", step=step, rewards=(1,) * max(1, 12 - step) + (0,) * step)
        )
    html = client.get(PAGE.format("base")).content.decode()
    assert 'data-testid="warning-collapse"' in html and "actor/entropy rose" in html
    assert "/projects/acme/runs/base/timeline/?from=1&amp;to=" in html


@pytest.mark.django_db
def test_runs_side_by_side_with_paired_differences_and_an_overlay(client, alice, two_runs):
    base, gagar = two_runs
    log(base, {"eval/swe": [0.30, 0.31]})
    log(gagar, {"eval/swe": [0.33, 0.36]})
    client.force_login(alice)
    html = client.get(
        PAGE.format("base") + "?compare=gagar&compare=nope&show=eval/swe&show=desk:pass_rate&overlay=eval/swe&with=desk:pass_rate"
    ).content.decode()
    specs = chart_specs(html)
    chart = next(s for s in specs.values() if s["title"] == "eval/swe")
    assert [d["label"] for d in chart["datasets"]] == ["base", "gagar"]
    assert chart["links"][1][1] == "/projects/acme/runs/gagar/steps/2/"
    assert specs["overlay-chart"]["datasets"][1]["yAxisID"] == "y1"
    assert 'data-testid="unknown-runs"' in html and "<code>nope</code>" in html
    # at step 2, task by task: base passed 1/3 and 2/3, gagar 2/3 and 3/3: +1/3 on each task
    row = re.search(r'data-testid="difference-gagar-pass_rate">(.*?)</tr>', html, re.S).group(1)
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert cells[:4] == ["2", "0.500", "0.833", "0.333"] and cells[4] == "0.333 … 0.333"
