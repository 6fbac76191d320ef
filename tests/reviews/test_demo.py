"""The demo (seed_demo, reviews/demo.py): its run's calibration rests on enough judged groups
to meet the default minimum evidence, and the command and the page say so."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from grading.models import Project
from reviews.demo import demo_evidence

pytestmark = pytest.mark.django_db


@pytest.mark.slow
def test_the_default_demo_meets_the_minimum_and_its_calibration_page_says_so(client):
    out = StringIO()
    call_command("seed_demo", "--no-simulate", stdout=out)
    line = next(x for x in out.getvalue().splitlines() if x.startswith("calibration of demo-run"))
    assert line.endswith(": enough evidence"), line
    groups = int(line.split("rests on ")[1].split(" ")[0])
    assert groups >= 30
    client.force_login(get_user_model().objects.get(username="demo"))
    html = client.get("/projects/demo/calibration/?run=demo-run").content.decode()
    assert 'data-testid="evidence" data-state="enough"' in html
    assert f"Enough evidence: the fit rests on {groups} judged mixed groups" in html
    # one step of it is a thin slice, and the page says so
    step = client.get("/projects/demo/calibration/?run=demo-run&step=1").content.decode()
    assert 'data-state="too-little"' in step and "<strong>Too little evidence</strong>" in step
    assert demo_evidence(project=Project.objects.get(name="demo"), run_name="nope") == "calibration: no run 'nope'"
