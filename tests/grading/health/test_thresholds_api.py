"""A project's health thresholds over the API: any member (or trainer token) reads them with the
defaults beside them; an admin replaces them; a refused body names its field and changes nothing.

People (tests/conftest.py): alice admin of acme (her token), bob a reviewer, tess a trainer token,
carol admin of "other" only.
"""

from __future__ import annotations

import orjson
import pytest

from grading.health.warnings import Thresholds
from grading.models import Project

URL = "/api/v1/health-thresholds/?project=acme"


def put(client, token, body):
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    return client.put(URL, data=data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def stored(project: Project) -> dict:
    project.refresh_from_db()
    return project.health_thresholds


@pytest.mark.django_db
def test_an_admin_sets_them_and_members_and_trainers_read_them(client, alice_token, trainer_token, bob, acme):
    r = put(client, alice_token, {"thresholds": {"window": 14, "cheat_share_rise": 0.05, "eval_fall": 0.01}})
    assert r.status_code == 200, r.content
    answer = r.json()
    assert answer["thresholds"] == {**Thresholds().as_dict(), "window": 14, "cheat_share_rise": 0.05}
    assert answer["defaults"] == Thresholds().as_dict() and answer["changed"] == ["cheat_share_rise", "window"]
    assert answer["updated_by"] == "alice" and answer["updated_at"]
    assert stored(acme) == {"window": 14, "cheat_share_rise": 0.05}

    got = client.get(URL, HTTP_AUTHORIZATION=f"Bearer {trainer_token}")
    assert got.status_code == 200 and got.json()["thresholds"]["window"] == 14
    client.force_login(bob)  # a reviewer reads them through his session, and may not change them
    assert client.get(URL).json()["changed"] == ["cheat_share_rise", "window"]
    assert client.put(URL, data=b'{"thresholds": {}}', content_type="application/json").status_code == 403
    assert put(client, trainer_token, {"thresholds": {}}).status_code == 403
    assert stored(acme) == {"window": 14, "cheat_share_rise": 0.05}

    r = put(client, alice_token, {"thresholds": {}})  # {} resets them
    assert r.status_code == 200 and r.json()["changed"] == [] and stored(acme) == {}


@pytest.mark.django_db
def test_another_projects_admin_gets_404(client, carol, acme):
    client.force_login(carol)
    assert client.get(URL).status_code == 404
    assert client.put(URL, data=b'{"thresholds": {"window": 5}}', content_type="application/json").status_code == 404
    assert stored(acme) == {}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"thresholds": {"window": 3}}, "thresholds.window"),
        ({"thresholds": {"window": 10.5}}, "thresholds.window"),
        ({"thresholds": {"window": "12"}}, "thresholds.window"),
        ({"thresholds": {"entropy_rise": -1}}, "thresholds.entropy_rise"),
        ({"thresholds": {"imbalance": None}}, "thresholds.imbalance"),
        ({"thresholds": {"length_rise": True}}, "thresholds.length_rise"),
        (b'{"thresholds": {"pass_rate_fall": 1e999}}', "thresholds.pass_rate_fall"),
        ({"thresholds": {"entropy": 0.2}}, "thresholds.entropy"),
        ({"thresholds": [1, 2]}, "thresholds"),
        ({"window": 12}, "thresholds"),
        ([], "thresholds"),
    ],
)
def test_a_refused_body_names_its_field_in_json_and_changes_nothing(client, alice_token, acme, body, field):
    r = put(client, alice_token, body)
    assert r.status_code == 400 and r["Content-Type"] == "application/json", r.content
    assert r.json()["field"] == field
    assert stored(acme) == {} and acme.health_thresholds_updated_by is None


@pytest.mark.django_db
def test_every_bad_field_is_listed_and_bad_json_is_a_400(client, alice_token, acme):
    r = put(client, alice_token, {"thresholds": {"window": 2, "eval_fall": -0.5, "reward_rise": 0.2}})
    assert r.status_code == 400
    assert r.json()["errors"] == {
        "thresholds.window": "window must be a whole number of steps from 4 to 1000",
        "thresholds.eval_fall": "eval_fall must be a number, 0 or more",
    }
    for raw in (b'{"thresholds": {"window": NaN}}', b"{not json", b'{"thresholds": {"window": 5, "window": 6}}'):
        r = put(client, alice_token, raw)
        assert r.status_code == 400 and "detail" in r.json(), raw
    assert stored(acme) == {}
