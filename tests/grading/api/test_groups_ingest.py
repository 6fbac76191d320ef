"""POST /api/v1/groups/: idempotence, conflicts, per-line refusals, streaming, auth."""

from __future__ import annotations

import orjson
import pytest
from django.test import override_settings

from grading.models import Group, Rollout, RolloutContent, Run, Task
from tests.helpers.groups import jsonl, small_group

pytestmark = pytest.mark.django_db

URL = "/api/v1/groups/?project=acme"


def post(client, body: bytes, token: str, **headers):
    return client.post(URL, data=body, content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Token {token}", **headers)


def test_ingest_stores_groups_and_reports_counts(client, alice_token):
    r = post(client, jsonl(small_group("a@1"), small_group("b@1", instance_id="t-2", rewards=(1, 1))), alice_token)
    assert r.status_code == 200, r.content
    report = r.json()
    assert report["groups"] == {"created": 2, "extended": 0, "unchanged": 0}
    assert report["rollouts"] == {"created": 5, "unchanged": 0}
    assert report["refused"] == 0 and report["errors"] == []
    a = Group.objects.get(uid="a@1")
    assert (a.n_rollouts, a.n_passed, a.is_mixed) == (3, 2, True)
    assert Group.objects.get(uid="b@1").is_mixed is False
    rollout = Rollout.objects.get(group=a, index=1)
    assert (rollout.reward, rollout.passed, rollout.patch_files, rollout.patch_added, rollout.tests_failed) == (
        0.0,
        False,
        1,
        1,
        1,
    )
    assert rollout.content.messages[1]["action"] == "cat w.py"
    assert Run.objects.get(name="r1").project.name == "acme"


def test_same_line_twice_is_unchanged(client, alice_token):
    body = jsonl(small_group("a@1"))
    assert post(client, body, alice_token).status_code == 200
    r = post(client, body, alice_token)
    assert r.status_code == 200
    assert r.json()["groups"] == {"created": 0, "extended": 0, "unchanged": 1}
    assert r.json()["rollouts"] == {"created": 0, "unchanged": 3}
    assert Group.objects.count() == 1 and Rollout.objects.count() == 3 and RolloutContent.objects.count() == 3


def test_key_order_and_int_rewards_do_not_make_a_conflict(client, alice_token):
    group = small_group("a@1")
    post(client, jsonl(group), alice_token)
    reordered = dict(reversed(list(group.items())))
    reordered["rollouts"] = [dict(reversed(list(r.items()))) | {"reward": float(r["reward"])} for r in group["rollouts"]]
    r = post(client, jsonl(reordered), alice_token)
    assert r.json()["groups"]["unchanged"] == 1, r.json()


def test_different_content_for_same_identity_is_refused_as_conflict(client, alice_token):
    post(client, jsonl(small_group("a@1")), alice_token)
    changed = small_group("a@1")
    changed["rollouts"][0]["reward"] = 0
    r = post(client, jsonl(changed), alice_token)
    assert r.status_code == 422
    (err,) = r.json()["errors"]
    assert err["line"] == 1 and "conflict" in err["error"] and "rollout 0" in err["error"]
    assert Rollout.objects.get(group__uid="a@1", index=0).reward == 1.0  # never silently overwritten


def test_new_indexes_extend_an_existing_group(client, alice_token):
    post(client, jsonl(small_group("a@1", rewards=(1, 1))), alice_token)
    bigger = small_group("a@1", rewards=(1, 1, 0))
    r = post(client, jsonl(bigger), alice_token)
    assert r.status_code == 200
    assert r.json()["groups"]["extended"] == 1 and r.json()["rollouts"] == {"created": 1, "unchanged": 2}
    group = Group.objects.get(uid="a@1")
    assert (group.n_rollouts, group.n_passed, group.is_mixed) == (3, 2, True)


def test_task_conflict_is_refused(client, alice_token):
    post(client, jsonl(small_group("a@1")), alice_token)
    r = post(client, jsonl(small_group("a@2", step=2, problem_statement="Something else entirely.")), alice_token)
    assert r.status_code == 422
    assert "task 't-1'" in r.json()["errors"][0]["error"] and "problem_statement" in r.json()["errors"][0]["error"]
    assert not Group.objects.filter(uid="a@2").exists()


def test_group_step_conflict_is_refused(client, alice_token):
    post(client, jsonl(small_group("a@1")), alice_token)
    r = post(client, jsonl(small_group("a@1", step=9)), alice_token)
    assert "already stored at step 1" in r.json()["errors"][0]["error"]


def _bad(mutate):
    group = small_group("bad@1")
    mutate(group)
    return orjson.dumps(group)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"format": "gagar-group/1", "run": ', "not valid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (_bad(lambda g: g.pop("uid")), "uid: required"),
        (_bad(lambda g: g.pop("format")), "format: required"),
        (_bad(lambda g: g["task"].pop("instance_id")), "task.instance_id: required"),
        (_bad(lambda g: g["rollouts"][1].pop("reward")), "rollouts[1].reward: required"),
        (_bad(lambda g: g["rollouts"][1].update(reward="1")), "rollouts[1].reward: must be a number"),
        (_bad(lambda g: g["rollouts"][0].update(reward=0.5)), "rollouts[0].reward: must be 0 or 1"),
        (_bad(lambda g: g["rollouts"][2].update(index=0)), "rollouts[2].index: duplicate index 0"),
        (_bad(lambda g: g.update(step=-1)), "step: must be >= 0"),
        (_bad(lambda g: g.update(rollouts=[])), "rollouts: required"),
        (
            _bad(lambda g: g["rollouts"][0]["messages"][0].update(content="a\u0000b")),
            "rollouts[0].messages[0].content: contains a NUL",
        ),
        (_bad(lambda g: g["rollouts"][0].update(tests={"FAIL_TO_PASS": ["x"]})), "rollouts[0].tests.FAIL_TO_PASS"),
        (
            b'{"format": "gagar-group/1", "run": "r1", "step": 1, "uid": "x", "task": {"instance_id": "t"}, "rollouts": '
            b'[{"index": 0, "reward": NaN}]}',
            "not valid JSON",
        ),
        (
            b'{"format": "gagar-group/1", "run": "r1", "step": 1, "uid": "x", "task": {"instance_id": "t"}, "rollouts": '
            b'[{"index": 0, "reward": 1e999}]}',
            "not valid JSON",
        ),
    ],
    ids=[
        "truncated",
        "array",
        "no-uid",
        "no-format",
        "no-instance",
        "no-reward",
        "reward-string",
        "reward-half",
        "dup-index",
        "neg-step",
        "no-rollouts",
        "nul",
        "tests-shape",
        "nan",
        "infinity",
    ],
)
def test_bad_line_is_refused_with_line_number_while_good_lines_land(client, alice_token, raw, expected):
    body = jsonl(small_group("good@1")) + raw + b"\n" + jsonl(small_group("good@2", step=2))
    r = post(client, body, alice_token)
    assert r.status_code == 207, r.content
    report = r.json()
    assert report["refused"] == 1 and report["groups"]["created"] == 2
    (err,) = report["errors"]
    assert err["line"] == 2
    assert expected in err["error"]
    assert set(Group.objects.values_list("uid", flat=True)) == {"good@1", "good@2"}
    assert not Rollout.objects.filter(group__uid__in=["bad@1", "x"]).exists()


def test_patch_that_is_not_a_diff_is_stored_as_text(client, alice_token):
    group = small_group("a@1")
    group["rollouts"][0]["patch"] = "I changed w.py to fix it <script>alert(1)</script>"
    assert post(client, jsonl(group), alice_token).status_code == 200
    rollout = Rollout.objects.get(group__uid="a@1", index=0)
    assert rollout.patch_parses is False and rollout.patch_files == 0
    assert rollout.content.patch.startswith("I changed w.py")


def test_gzip_body_by_header_and_by_magic(client, alice_token):
    body = jsonl(small_group("a@1"), gz=True)
    assert post(client, body, alice_token, HTTP_CONTENT_ENCODING="gzip").json()["groups"]["created"] == 1
    assert post(client, jsonl(small_group("b@1", instance_id="t-2"), gz=True), alice_token).json()["groups"]["created"] == 1


def test_corrupt_gzip_is_a_400_not_a_500(client, alice_token):
    body = jsonl(small_group("a@1"), gz=True)
    r = post(client, body[: len(body) // 2] + b"garbage" * 10, alice_token)
    assert r.status_code in (400, 422)
    assert r.json()["aborted"] or r.json()["refused"]


def test_body_larger_than_djangos_upload_limit_streams_through(client, alice_token):
    # 40 groups with ~100 kB of messages each: ~4 MB, over the 2.5 MB default body limit.
    groups = []
    for i in range(40):
        g = small_group(f"big-{i}@1", instance_id=f"t-{i}")
        g["rollouts"][0]["messages"].append({"role": "user", "content": "x" * 100_000})
        groups.append(g)
    body = jsonl(*groups)
    assert len(body) > 2_621_440
    r = post(client, body, alice_token)
    assert r.status_code == 200, r.content[:500]
    assert r.json()["groups"]["created"] == 40


@override_settings(GAGAR_MAX_LINE_BYTES=4096)
def test_line_over_the_per_line_limit_is_refused_by_size(client, alice_token):
    big = small_group("big@1")
    big["rollouts"][0]["test_log"] = "y" * 10_000
    r = post(client, jsonl(small_group("a@1"), big, small_group("b@1", instance_id="t-2")), alice_token)
    assert r.status_code == 207
    (err,) = r.json()["errors"]
    assert err["line"] == 2 and "over the per-line limit of 4,096 bytes" in err["error"]
    assert Group.objects.count() == 2


def test_empty_body_is_a_400(client, alice_token):
    r = post(client, b"", alice_token)
    assert r.status_code == 400 and "empty body" in r.json()["aborted"]


def test_missing_project_parameter_is_a_400(client, alice_token):
    r = client.post("/api/v1/groups/", data=b"{}", content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Token {alice_token}")
    assert r.status_code == 400 and "project" in r.json()["detail"]


def test_unauthenticated_api_is_401(client):
    assert client.post(URL, data=jsonl(small_group()), content_type="application/x-ndjson").status_code == 401
    assert client.get(URL).status_code == 401
    r = client.get(URL, HTTP_AUTHORIZATION="Token gagar_not-a-real-token")
    assert r.status_code == 401 and r["WWW-Authenticate"].startswith("Token")
    assert Group.objects.count() == 0


def test_revoked_token_is_401(client, alice_token):
    from django.utils import timezone

    from grading.models import ApiToken

    ApiToken.objects.update(revoked_at=timezone.now())
    assert post(client, jsonl(small_group()), alice_token).status_code == 401


def test_trainer_token_cannot_ingest(client, trainer_token):
    r = post(client, jsonl(small_group()), trainer_token)
    assert r.status_code == 403
    assert Group.objects.count() == 0


def test_token_of_another_project_sees_404(client, alice_token, carol):
    from grading.projects.tokens import issue_api_token

    _, carol_secret = issue_api_token(username="carol", project_name="other", role="admin")
    # carol's token is bound to "other": acme does not exist for it
    assert post(client, jsonl(small_group()), carol_secret).status_code == 404
    assert Task.objects.count() == 0


def test_session_user_who_is_not_a_member_gets_404(client, carol):
    client.force_login(carol)
    assert client.get(URL).status_code == 404
