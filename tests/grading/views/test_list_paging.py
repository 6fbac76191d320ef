"""Lists that grow with a run page: the run page's steps, the import jobs API."""

from __future__ import annotations

import pytest

from grading.models import ImportJob, Run
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db


def test_import_jobs_api_pages_newest_first_by_keyset(client, acme, alice):
    ingest_groups(acme, small_group("a@1"))
    run = Run.objects.get(name="r1")
    jobs = [ImportJob.objects.create(project=acme, run=run, step=n, status=ImportJob.Status.DONE) for n in range(1, 62)]
    client.force_login(alice)
    first = client.get("/api/v1/imports/?project=acme")
    assert first.status_code == 200
    assert [j["id"] for j in first.json()] == [j.pk for j in reversed(jobs)][:50]
    link = first["Link"]
    assert link.endswith('>; rel="next"') and f"before={jobs[11].pk}" in link and "project=acme" in link
    second = client.get(link[1 : link.index(">")])
    assert [j["id"] for j in second.json()] == [j.pk for j in reversed(jobs[:11])]
    assert "Link" not in second  # the last page says so by having no next link


@pytest.mark.parametrize("before", ["", "abc", "-1", "1.5", "99999999999999999999999"])
def test_import_jobs_api_refuses_an_unreadable_cursor_with_json(client, acme, alice, before):
    client.force_login(alice)
    response = client.get(f"/api/v1/imports/?project=acme&before={before}")
    assert response.status_code == 400
    assert "before" in response.json()["detail"]


@pytest.mark.slow
def test_run_page_pages_its_steps_and_charts_every_step(client, acme, alice):
    from grading.selectors import steps

    ingest_groups(
        acme, *[small_group(f"g@{s}", step=s, instance_id="g", rewards=(1, 0)) for s in range(1, steps.STEPS_PER_PAGE + 6)]
    )
    client.force_login(alice)
    first = client.get("/projects/acme/runs/r1/").content.decode()
    assert ">step 1<" in first and f">step {steps.STEPS_PER_PAGE}<" in first
    assert f">step {steps.STEPS_PER_PAGE + 1}<" not in first
    assert f"steps 1–{steps.STEPS_PER_PAGE} of {steps.STEPS_PER_PAGE + 5}" in first and "?page=2" in first
    last = client.get("/projects/acme/runs/r1/?page=2").content.decode()
    assert f">step {steps.STEPS_PER_PAGE + 5}<" in last and ">step 1<" not in last
    # The chart covers every step computed so far, both pages' worth after both were shown.
    assert f'"step {steps.STEPS_PER_PAGE + 5}"' in last and '"step 1"' in last
    assert client.get("/projects/acme/runs/r1/?page=zzz").status_code == 200  # an unreadable page is the first
