"""The run timeline in Chromium, on runs of real-length groups (tests/helpers/real_groups.py):
a run with the collapse signature planted (the trainer's entropy and response length rising
while the desk's pass rate falls) is warned, a healthy run is not, a point of a chart opens
its step's groups (longest trajectories first) and from there a group's rollouts, and two runs
share the charts. Every wait is on a marker the page sets (a chart's data-drawn)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from grading.health.metrics import MetricValue
from grading.health.services import record_metrics
from grading.models import Run
from tests.helpers.browser import log_in, watch_dialogs
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import real_size_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

STEPS = 10
SIZE = 4


def planted_run(acme, name: str, *, collapse: bool) -> Run:
    """STEPS steps of one real-length group each; with `collapse`, passes fall from 3 of 4 to 1 of 4
    halfway while the logged entropy and length climb; otherwise both stay level."""
    for step in range(1, STEPS + 1):
        group = real_size_group(step % 4, size=SIZE, run=name, step=step)
        passes = (3 if step <= STEPS // 2 else 1) if collapse else 2
        for i, rollout in enumerate(group["rollouts"]):
            rollout["reward"] = 1.0 if i < passes else 0.0
        ingest_groups(acme, group)
    run = Run.objects.get(name=name)
    values = []
    for step in range(1, STEPS + 1):
        grow = 1 + 0.15 * step if collapse else 1.0
        values += [MetricValue(step, "actor/entropy", 0.36 * grow), MetricValue(step, "response_length/mean", 900 * grow)]
    record_metrics(run=run, values=values)
    return run


def point(page, testid: str, dataset: int, index: int) -> dict:
    """Where a chart draws a point, in the canvas's own pixels (Chart.js keeps them)."""
    return page.evaluate(
        """([testid, dataset, index]) => {
            const chart = Chart.getChart(document.querySelector(`[data-testid="${testid}"]`));
            const p = chart.getDatasetMeta(dataset).data[index];
            return {x: p.x, y: p.y, datasets: chart.data.datasets.length};
        }""",
        [testid, dataset, index],
    )


def test_a_collapse_is_warned_and_a_point_opens_its_steps_groups(live_server, page, acme, alice):
    planted_run(acme, "collapse", collapse=True)
    dialogs = watch_dialogs(page)
    log_in(page, live_server, "alice", "/projects/acme/runs/collapse/")
    expect(page.get_by_test_id("run-health").get_by_test_id("warning-collapse")).to_contain_text("Collapse signature")

    page.get_by_test_id("timeline-link").click()
    length = page.get_by_test_id("chart-response_lengthmean")
    expect(length).to_have_attribute("data-drawn", "1")
    expect(length).to_have_attribute("data-points", str(STEPS))
    warning = page.get_by_test_id("warnings").get_by_test_id("warning-collapse")
    expect(warning).to_contain_text("actor/entropy rose")
    expect(warning).to_contain_text("pass rate fell 75.0% → 25.0%")

    where = point(page, "chart-response_lengthmean", 0, 6)  # step 7
    length.click(position={"x": where["x"], "y": where["y"]})
    expect(page).to_have_url(re.compile(r"/projects/acme/runs/collapse/steps/7/\?sort=longest$"))
    expect(page.get_by_test_id("group-orders").locator("a.active")).to_have_text("longest trajectory first")
    page.locator("table.table tbody tr td a").first.click()
    expect(page).to_have_url(re.compile(r"/projects/acme/runs/collapse/groups/"))
    expect(page.locator("body")).to_have_attribute("data-group-ready", "true")
    expect(page.locator("#lanes article.lane")).to_have_count(SIZE)  # the group's rollouts, side by side
    assert page.console_log.errors == [] and dialogs == []


def test_a_healthy_run_is_not_warned_and_two_runs_share_the_charts(live_server, page, acme, alice):
    planted_run(acme, "healthy", collapse=False)
    planted_run(acme, "collapse", collapse=True)
    log_in(page, live_server, "alice", "/projects/acme/runs/healthy/timeline/")
    expect(page.get_by_test_id("no-warnings")).to_be_visible()
    expect(page.get_by_test_id("chart-actorentropy")).to_have_attribute("data-drawn", "1")

    page.get_by_test_id("compare-select").select_option(["collapse"])
    page.locator("#tl-overlay").select_option("actor/entropy")
    page.locator("#tl-with").select_option("desk:pass_rate")
    page.get_by_test_id("timeline-form").get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"compare=collapse"))
    entropy = page.get_by_test_id("chart-actorentropy")
    expect(entropy).to_have_attribute("data-drawn", "1")
    assert point(page, "chart-actorentropy", 1, 0)["datasets"] == 2  # healthy and collapse on one chart
    expect(page.get_by_test_id("overlay-chart")).to_have_attribute("data-drawn", "1")
    expect(page.get_by_test_id("difference-collapse-pass_rate")).to_contain_text("pass_rate")
    expect(page.get_by_test_id("no-warnings")).to_be_visible()  # the warnings are this run's own
