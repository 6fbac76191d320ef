"""Hostile requests rather than hostile lines: bodies, encodings, sizes and headers that
must end in a clear 4xx, never a 500; and a value the database refuses mid-batch."""

from __future__ import annotations

import gzip

import pytest
from django.db import DataError

from grading.ingest import service as ingest
from grading.models import Group, Rollout
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import post_lines
from tests.hostile.corpus import record

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "body", "headers", "status", "says"),
    [
        ("empty body", b"", {}, 400, "empty body"),
        ("only blank lines", b"\n\r\n   \n", {}, 400, "empty body"),
        ("gzip header, plain body", jsonl(small_group("a@1")), {"HTTP_CONTENT_ENCODING": "gzip"}, 400, "could not be read"),
        ("truncated gzip", gzip.compress(jsonl(small_group("a@1")))[:-12], {}, 400, "could not be read"),
        ("gzip bomb-ish, one huge line", gzip.compress(b"[" + b"1," * 3_000_000 + b"1]\n"), {}, 422, "over the per-line limit"),
        ("every line refused", b"{}\n[]\nnull\n", {}, 422, "format: required"),
    ],
)
def test_bad_bodies_are_clear_4xx(client, alice_token, settings, name, body, headers, status, says):
    settings.GAGAR_MAX_LINE_BYTES = 1024 * 1024
    r = post_lines(client, alice_token, body, **headers)
    ok = r.status_code == status and says in r.content.decode() and Group.objects.count() == 0
    record("HTTP requests", name, "refused" if ok else "FAILED")
    assert ok, (r.status_code, r.content[:300])


def test_deep_and_broken_json_to_a_json_endpoint_is_400(client, alice_token):
    """The mappings API parses JSON with DRF: 2,000 levels must be a 400, not a RecursionError 500."""
    auth = {"HTTP_AUTHORIZATION": f"Token {alice_token}"}
    cases = {
        "JSON nested 2,000 deep (DRF parser)": b"[" * 2000 + b"]" * 2000,
        "invalid UTF-8 (DRF parser)": b'{"name": "\xff"}',
        "truncated JSON (DRF parser)": b'{"name": "x", "bands": [',
        "NaN in JSON (DRF parser)": b'{"name": NaN}',
    }
    for name, body in cases.items():
        r = client.post("/api/v1/mappings/?project=acme", data=body, content_type="application/json", **auth)
        ok = 400 <= r.status_code < 500
        record("HTTP requests", name, "refused" if ok else "FAILED")
        assert ok, (name, r.status_code, r.content[:200])


def test_oversize_form_body_is_refused_before_it_is_read(client, alice):
    r = client.post("/accounts/login/", {"username": "alice", "password": "x" * 3_000_000})
    ok = r.status_code == 400
    record("HTTP requests", "3 MB form body (login)", "refused" if ok else "FAILED")
    assert ok


def test_odd_authorization_headers_are_401(client, alice_token):
    for name, header in {
        "non-ASCII token": "Token gagar_\u00e9\u00e9",
        "three words": "Token a b",
        "empty token": "Token ",
        "basic auth": "Basic YWxpY2U6eA==",
    }.items():
        r = client.get("/api/v1/groups/", {"project": "acme"}, HTTP_AUTHORIZATION=header)
        ok = r.status_code in (401, 403)
        record("HTTP requests", f"auth header: {name}", "refused" if ok else "FAILED")
        assert ok, (name, r.status_code)


def test_encoded_traversal_in_page_urls_is_404(client, alice, alice_token):
    post_lines(client, alice_token, jsonl(small_group("a@1")))
    client.force_login(alice)
    for url in (
        "/projects/acme/runs/r1/groups/..%2F..%2F..%2Fetc%2Fpasswd/",
        "/projects/acme/runs/%2E%2E/groups/a@1/",
        "/projects/acme/runs/r1/groups/a@1/rollouts/99999999999999999999/log/",
    ):
        r = client.get(url)
        ok = r.status_code == 404
        record("HTTP requests", f"URL {url[:40]}…", "refused" if ok else "FAILED")
        assert ok, (url, r.status_code)


def test_a_value_the_database_refuses_costs_only_its_own_line(client, alice_token, monkeypatch):
    """Fault injection: the database raises DataError for one line of a batch (a value that
    validation did not foresee). The batch is replayed line by line: that line is refused
    with the database's reason, the others land, the stream goes on."""
    real_store = ingest._BatchWriter._store

    def store(self, batch):
        if any(p.group.uid == "poison@1" for p in batch):
            raise DataError("invalid input syntax for type json DETAIL: Unicode escape value could not be translated")
        return real_store(self, batch)

    monkeypatch.setattr(ingest._BatchWriter, "_store", store)
    body = jsonl(small_group("a@1"), small_group("poison@1", instance_id="t-p"), small_group("b@1", instance_id="t-b"))
    r = post_lines(client, alice_token, body)
    report = r.json()
    assert r.status_code == 207, report
    assert report["errors"] == [
        {
            "line": 2,
            "uid": "poison@1",
            "error": (
                "could not be stored: the database refused a value "
                "(invalid input syntax for type json DETAIL: Unicode escape value could not be translated)"
            ),
        }
    ]
    assert set(Group.objects.values_list("uid", flat=True)) == {"a@1", "b@1"}
    assert Rollout.objects.count() == 6
    record("HTTP requests", "DataError mid-batch (fault injection)", "refused")
