"""GET /api/v1/groups/ (cursor pages) and /api/v1/groups/{uid}/ (full group)."""

import pytest

from tests.helpers import post_groups, small_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(client, alice_token):
    post_groups(client, alice_token, *[small_group(f"g{i}/x@{i % 3}", step=i % 3, instance_id=f"t-{i}", rewards=(1, 0) if i % 2 else (1, 1))
                                       for i in range(7)])


def test_list_is_cursor_paginated_and_filterable(client, alice_token, stored, django_assert_max_num_queries):
    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    with django_assert_max_num_queries(6):
        first = client.get("/api/v1/groups/?project=acme&page_size=4", **auth).json()
    assert len(first["results"]) == 4 and first["next"]
    rest = client.get(first["next"], **auth).json()
    assert len(rest["results"]) == 3 and rest["next"] is None
    uids = [g["uid"] for g in first["results"] + rest["results"]]
    assert len(set(uids)) == 7
    step1 = client.get("/api/v1/groups/?project=acme&run=r1&step=1", **auth).json()["results"]
    assert {g["step"] for g in step1} == {1} and len(step1) == 2
    mixed = client.get("/api/v1/groups/?project=acme&mixed=true", **auth).json()["results"]
    assert all(g["is_mixed"] for g in mixed) and len(mixed) == 3
    assert client.get("/api/v1/groups/?project=acme&step=x", **auth).status_code == 400


def test_detail_returns_the_group_as_ingested(client, alice_token, trainer_token, stored):
    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    r = client.get("/api/v1/groups/g1/x@1/?project=acme&run=r1", **auth)
    assert r.status_code == 200
    group = r.json()
    original = small_group("g1/x@1", step=1, instance_id="t-1", rewards=(1, 0))
    assert group["uid"] == "g1/x@1" and group["task"]["instance_id"] == "t-1"
    assert [ro["patch"] for ro in group["rollouts"]] == [ro["patch"] for ro in original["rollouts"]]
    assert [ro["messages"] for ro in group["rollouts"]] == [ro["messages"] for ro in original["rollouts"]]
    assert client.get("/api/v1/groups/nope/?project=acme&run=r1", **auth).status_code == 404
    # the trainer role reads exports only, not groups
    assert client.get("/api/v1/groups/g1/x@1/?project=acme&run=r1", HTTP_AUTHORIZATION=f"Token {trainer_token}").status_code == 403


def test_schema_and_docs_need_login(client, alice):
    assert client.get("/api/schema/").status_code in (401, 403)
    client.force_login(alice)
    schema = client.get("/api/schema/")
    assert schema.status_code == 200 and b"/api/v1/groups/" in schema.content
    assert client.get("/api/docs/").status_code == 200
