"""A project's policy for the grader's checks: its page (everyone reads, admins edit), what
the database holds, refusals that name the field and store nothing, and the budget one
grading conversation gets from it (grading.registry.checks)."""

from __future__ import annotations

import time

import pytest

from grading.models import CheckPolicy
from grading.registry.checks import CheckSettings, check_budget_for, check_settings_for

pytestmark = pytest.mark.django_db

URL = "/projects/acme/checks/"


def post(client, user, **values):
    client.force_login(user)
    data = {"max_checks": "4", "seconds": "30", "memory_mb": "1024", **values}
    return client.post(URL, {k: v for k, v in data.items() if v is not None})


def test_checks_are_off_until_an_admin_turns_them_on(client, acme, alice):
    assert check_settings_for(acme) == CheckSettings(enabled=False)
    assert check_budget_for(acme.pk, deadline=None) is None
    client.force_login(alice)
    page = client.get(URL)
    assert page.status_code == 200 and b'data-testid="checks-enabled"' in page.content
    assert b"checked" not in page.content.split(b'data-testid="checks-enabled"')[0].rsplit(b"<input", 1)[1]

    assert post(client, alice, enabled="on").status_code == 302
    row = CheckPolicy.objects.get(project=acme)
    assert (row.enabled, row.max_checks, row.seconds, row.memory_mb, row.updated_by) == (True, 4, 30, 1024, alice)
    deadline = time.time() + 100
    budget = check_budget_for(acme.pk, deadline=deadline)
    assert budget is not None and budget.max_checks == 4 and budget.deadline == deadline
    assert (budget.limits.wall_s, budget.limits.cpu_s, budget.limits.memory_bytes) == (30.0, 30, 1024 * 1024 * 1024)
    assert budget.sandbox.name == "bubblewrap"
    assert 99 < budget.seconds_left() <= 100

    assert post(client, alice).status_code == 302  # the box unticked: off again, the budget kept
    assert check_settings_for(acme) == CheckSettings(enabled=False, max_checks=4, seconds=30, memory_mb=1024)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_checks", "0", "max_checks must be a whole number from 1 to 64"),
        ("max_checks", "65", "max_checks must be a whole number from 1 to 64"),
        ("seconds", "-3", "seconds must be a whole number"),
        ("seconds", "1e3", "seconds must be a whole number"),
        ("memory_mb", "9" * 40, "memory_mb must be a whole number"),
        ("memory_mb", None, "memory_mb must be a whole number"),
    ],
)
def test_a_refused_value_names_its_field_and_stores_nothing(client, acme, alice, field, value, message):
    r = post(client, alice, enabled="on", **{field: value})
    assert r.status_code == 422
    assert message in r.content.decode() and f"<code>{field}</code>" in r.content.decode()
    assert not CheckPolicy.objects.exists()


@pytest.mark.parametrize(
    ("sandbox", "why"),
    [("none", "runs no checks"), ("swe-rex", "needs GAGAR_SWEREX_URL"), ("bubblewrap:0", "must be a non-root uid")],
)
def test_checks_cannot_be_turned_on_where_no_sandbox_runs(client, acme, alice, settings, sandbox, why):
    settings.GAGAR_SANDBOX, _, uid = sandbox.partition(":")
    settings.GAGAR_SANDBOX_UID = uid or "65534"
    settings.GAGAR_SWEREX_URL = ""
    r = post(client, alice, enabled="on")
    assert r.status_code == 422 and "checks cannot run here" in r.content.decode() and why in r.content.decode()
    assert 'data-testid="sandbox-problem"' in r.content.decode()
    assert not CheckPolicy.objects.exists()
    CheckPolicy.objects.create(project=acme, enabled=True)  # set while a sandbox ran; it no longer does
    assert check_budget_for(acme.pk, deadline=None) is None


def test_a_reviewer_reads_the_policy_and_cannot_change_it(client, acme, bob):
    CheckPolicy.objects.create(project=acme, enabled=True, max_checks=3)
    client.force_login(bob)
    page = client.get(URL).content.decode()
    assert 'data-testid="checks-policy"' in page and "<dd>3</dd>" in page and "checks-form" not in page
    assert post(client, bob, enabled="on", max_checks="9").status_code == 403
    assert CheckPolicy.objects.get(project=acme).max_checks == 3


def test_no_page_for_someone_outside_the_project(client, acme, carol):
    client.force_login(carol)
    assert client.get(URL).status_code == 404
