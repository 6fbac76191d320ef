"""A project names the benchmarks whose images hold history past the base (commit0-style): there
`git log --all` or `git show` of a later commit is how the task is meant to be done, not a leak;
a fetch from the remote still is. Set by an admin over the API; read by the scanners.

People (tests/conftest.py): alice admin of acme (her token), bob a reviewer.
"""

from __future__ import annotations

import orjson
import pytest

from grading.models import CheatDecision, Rollout
from tests.helpers.audit_world import reward
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

URL = "/api/v1/scanners/future-history/?project=acme"
HISTORY = "git log --all --oneline -- w.py"
FETCH = "git fetch origin && git diff origin/main -- w.py"


def put(client, token, body):
    return client.put(URL, data=orjson.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def ran(group: dict, index: int, command: str) -> dict:
    group["rollouts"][index]["messages"].append(
        {"role": "assistant", "content": f"```bash\n{command}\n```", "action": command, "observation": "y = 2"}
    )
    return group


@pytest.mark.django_db
def test_an_admin_names_the_benchmarks_and_anyone_in_the_project_reads_them(client, alice_token, bob, acme):
    r = put(client, alice_token, {"prefixes": ["commit0__", "commit0__", "lite/"]})
    assert r.status_code == 200 and r.json() == {"prefixes": ["commit0__", "lite/"]}, r.content
    acme.refresh_from_db()
    assert acme.future_history_prefixes == ["commit0__", "lite/"]
    client.force_login(bob)
    assert client.get(URL).json() == {"prefixes": ["commit0__", "lite/"]}
    assert client.put(URL, data=b'{"prefixes": []}', content_type="application/json").status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"prefixes": "commit0__"}, "prefixes"),
        ({"prefixes": ["ok", "*"]}, "prefixes[1]"),
        ({"prefixes": ["a" * 101]}, "prefixes[0]"),
        ({"prefixes": [3]}, "prefixes[0]"),
        ({"prefixes": ["x"] * 51}, "prefixes"),
        ({"other": []}, "prefixes"),
    ],
)
def test_refused_prefixes_name_the_field_and_change_nothing(client, alice_token, acme, body, field):
    r = put(client, alice_token, body)
    assert r.status_code == 400 and r.json()["field"] == field, r.content
    acme.refresh_from_db()
    assert acme.future_history_prefixes == []


@pytest.mark.django_db(transaction=True)
def test_history_in_a_named_benchmarks_image_is_no_leak_and_a_remote_fetch_still_is(client, alice_token, acme):
    assert put(client, alice_token, {"prefixes": ["commit0__"]}).status_code == 200
    ingest_groups(
        acme,
        ran(ran(small_group("commit0__widgets-1@1", instance_id="commit0__widgets-1", rewards=(1, 1)), 0, HISTORY), 1, FETCH),
        ran(small_group("octo__widgets-2@1", instance_id="octo__widgets-2", rewards=(1, 1)), 0, HISTORY),
    )
    history, fetched = (Rollout.objects.get(group__uid="commit0__widgets-1@1", index=i) for i in range(2))
    elsewhere = Rollout.objects.get(group__uid="octo__widgets-2@1", index=0)
    assert not CheatDecision.objects.filter(rollout=history).exists() and reward(history) == 1.0
    assert CheatDecision.objects.get(rollout=fetched).author.startswith("remote_fetch@") and reward(fetched) == 0.0
    assert CheatDecision.objects.get(rollout=elsewhere).author.startswith("history_search@") and reward(elsewhere) == 0.0
