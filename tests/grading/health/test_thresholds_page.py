"""The project's Health warnings page: every threshold with its default and its meaning; an admin
changes them (or resets them) and the runs' warnings follow; a member who is not an admin reads
them; bad input names its field and stores nothing; a fixed number of queries. The site's admin
edits them too, under the same checks.

People (tests/conftest.py): alice admin of acme, bob a reviewer in acme, carol admin of "other" only.
"""

from __future__ import annotations

import pytest

from grading.health.metrics import MetricValue
from grading.health.services import record_metrics
from grading.health.warnings import Thresholds, threshold_fields
from grading.models import Project, Run
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

PAGE = "/projects/acme/health/"
TIMELINE = "/projects/acme/runs/r1/timeline/"
STEPS = 12


@pytest.fixture
def collapsing_run(acme):
    """Twelve steps in which entropy and response length rise while the desk's pass rate falls
    (13 rollouts a step, 12 passing at step 1, 1 at step 12): a collapse signature under the
    defaults, its entropy rising about +50 % between the halves of a 10-step window."""
    ingest_groups(
        acme,
        *[
            small_group(f"g{step}@{step}", step=step, instance_id=f"t{step}", rewards=(1,) * (13 - step) + (0,) * step)
            for step in range(1, STEPS + 1)
        ],
    )
    run = Run.objects.get(project=acme, name="r1")
    series = {
        "actor/entropy": [0.36 + 0.05 * i for i in range(STEPS)],
        "response_length/mean": [900 + 120 * i for i in range(STEPS)],
    }
    record_metrics(run=run, values=[MetricValue(1 + i, n, v) for n, values in series.items() for i, v in enumerate(values)])
    return run


def stored(project: Project) -> dict:
    project.refresh_from_db()
    return project.health_thresholds


@pytest.mark.django_db
def test_an_admin_loosens_a_threshold_and_the_collapse_warning_goes_then_comes_back_on_reset(client, alice, acme, collapsing_run):
    client.force_login(alice)
    html = client.get(TIMELINE).content.decode()
    assert 'data-testid="warning-collapse"' in html and "the default thresholds" in html
    assert 'href="/projects/acme/health/" data-testid="thresholds-link">change what raises a warning' in html

    r = client.post(PAGE, {"window": "10", "entropy_rise": "1.0", "length_rise": "0.1", "pass_rate_fall": ""})
    assert r.status_code == 302 and r["Location"] == PAGE
    assert stored(acme) == {"entropy_rise": 1.0}  # only what differs from a default
    assert acme.health_thresholds_updated_by == alice and acme.health_thresholds_updated_at is not None
    page = client.get(PAGE).content.decode()
    assert "Health warning thresholds saved." in page and "Changed by alice" in page
    assert 'data-testid="changed-entropy_rise"' in page and 'data-testid="changed-window"' not in page

    html = client.get(TIMELINE).content.decode()
    assert 'data-testid="warning-collapse"' not in html and 'data-testid="no-warnings"' in html
    assert "acme's thresholds (<code>entropy_rise</code> 1.0; the rest the defaults)" in html

    r = client.post(PAGE, {"action": "reset"})
    assert r.status_code == 302 and stored(acme) == {}
    assert "reset to the defaults" in client.get(PAGE).content.decode()
    assert 'data-testid="warning-collapse"' in client.get(TIMELINE).content.decode()


@pytest.mark.django_db
def test_a_tighter_window_still_warns_and_the_run_page_links_the_settings(client, alice, acme, collapsing_run):
    client.force_login(alice)
    assert client.post(PAGE, {"window": "6"}).status_code == 302
    assert stored(acme) == {"window": 6}
    html = client.get("/projects/acme/runs/r1/").content.decode()
    assert 'data-testid="warning-collapse"' in html and 'href="/projects/acme/health/" data-testid="thresholds-link"' in html
    assert 'data-testid="thresholds-link"' in client.get("/projects/acme/").content.decode()


@pytest.mark.django_db
def test_every_threshold_is_shown_with_its_default_and_meaning_in_a_fixed_number_of_queries(
    client, alice, acme, django_assert_num_queries
):
    client.force_login(alice)
    # session, user, project, membership (nobody has changed them: no name to read)
    with django_assert_num_queries(4):
        r = client.get(PAGE)
    html = r.content.decode()
    assert r.status_code == 200 and 'data-testid="thresholds-form"' in html
    for name, default, _, unit, meaning in threshold_fields():
        assert f'data-testid="default-{name}">{default}</td>' in html
        assert f'name="{name}"' in html and meaning.split(":")[0].replace("'", "&#x27;") in html and unit in html
    assert 'data-testid="thresholds-reset"' not in html  # nothing to reset

    assert client.post(PAGE, {"window": "12"}).status_code == 302
    # ... and the name of who changed them, once someone has
    with django_assert_num_queries(5):
        html = client.get(PAGE).content.decode()
    assert 'value="12"' in html and 'data-testid="thresholds-reset"' in html


@pytest.mark.django_db
def test_a_reviewer_reads_the_thresholds_and_may_not_change_them(client, alice, bob, acme):
    client.force_login(alice)
    client.post(PAGE, {"pass_rate_fall": "0.05"})
    client.force_login(bob)  # bob is a reviewer in acme: he sees them, with no form
    page = client.get(PAGE)
    html = page.content.decode()
    assert page.status_code == 200 and 'data-testid="thresholds-form"' not in html and 'type="number"' not in html
    assert 'data-testid="value-pass_rate_fall">0.05</span>' in html and 'data-testid="value-window">10</span>' in html
    assert 'data-testid="thresholds-readonly"' in html
    assert client.post(PAGE, {"pass_rate_fall": "0.5"}).status_code == 403
    assert client.post(PAGE, {"action": "reset"}).status_code == 403
    assert stored(acme) == {"pass_rate_fall": 0.05}
    ingest_groups(acme, small_group())
    assert "see what raises a warning" in client.get(TIMELINE).content.decode()


@pytest.mark.django_db
def test_refusals_anonymous_another_projects_admin_and_a_wrong_method(client, carol, acme):
    r = client.get(PAGE)
    assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")
    client.force_login(carol)  # carol is admin of "other", not of acme: acme does not exist for her
    assert client.get(PAGE).status_code == 404
    assert client.post(PAGE, {"window": "20"}).status_code == 404
    assert client.put(PAGE).status_code == 405
    assert stored(acme) == {}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("form", "field", "message"),
    [
        ({"window": "3"}, "window", "window must be a whole number of steps from 4 to 1000"),
        ({"window": "12.5"}, "window", "window must be a whole number of steps from 4 to 1000"),
        ({"window": "5000"}, "window", "window must be a whole number of steps from 4 to 1000"),
        ({"entropy_rise": "-0.1"}, "entropy_rise", "entropy_rise must be a number, 0 or more"),
        ({"imbalance": "abc"}, "imbalance", "imbalance must be a number, 0 or more"),
        ({"pass_rate_fall": "nan"}, "pass_rate_fall", "pass_rate_fall must be a number, 0 or more"),
        ({"cheat_share_rise": "1e999"}, "cheat_share_rise", "cheat_share_rise must be a number, 0 or more"),
    ],
)
def test_bad_input_names_the_field_and_stores_nothing(client, alice, acme, form, field, message):
    client.force_login(alice)
    r = client.post(PAGE, {**form, "length_rise": "0.3"})  # a good value beside it is not stored either
    html = r.content.decode()
    assert r.status_code == 422 and 'data-testid="thresholds-errors"' in html
    assert f"<li><code>{field}</code> {message.removeprefix(field + ' ')}</li>" in html and message in html
    assert f'value="{form[field]}" aria-describedby="th-{field}-meaning" aria-invalid="true"' in html  # what was typed stays
    assert 'value="0.3"' in html
    assert stored(acme) == {} and acme.health_thresholds_updated_by is None
    assert Thresholds.from_dict(acme.health_thresholds) == Thresholds()


@pytest.mark.django_db
def test_the_site_admin_edits_them_checked_and_recorded(admin_client, admin_user, acme):
    change = f"/admin/grading/project/{acme.pk}/change/"
    page = admin_client.get(change)
    assert page.status_code == 200 and "Health warnings" in page.content.decode()
    form = {"name": "acme", "description": "", "future_history_prefixes": "[]", "memberships-TOTAL_FORMS": "0"}
    form |= {"memberships-INITIAL_FORMS": "0", "memberships-MIN_NUM_FORMS": "0", "memberships-MAX_NUM_FORMS": "1000"}
    r = admin_client.post(change, {**form, "health_thresholds": '{"window": 2, "bogus": 1}'})
    html = r.content.decode()
    assert r.status_code == 200 and "window must be a whole number of steps" in html and "bogus is not a threshold" in html
    assert stored(acme) == {}
    r = admin_client.post(change, {**form, "health_thresholds": '{"window": 12, "entropy_rise": 0.1}'})
    assert r.status_code == 302, r.content.decode()[:2000]
    assert stored(acme) == {"window": 12} and acme.health_thresholds_updated_by == admin_user
    assert "window 12" in admin_client.get("/admin/grading/project/").content.decode()
    r = admin_client.post("/admin/grading/project/add/", {**form, "name": "fresh", "health_thresholds": '{"imbalance": 0.001}'})
    assert r.status_code == 302 and Project.objects.get(name="fresh").health_thresholds == {"imbalance": 0.001}
