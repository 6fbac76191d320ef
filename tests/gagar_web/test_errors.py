"""The error pages (gagar_web/errors.py, templates/error.html): styled, with a way back, with
DEBUG off (as pytest-django runs); JSON under /api/. People: alice admin of acme, bob reviewer."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection
from django.test import Client, RequestFactory

from gagar_web.errors import bad_request, server_error

pytestmark = pytest.mark.django_db


def test_debug_is_off_here(settings):
    assert settings.DEBUG is False


def test_403_names_the_role_and_links_back_to_the_project(client, bob):
    client.force_login(bob)
    r = client.get("/projects/acme/audit/")
    html = r.content.decode()
    assert r.status_code == 403 and 'data-status="403"' in html
    assert "Your role (reviewer) in acme does not allow this." in html
    assert 'href="/projects/acme/" data-testid="back-to-project"' in html and 'href="/projects/"' in html
    assert '<link rel="stylesheet" href="/static/css/app.css">' in html  # the app's layout
    r = client.get("/api/v1/advantages/?project=acme&run=r1")  # a reviewer may not export: JSON, not the page
    assert r.status_code == 403 and r["Content-Type"] == "application/json" and "detail" in r.json()


def test_404_is_styled_and_says_nothing_about_other_projects(client, bob, carol):
    client.force_login(carol)  # acme is not hers: the same page as for a name nobody uses
    for path in ("/projects/acme/", "/projects/no-such-project/"):
        r = client.get(path)
        html = r.content.decode()
        assert r.status_code == 404 and 'data-status="404"' in html and f"There is no page at <code>{path}</code>" in html
        assert "No such project" in html and 'data-testid="back-home"' in html
    r = client.get("/api/v1/nothing/")
    assert r.status_code == 404 and r.json() == {"detail": "Not found."}


def test_404_escapes_the_path(client, bob):
    client.force_login(bob)
    r = client.get("/projects/acme/runs/<script>alert(1)</script>/")
    assert r.status_code == 404 and b"<script>alert" not in r.content and b"&lt;script&gt;" in r.content


def test_500_and_400_render_without_a_database_or_the_request(django_db_blocker):
    request = RequestFactory().get("/projects/acme/")
    with django_db_blocker.block():
        r = server_error(request)
        bad = bad_request(request)
    html = r.content.decode()
    assert r.status_code == 500 and 'data-status="500"' in html and 'data-testid="retry"' in html and 'href="/projects/"' in html
    assert bad.status_code == 400 and 'data-status="400"' in bad.content.decode()
    assert server_error(RequestFactory().get("/api/v1/groups/")).content == b'{"detail": "server error; the failure is logged"}'


def database_down(execute, sql, params, many, context):
    raise OperationalError("server closed the connection unexpectedly")


def test_503_reloads_a_page_after_retry_after(client, bob):
    client.force_login(bob)
    with connection.execute_wrapper(database_down):
        r = client.get("/projects/acme/?x=1")
    html = r.content.decode()
    assert r.status_code == 503 and r["Retry-After"] == "5" and 'data-status="503"' in html
    assert '<meta http-equiv="refresh" content="5">' in html and 'href="/projects/acme/?x=1" data-testid="retry"' in html
    assert "no-store" in r["Cache-Control"]  # still private, without asking the (gone) database who is signed in
    assert "bob" not in html  # no user: that would need the session, in the database


def test_503_offers_to_send_a_form_again(bob):
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    token = client.get("/projects/acme/review/").context["csrf_token"]
    with connection.execute_wrapper(database_down):
        r = client.post("/projects/acme/review/next/", {"csrfmiddlewaretoken": str(token), "run": "r<1>"})
    html = r.content.decode()
    assert r.status_code == 503 and r["Retry-After"] == "5"
    assert '<form method="post" action="/projects/acme/review/next/" class="inline" data-retry-after="5">' in html
    assert '<input type="hidden" name="run" value="r&lt;1&gt;">' in html and html.count('name="csrfmiddlewaretoken"') == 1
    assert "http-equiv" not in html  # a POST is never repeated by itself


def test_503_under_api_is_json(client, alice_token):
    with connection.execute_wrapper(database_down):
        r = client.get("/api/v1/groups/?project=acme", HTTP_AUTHORIZATION=f"Token {alice_token}")
    assert r.status_code == 503 and r["Retry-After"] == "5" and r["Content-Type"] == "application/json"


def test_a_form_without_its_csrf_token_gets_the_styled_403(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    r = client.post("/projects/acme/team/members/", {"username": "x", "role": "reviewer"})
    html = r.content.decode()
    assert r.status_code == 403 and "The form could not be accepted" in html and "reload the page and send it again" in html
    assert 'href="/projects/acme/" data-testid="back-to-project"' in html
