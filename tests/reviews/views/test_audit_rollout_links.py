"""The cheat audit narrowed to named rollouts (`?rollouts=12,15`), as a run page links the
cheats confirmed after their step was served (templates/late_credit.html).

People: erin audits acme (tests/reviews/conftest.py); carol is an admin of another project.
World: `audit_world` (tests/helpers/audit_world.py): x, y, z carry signals, all pending.
"""

from __future__ import annotations

import pytest

from grading.models import Role
from reviews.selectors.audit import MAX_BULK, read_scope
from tests.helpers.audit_world import audit_world
from tests.helpers.people import member

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(acme, alice, bob, erin):
    return audit_world(acme, reviewer=bob, auditor=erin)


def listed(html: str) -> int:
    return html.count('data-testid="audit-rollout-')


def test_named_rollouts_are_the_only_ones_listed_and_stay_named_through_a_decision(client, erin, world):
    x, y = world["x"], world["y"]
    client.force_login(erin)
    page = client.get(f"/projects/acme/audit/?status=all&rollouts={x.pk},{y.pk}").content.decode()
    assert listed(page) == 2 and f'data-testid="audit-rollout-{world["z"].pk}"' not in page
    assert "Only the 2 rollouts a link named" in page
    assert f'<input type="hidden" name="rollouts" value="{x.pk},{y.pk}">' in page  # a decision comes back to them
    r = client.post(
        f"/projects/acme/audit/rollouts/{x.pk}/",
        {"verdict": "confirm", "reason": "reads the fix", "status": "all", "rollouts": f"{x.pk},{y.pk}"},
    )
    assert r.status_code == 302 and r["Location"] == f"/projects/acme/audit/?status=all&rollouts={x.pk}%2C{y.pk}"


@pytest.mark.parametrize("junk", ["abc", ",,,", "-3", "1e3", "١٢", "9" * 40, "x" * 100_000])
def test_a_link_with_junk_ids_lists_as_without_them(client, erin, world, junk):
    client.force_login(erin)
    r = client.get(f"/projects/acme/audit/?status=all&rollouts={junk}")
    assert r.status_code == 200 and listed(r.content.decode()) == 3


def test_junk_beside_real_ids_is_left_out(client, erin, world):
    client.force_login(erin)
    x = world["x"]
    page = client.get(f"/projects/acme/audit/?status=all&rollouts=abc,{x.pk},,{x.pk}, -2").content.decode()
    assert listed(page) == 1 and "Only the 1 rollout a link named" in page


def test_another_projects_rollout_named_in_a_link_stays_out(client, world, other_project):
    carol = member("carol", other_project, Role.ADMIN)  # admin of "other" only
    client.force_login(carol)
    page = client.get(f"/projects/other/audit/?status=all&rollouts={world['x'].pk}").content.decode()
    assert listed(page) == 0
    assert client.get(f"/projects/acme/audit/?status=all&rollouts={world['x'].pk}").status_code == 404


def test_a_link_reads_at_most_max_bulk_ids():
    scope = read_scope({"rollouts": ",".join(str(n) for n in range(1, 2 * MAX_BULK))})
    assert len(scope.rollouts) == MAX_BULK and scope.rollouts[:2] == (1, 2)
