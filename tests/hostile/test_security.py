"""Security properties checked over every route the resolver knows, so a new view is in the
matrix the day it lands: login or 401 for anonymous, 404 across projects, CSRF on every
POST, an enforced CSP on every HTML response. Plus tokens, query-parameter whitelists and
the grader URL's SSRF guard.

People: alice admin of acme; bob reviewer in acme; carol admin of "other" only (acme is
404 for her everywhere); tess the trainer (read-only token in acme).
"""

from __future__ import annotations

import re

import pytest
from django.test import Client

from grading.models import ApiToken, ImportJob, Rollout, Run
from grading.registry.backends import GraderUnavailable, check_grader_url
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import post_lines
from tests.helpers.routes import PARAM, routes

pytestmark = pytest.mark.django_db

# Routes that are not about a project's data: public, or the framework's own.
# The sign-up link is public like the login page (its token is the credential: tests/grading/projects/test_invites.py);
# the new-project page is the site staff's, not a project's (tests/grading/projects/test_create.py).
NOT_PROJECT_DATA = {
    "",
    "accounts/login/",
    "accounts/logout/",
    "healthz",
    "api/schema/",
    "api/docs/",
    "projects/",
    "accounts/invite/<uidb64>/<token>/",
    "projects/new/",
}


@pytest.fixture
def world(client, alice, alice_token, acme):
    r = post_lines(client, alice_token, jsonl(small_group("t-1@1")))
    assert r.status_code == 200
    job = ImportJob.objects.create(project=acme, run=Run.objects.get(name="r1"), step=1, created_by=alice)
    from grading.method.services.mappings import default_mapping

    rollout = Rollout.objects.get(group__uid="t-1@1", index=0)
    return {
        "project": "acme",
        "run": "r1",
        "uid": "t-1@1",
        "lane": "0",
        "step": "1",
        "name": "r1",
        "number": "1",
        "rollout_id": str(rollout.pk),
        "pk": {"api-import": job.pk, "api-mapping": default_mapping().pk, "api-mapping-activate": default_mapping().pk},
    }


def fill(route: str, name: str | None, world: dict) -> str:
    def value(match: re.Match) -> str:
        key = match["name"]
        if key == "pk":
            return str(world["pk"].get(name, 1))
        assert key in world, f"route {route!r} has a parameter {key!r} the IDOR matrix does not know: add it to `world`"
        return world[key]

    return "/" + PARAM.sub(value, route)


def project_routes(world) -> list[tuple[str, str, str]]:
    return [(route, name, fill(route, name, world)) for route, name in routes() if route not in NOT_PROJECT_DATA]


QUERY = {"project": "acme", "run": "r1"}


def test_the_matrix_covers_the_known_views(world):
    names = {name for _, name, _ in project_routes(world)}
    for expected in (
        "group",
        "rollout-turns",
        "rollout-diff",
        "rollout-extra-files",
        "rollout-log",
        "step",
        "run",
        "run-imports",
        "step-grading",
        "api-groups",
        "api-group",
        "api-imports",
        "api-import",
        "api-advantages",
        "search",
        "search-signals",
        "api-search",
    ):
        assert expected in names


def test_anonymous_gets_login_redirect_or_401(client, world):
    for _route, _name, url in project_routes(world):
        for method in ("get", "post"):
            r = getattr(client, method)(url, QUERY if method == "get" else {})
            if url.startswith("/api/"):
                assert r.status_code in (401, 403, 405), (method, url, r.status_code)
            else:
                assert r.status_code in (302, 405), (method, url, r.status_code)
                if r.status_code == 302:
                    assert r["Location"].startswith("/accounts/login/"), (method, url)


def test_other_projects_member_gets_404_everywhere(client, carol, world):
    client.force_login(carol)  # carol is admin of "other"; acme does not exist for her
    checked = 0
    for _route, _name, url in project_routes(world):
        for method in ("get", "post"):
            r = getattr(client, method)(url + "?project=acme&run=r1")
            if r.status_code == 405:
                continue
            assert r.status_code == 404, (method, url, r.status_code, r.content[:200])
            checked += 1
    assert checked >= len(project_routes(world))
    r = client.get("/projects/")
    assert r.status_code == 200 and "acme" not in r.content.decode()


def test_trainer_token_is_read_only_and_scoped(client, trainer_token, alice_token, world):
    auth = {"HTTP_AUTHORIZATION": f"Token {trainer_token}"}
    # tess may export advantages and read mappings...
    assert client.get("/api/v1/advantages/", {"run": "r1"}, **auth).status_code == 200
    assert client.get("/api/v1/mappings/", **auth).status_code == 200
    # ...and nothing else: no ingest, import, mapping change, group read, or page
    assert post_lines(client, trainer_token, jsonl(small_group("x@1"))).status_code == 403
    assert client.post("/api/v1/imports/?project=acme", {"run": "r1", "step": 1}, **auth).status_code == 403
    assert client.post("/api/v1/mappings/?project=acme", {}, content_type="application/json", **auth).status_code == 403
    assert client.get("/api/v1/groups/", {"project": "acme"}, **auth).status_code == 403
    assert client.get("/projects/acme/runs/r1/groups/t-1@1/", **auth).status_code == 302  # pages need a session login
    assert not ApiToken.objects.get(user__username="tess").user.has_usable_password()


def test_tokens_are_revocable_and_stored_hashed(client, admin_client, alice_token, world):
    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    assert client.get("/api/v1/groups/", {"project": "acme"}, **auth).status_code == 200
    token = ApiToken.objects.get(user__username="alice")
    assert alice_token not in (token.digest, token.prefix) and len(token.digest) == 64
    r = admin_client.post("/admin/grading/apitoken/", {"action": "revoke", "_selected_action": [token.pk]})
    assert r.status_code == 302
    r = client.get("/api/v1/groups/", {"project": "acme"}, **auth)
    assert r.status_code == 401 and r.json()["detail"] == "Invalid or revoked token"
    assert client.get("/api/v1/groups/", {"project": "acme"}, HTTP_AUTHORIZATION="Token gagar_forged").status_code == 401
    assert client.get("/api/v1/groups/", {"project": "acme"}, HTTP_AUTHORIZATION="Token a b").status_code == 401


def test_every_post_needs_a_csrf_token_with_a_session(alice, world):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(alice)
    posted = 0
    for _route, _name, url in [
        *project_routes(world),
        ("accounts/logout/", "logout", "/accounts/logout/"),
        ("projects/new/", "new-project", "/projects/new/"),
        ("accounts/invite/<uidb64>/<token>/", "invite", "/accounts/invite/MQ/set-password/"),
    ]:
        r = csrf_client.post(url + "?project=acme&run=r1", {"run": "r1", "step": "1"})
        assert r.status_code == 403, (url, r.status_code)
        assert b"CSRF" in r.content, url
        posted += 1
    assert posted >= 20


def test_htmx_sends_the_csrf_token_from_the_page(client, alice, world):
    client.force_login(alice)
    html = client.get("/projects/acme/runs/r1/groups/t-1@1/").content.decode()
    assert re.search(r"<body[^>]*hx-headers='\{\"x-csrftoken\": \"[A-Za-z0-9]{64}\"\}'", html)
    assert '"allowEval": false' in html


def test_csp_is_enforced_on_every_html_response(client, alice, world):
    client.force_login(alice)
    urls = [url for _, _, url in project_routes(world)] + [
        "/projects/",
        "/api/docs/",
        "/projects/nope/",
        "/projects/acme/runs/nope/",
    ]
    seen = 0
    for url in urls:
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            r = client.get(url + "?project=acme&run=r1", **headers)
            if "text/html" not in r.get("Content-Type", ""):
                continue
            seen += 1
            assert "Content-Security-Policy-Report-Only" not in r, url
            policy = r["Content-Security-Policy"]
            script_src = re.search(r"script-src ([^;]*)", policy)[1]
            assert "unsafe-inline" not in script_src and "unsafe-eval" not in script_src, url
            assert "default-src 'self'" in policy and "object-src 'none'" in policy and "frame-ancestors 'none'" in policy
            html = r.content.decode()
            # nothing the policy would block: no inline script, no inline event handler
            assert not re.search(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", html), url
            assert not re.search(r"\son[a-z]+\s*=", html), url
    client.logout()
    r = client.get("/accounts/login/")
    assert "unsafe-inline" not in r["Content-Security-Policy"]
    assert seen >= 15


def test_list_apis_ignore_unknown_ordering_and_filters(client, alice_token, carol, world):
    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    for uid in ("b@1", "a@1", "c@1"):
        post_lines(client, alice_token, jsonl(small_group(uid, instance_id=f"t-{uid}")))
    plain = client.get("/api/v1/groups/", {"project": "acme"}, **auth).json()
    hostile_params = [
        {"ordering": "-uid"},
        {"ordering": "run__project__api_tokens__digest"},
        {"order_by": "task__problem_statement"},
        {"sort": "-id"},
        {"o": "?"},
        {"run__project__name": "other"},
        {"uid__regex": ".*"},
        {"filter": "1=1"},
        {"project__in": "acme,other"},
        {"format": "api"},
    ]
    for extra in hostile_params:
        r = client.get("/api/v1/groups/", {"project": "acme", **extra}, **auth)
        assert r.status_code == 200 and r.json() == plain, extra
    assert client.get("/api/v1/groups/", {"project": "acme", "cursor": "not-a-cursor"}, **auth).status_code == 404
    assert client.get("/api/v1/groups/", {"project": "acme", "step": "1 OR 1=1"}, **auth).status_code == 400
    assert client.get("/api/v1/groups/", {"project": "acme", "mixed": "maybe"}, **auth).status_code == 400
    big = client.get("/api/v1/groups/", {"project": "acme", "page_size": "100000000"}, **auth)
    assert big.status_code == 200 and len(big.json()["results"]) == 4
    assert client.get("/api/v1/groups/", {"project": "acme", "page_size": "-5"}, **auth).status_code == 200
    for extra in ({"ordering": "-uid"}, {"show": "'; DROP TABLE"}, {"page": "-1"}, {"only": "<script>"}, {"start": "-9"}):
        client.force_login(carol)
        assert client.get("/projects/acme/runs/r1/steps/1/", extra).status_code == 404
    assert Run.objects.filter(name="r1").exists()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/v1",
        "http://localhost:8000/v1",
        "http://[::1]/v1",
        "http://0.0.0.0/v1",
        "http://[::]/v1",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fe80::1]/v1",
        "http://10.0.0.5/v1",
        "http://172.16.3.4/v1",
        "http://192.168.1.1/v1",
        "http://[fd00::1]/v1",
        "http://[::ffff:127.0.0.1]/v1",
        "http://[::ffff:169.254.169.254]/v1",
        "http://2130706433/v1",
        "http://0x7f000001/v1",
        "http://0177.0.0.1/v1",
        "http://127.1/v1",
        "http://100.64.0.1/v1",
        "http://224.0.0.1/v1",
        "http://240.0.0.1/v1",
        "http://198.18.0.1/v1",
    ],
    ids=lambda u: u.split("//")[1].split("/")[0],
)
def test_grader_url_refuses_non_public_targets(settings, url):
    settings.GRADER_ALLOW_PRIVATE_NETWORK = False
    with pytest.raises(GraderUnavailable, match=r"non-public address|cannot resolve"):
        check_grader_url(url)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "gopher://127.0.0.1:6379/_FLUSHALL", "ftp://example.org/", "http:///v1", "//evil/v1"]
)
def test_grader_url_refuses_other_schemes(settings, url):
    settings.GRADER_ALLOW_PRIVATE_NETWORK = True  # even when private targets are allowed
    with pytest.raises(GraderUnavailable, match="not an http"):
        check_grader_url(url)


def test_grader_url_private_targets_only_by_setting(settings):
    settings.GRADER_ALLOW_PRIVATE_NETWORK = True
    check_grader_url("http://127.0.0.1:8000/v1")  # a local model server, allowed explicitly
    check_grader_url("http://8.8.8.8/v1")  # a public address literal (no traffic: nothing is fetched)
    settings.GRADER_ALLOW_PRIVATE_NETWORK = False
    check_grader_url("http://8.8.8.8/v1")
