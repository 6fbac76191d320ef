"""Odd parameters end in a clear 4xx (JSON under /api/), never a 500;
and the low items: login throttling, CSV formula cells, Content-Disposition, -0.0 rewards,
integers past 64 bits, per-project mapping versions, Cache-Control, HEAD /healthz and
ingest with a session login.

Each test failed before its fix.
"""

from __future__ import annotations

import base64
import json

import pytest
from django.core.cache import cache
from django.utils.http import content_disposition_header

from grading.formats import params
from grading.models import FactorMapping, Group, Rollout
from reviews.models import Assignment
from reviews.selectors.lanes import lanes_for
from reviews.services.queue import assign
from tests.helpers.desk import as_lanes, group_url, judgment_post
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import ingest_groups, post_lines
from tests.hostile.corpus import record

pytestmark = pytest.mark.django_db

CHANNEL = "HTTP parameters"
ODD_NUMBERS = ["²", "١٢", "1_0", " 1", "+1", "-1", "1e400", "1.0", "9" * 5000, "", "\x00"]


@pytest.fixture(autouse=True)
def empty_cache():
    cache.clear()  # login failures are counted in the cache; no test may inherit another's
    yield
    cache.clear()


@pytest.fixture
def quiet(client):
    """A client that returns a 500 as a response instead of raising the view's exception."""
    client.raise_request_exception = False
    return client


def auth(token: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Token {token}"}


def is_json(response) -> bool:
    try:
        return isinstance(json.loads(response.content), dict)
    except ValueError:
        return False


def check(name: str, response, allowed=(400, 404)) -> None:
    ok = response.status_code in allowed and (not response.request["PATH_INFO"].startswith("/api/") or is_json(response))
    record(CHANNEL, name, "refused" if ok else "FAILED")
    assert ok, (name, response.status_code, response.content[:300])


@pytest.fixture
def groups(acme, alice):
    """g1@1 in run r1: rollouts 0, 1 and 3 pass, 2 fails (as the review desk's tests have it)."""
    ingest_groups(acme, small_group("g1@1", rewards=(1, 1, 0, 1)))
    return {g.uid: g for g in Group.objects.all()}


@pytest.fixture
def stored(client, alice_token):
    r = post_lines(client, alice_token, jsonl(small_group("g@1"), small_group("g@2", step=2)))
    assert r.status_code == 200, r.content
    return Group.objects.get(uid="g@1")


# --- one parameter parser ------------------------------------------------------------


@pytest.mark.parametrize("raw", ODD_NUMBERS)
def test_the_helper_reads_only_ascii_digits_within_bounds(raw):
    assert raw == "" or "²".isdigit()  # why the helper exists
    with pytest.raises(params.ParamError):
        params.whole(raw, "step")
    assert params.whole_or(raw, "page", default=7) == (1 if raw == " 1" else 7)  # pages forgive spaces only
    assert params.whole("0042", "step") == 42 and params.whole("-3", "x", minimum=-5) == -3


@pytest.mark.parametrize("raw", ODD_NUMBERS)
def test_grader_evidence_locators_go_through_the_helper(raw):
    """An LLM grader writes the locators: '²' (isdigit() True, int() refuses it) or 5,000 digits
    made resolve() raise and the grading job fail, where an unresolved citation is re-asked."""
    from grading.grader.base import Evidence, RolloutJudgment
    from grading.grader.evidence import problems, resolve
    from grading.grader.workspace import GroupWorkspace, RolloutView

    patch = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 2\n"
    view = RolloutView(
        index=0,
        passed=True,
        patch=patch,
        test_log="FAILED a\nPASSED a\n",
        messages=[{"role": "user", "content": "fix"}, {"role": "assistant", "content": "done"}],
    )
    ws = GroupWorkspace(uid="g@1", instance_id="g", rollouts=[view])
    resolves = raw == " 1"  # a locator is stripped first: " 1" is turn 1 (and no line of "w.py: 1")
    citations = [Evidence("turn", 0, raw), Evidence("patch", 0, f"w.py:{raw}"), Evidence("test", 0, f"log:{raw}")]
    assert [resolve(ws, item) is None for item in citations] == [resolves, False, False]
    assert all(
        resolve(ws, Evidence(kind, 0, loc)) is None for kind, loc in (("turn", "1"), ("patch", "w.py:2"), ("test", "log:2"))
    )
    found = problems(ws, [RolloutJudgment(index=0, tier="T2", rank=1, evidence=citations)])
    ok = any("needs at least one citation that resolves" in p for p in found) != resolves
    if not resolves:
        record(CHANNEL, f"grader evidence locator {raw[:8]!r}", "refused" if ok else "FAILED")
    assert ok, found


def test_the_helper_refuses_nul_and_over_long_text():
    with pytest.raises(params.ParamError):
        params.text("a\x00b", "run")
    with pytest.raises(params.ParamError):
        params.text("r" * 201, "run")
    assert params.text("r1", "run") == "r1" and not params.usable_name("a\x00") and params.usable_name("a")


@pytest.mark.parametrize("raw", ["²", "١", "99999999999", "1e400"])
@pytest.mark.parametrize("name", ["step", "wait", "inputs_version"])
def test_export_numbers_are_ascii_digits(quiet, stored, alice_token, name, raw):
    query = {"project": "acme", "run": "r1", "step": "1", name: raw}
    check(f"advantages ?{name}={raw[:12]}", quiet.get("/api/v1/advantages/", query, **auth(alice_token)), (400,))


@pytest.mark.parametrize("raw", ["²", "x@²", "default@١", "a\x00@1", "9" * 30, "default@" + "9" * 30])
def test_export_mapping_parameter(quiet, stored, alice_token, raw):
    r = quiet.get("/api/v1/advantages/", {"project": "acme", "run": "r1", "step": "1", "mapping": raw}, **auth(alice_token))
    check(f"advantages ?mapping={raw[:12]!r}", r)


@pytest.mark.parametrize("raw", ["²", "١", "1e400"])
def test_group_list_step(quiet, stored, alice_token, raw):
    check(f"groups ?step={raw}", quiet.get("/api/v1/groups/", {"project": "acme", "step": raw}, **auth(alice_token)), (400,))


@pytest.mark.parametrize("position", ["abc", "1e400", "²", "-1", "9" * 40, ""])
def test_group_list_cursor_is_validated(quiet, stored, alice_token, position):
    cursor = base64.b64encode(f"p={position}".encode()).decode()
    r = quiet.get("/api/v1/groups/", {"project": "acme", "cursor": cursor}, **auth(alice_token))
    check(f"groups cursor p={position[:12]}", r)


def test_group_list_cursors_still_page(client, stored, alice_token):
    r = client.get("/api/v1/groups/", {"project": "acme", "page_size": "1"}, **auth(alice_token))
    following = client.get(r.json()["next"], **auth(alice_token))
    assert following.status_code == 200 and following.json()["results"][0]["uid"] == "g@2"


@pytest.mark.parametrize("query", [{"step": "²"}, {"n_boot": "²"}, {"n_boot": "9" * 5000}, {"step": "١"}])
def test_agreement_numbers(quiet, stored, alice_token, query):
    r = quiet.get("/api/v1/agreement/", {"project": "acme", **query}, **auth(alice_token))
    check(f"agreement {query}", r, (400,))


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("/api/v1/groups/", {"project": "acme\x00"}),
        ("/api/v1/groups/", {"project": "acme", "run": "r1\x00"}),
        ("/api/v1/groups/", {"project": "acme", "cursor": "\x00"}),
        ("/api/v1/groups/g%00@1/", {"project": "acme", "run": "r1"}),
        ("/api/v1/groups/g@1/", {"project": "acme", "run": "r\x00"}),
        ("/api/v1/advantages/", {"project": "acme", "run": "r1\x00"}),
        ("/api/v1/runs/r1%00/", {"project": "acme"}),
        ("/api/v1/labeled-groups/", {"project": "acme", "run": "r1", "since": "2026-01-01T00:00:00Z\x00"}),
    ],
)
def test_nul_in_api_parameters_is_a_json_4xx_before_any_query(quiet, stored, alice_token, url, query, django_assert_num_queries):
    with django_assert_num_queries(0):  # refused before the token is even looked up: no NUL reaches PostgreSQL
        r = quiet.get(url, query, **auth(alice_token))
    check(f"NUL in {url} {list(query)[-1]}", r)


@pytest.mark.parametrize(
    "url",
    [
        "/projects/acme/runs/r1%00/",
        "/projects/acme/runs/r1/groups/g%00@1/",
        "/projects/acme/runs/r1/steps/1/?page=%00",
        "/projects/acme/calibration/?run=r%001",
    ],
)
def test_nul_in_page_urls_is_a_4xx(quiet, stored, alice, url, django_assert_num_queries):
    quiet.force_login(alice)
    with django_assert_num_queries(0):  # not even the session: no NUL reaches PostgreSQL
        r = quiet.get(url)
    check(f"NUL in page {url}", r)


def test_api_404_and_500_answer_in_json(quiet, alice_token, monkeypatch):
    r = quiet.get("/api/v1/no-such-endpoint/", **auth(alice_token))
    assert r.status_code == 404 and r.json() == {"detail": "Not found."}
    r = quiet.get("/api/v1/imports/not-a-number/", **auth(alice_token))
    assert r.status_code == 404 and is_json(r)

    from grading.api import runs

    def broken(self, request):
        raise RuntimeError("a bug")

    monkeypatch.setattr(runs.RunListCreateView, "get", broken)
    r = quiet.get("/api/v1/runs/?project=acme", **auth(alice_token))
    assert r.status_code == 500 and r["Content-Type"] == "application/json" and "detail" in r.json()
    assert "a bug" not in r.content.decode()  # nothing of the failure leaks
    record(CHANNEL, "API 404 and 500 bodies are JSON", "refused")


def test_pages_keep_html_errors(quiet, alice):
    quiet.force_login(alice)
    r = quiet.get("/projects/no-such/")
    assert r.status_code == 404 and not r["Content-Type"].startswith("application/json")


def test_odd_judging_fields_are_ignored_and_the_group_page_stays_up(quiet, bob, groups):
    assign(group=groups["g1@1"], reviewer=bob)
    quiet.force_login(bob)
    # An incomplete judgment comes back with the form as sent; an odd field must not break it.
    r = quiet.post(
        group_url("g1@1", "judgment/"),
        as_lanes(judgment_post({0: "T1"}, **{"tier-²": "T1", "rank-١": "1", "score-²-x": "3"}), quiet, "g1@1"),
    )
    check("judgment with tier-² (422, not 500)", r, (422,))
    r = quiet.post(
        group_url("g1@1", "draft/"),
        as_lanes({"tier-0": "T1", "tier-²": "T2", "rank-١": "1", "note-1": "a\x00b", "tier-1-x": "T1"}, quiet, "g1@1"),
    )
    assert r.status_code == 200
    assert Assignment.objects.get(reviewer=bob).draft == {"tier-0": "T1"}
    check("group page after that draft", quiet.get(group_url("g1@1")), (200,))
    # A draft stored before this fix, with such a field, does not take the page down either.
    Assignment.objects.filter(reviewer=bob).update(draft={"tier-²": "T1", "tier-0": "T2"})
    check("group page with an old odd draft", quiet.get(group_url("g1@1")), (200,))


@pytest.mark.parametrize("rank", ["²", "١", "9" * 40])
def test_odd_rank_is_a_named_422(quiet, bob, groups, rank):
    assign(group=groups["g1@1"], reviewer=bob)
    quiet.force_login(bob)
    r = quiet.post(
        group_url("g1@1", "judgment/"),
        as_lanes(judgment_post({0: "T1", 1: "T2", 3: "T3"}, {0: 1, 1: 2}, **{"rank-3": rank}), quiet, "g1@1"),
    )
    check(f"rank-3={rank[:10]}", r, (422,))
    assert f"rank-{lanes_for(user=bob, group=groups['g1@1']).key(3)}" in r.content.decode()  # named as bob's form names it


# --- the low items ------------------------------------------------------------------


def test_login_is_throttled_per_username_with_a_clear_message(client, alice, settings):
    settings.GAGAR_LOGIN_MAX_FAILURES = 5
    for _ in range(5):
        r = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
        assert r.status_code == 200 and "didn't match" in r.content.decode()
    r = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"})
    assert r.status_code == 429 and "Too many failed sign-ins" in r.content.decode() and int(r["Retry-After"]) > 0
    assert "_auth_user_id" not in client.session  # even the right password waits
    record(CHANNEL, "30 wrong passwords, then the right one", "refused")


def test_login_is_throttled_per_address_and_counts_clear_on_success(client, alice, bob, settings):
    settings.GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS = 3
    settings.GAGAR_LOGIN_MAX_FAILURES = 10
    assert client.post("/accounts/login/", {"username": "bob", "password": "bob-pass-123"}).status_code == 302
    for name in ("x1", "x2", "x3"):  # three different usernames from one address
        client.post("/accounts/login/", {"username": name, "password": "wrong"})
    r = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"}, REMOTE_ADDR="127.0.0.1")
    assert r.status_code == 429
    r = client.post("/accounts/login/", {"username": "alice", "password": "alice-pass-123"}, REMOTE_ADDR="10.0.0.9")
    assert r.status_code == 302  # another address, a username with no failures


def test_csv_export_neutralises_formula_cells(client, alice_token):
    evil = small_group('=HYPERLINK("http://x")@1', instance_id="@SUM(A1)", rewards=(1, 0))
    tabbed = small_group("+cmd@1", instance_id="\tx", rewards=(1, 0))
    r = post_lines(client, alice_token, jsonl(evil, tabbed, small_group("-1@1", instance_id="-2+3", rewards=(1, 0))))
    assert r.status_code in (200, 207), r.content
    body = client.get("/api/v1/advantages/", {"project": "acme", "run": "r1", "format": "csv"}, **auth(alice_token))
    assert body.status_code == 200
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(b"".join(body.streaming_content).decode())))
    assert rows and all(
        not row[c].startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for c in ("uid", "instance_id", "run")
    )
    assert {row["uid"] for row in rows} >= {'\'=HYPERLINK("http://x")@1', "'-1@1"}
    assert any(row["advantage"].startswith("-") for row in rows)  # numbers stay numbers
    record(CHANNEL, "CSV cells starting = + - @ tab", "inert")


def test_content_disposition_is_built_by_djangos_helper(client, alice_token):
    run = "x\";filename*=UTF-8''evil.html;\""
    r = post_lines(client, alice_token, jsonl(small_group("g@1", run=run)))
    assert r.status_code == 200, r.content
    r = client.get("/api/v1/advantages/", {"project": "acme", "run": run, "step": "1"}, **auth(alice_token))
    assert r.status_code == 200
    assert r["Content-Disposition"] == content_disposition_header(True, f"{run}-step1-default_v1.jsonl")
    assert (
        r["Content-Disposition"].count("filename") == 2 and "filename*=UTF-8''evil" not in r["Content-Disposition"].split('"')[0]
    )
    r = client.get("/api/v1/labeled-groups/", {"project": "acme", "run": run}, **auth(alice_token))
    assert r["Content-Disposition"] == content_disposition_header(True, f"{run}-labeled.jsonl")
    record(CHANNEL, "run name injected into Content-Disposition", "inert")


def test_negative_zero_reward_is_zero(client, alice_token):
    group = small_group("z@1", rewards=(1, 0))
    raw = json.dumps(group).replace('"reward": 0,', '"reward": -0.0,').encode() + b"\n"
    assert b"-0.0" in raw
    assert post_lines(client, alice_token, raw).status_code == 200
    r = post_lines(client, alice_token, jsonl(group))  # the same line with 0
    assert r.status_code == 200 and r.json()["groups"]["unchanged"] == 1 and not r.json()["errors"], r.json()
    assert (
        Rollout.objects.get(group__uid="z@1", index=1).reward == 0
        and str(Rollout.objects.get(group__uid="z@1", index=1).reward) == "0.0"
    )
    record(CHANNEL, "reward -0.0 then 0", "stored")


@pytest.mark.parametrize(("where", "value"), [("metadata", 2**64), ("metadata", -(2**63) - 1), ("stats", 10**30)])
def test_integers_past_64_bits_are_refused_naming_the_field(client, alice_token, where, value):
    group = small_group("big@1", rewards=(1, 0))
    group["rollouts"][1].setdefault(where, {})["seed"] = value
    r = post_lines(client, alice_token, json.dumps(group).encode() + b"\n")
    assert r.status_code == 422, r.content
    assert f"rollouts[1].{where}.seed" in r.content.decode() and "64 bits" in r.content.decode()
    record(CHANNEL, f"integer {str(value)[:8]}… in {where}", "refused")


def test_64_bit_integers_and_long_digit_strings_still_pass(client, alice_token):
    group = small_group("ok@1", rewards=(1, 0))
    group["rollouts"][0]["metadata"] = {"seed": 2**63 - 1, "low": -(2**63), "hash": "1" * 40}
    assert post_lines(client, alice_token, json.dumps(group).encode() + b"\n").status_code == 200


def test_mapping_versions_count_per_project(acme, other_project):
    from grading.method.services.activation import create_mapping

    bands = {"T1": [1.0, 1.0], "T2": [0.8, 0.7], "T3": [0.5, 0.5]}
    mine = [create_mapping(project=acme, name="steep", bands=bands) for _ in range(3)]
    theirs = create_mapping(project=other_project, name="steep", bands=bands)
    assert [m.version for m in mine] == [1, 2, 3] and theirs.version == 1  # acme's versions do not show in "other"
    own_default = create_mapping(project=other_project, name="default", bands=bands)
    assert own_default.version == 2  # after the built-in default@1, which every project sees
    assert FactorMapping.objects.filter(name="steep", version=1).count() == 2


def test_authenticated_responses_are_private_no_store(client, stored, alice, alice_token):
    r = client.get("/api/v1/advantages/", {"project": "acme", "run": "r1", "step": "1"}, **auth(alice_token))
    assert {"private", "no-store"} <= {p.strip() for p in r["Cache-Control"].split(",")}
    client.force_login(alice)
    for url in ("/projects/acme/", "/projects/acme/runs/r1/"):
        r = client.get(url)
        assert r.status_code == 200 and {"private", "no-store"} <= {p.strip() for p in r["Cache-Control"].split(",")}, url


def test_head_healthz(client, db):
    r = client.head("/healthz")
    assert r.status_code == 200
    assert client.get("/healthz").json() == {"status": "ok"}


def test_ingest_with_a_session_login_says_to_use_a_token(quiet, alice):
    quiet.force_login(alice)
    r = quiet.post("/api/v1/groups/?project=acme", data=jsonl(small_group()), content_type="application/x-ndjson")
    assert r.status_code == 400 and "API token" in r.json()["detail"] and "Authorization: Token" in r.json()["detail"]
    assert quiet.get("/api/v1/groups/?project=acme").status_code == 200  # reading with a session still works
    record(CHANNEL, "ingest with a session login", "refused")
