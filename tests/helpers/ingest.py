"""Ingest in tests.

- through the API with a token: `post_lines(client, token, body)` (the response, for tests of
  the API itself), `post_groups(client, token, *groups)` (must succeed; its report)
- through the service, no HTTP: `ingest_groups(project, *groups)` (must succeed; its report)
"""

from __future__ import annotations

from grading.ingest.service import ingest_group_lines
from tests.helpers.groups import jsonl, line

INGEST_URL = "/api/v1/groups/"
NDJSON = "application/x-ndjson"


def post_lines(client, token: str, body: bytes, *, project: str = "acme", **headers):
    """POST a JSON-lines body to the ingest API as `token` (`headers`: more request headers,
    e.g. HTTP_CONTENT_ENCODING="gzip"); the response, whatever it is."""
    return client.post(
        f"{INGEST_URL}?project={project}", data=body, content_type=NDJSON, HTTP_AUTHORIZATION=f"Token {token}", **headers
    )


def post_groups(client, token: str, *groups: dict | bytes, project: str = "acme") -> dict:
    """Ingest `groups` through the API as `token`; the request must succeed. Its JSON report."""
    r = post_lines(client, token, jsonl(*groups), project=project)
    assert r.status_code == 200, r.content
    return r.json()


def ingest_groups(project, *groups: dict, **options):
    """Ingest `groups` through the service (no HTTP), one line each; no line may be refused.

    `options` go to `ingest_group_lines` (e.g. allow_unknown_reward=True). Its IngestReport.
    """
    report = ingest_group_lines(project=project, lines=[(n, line(g)) for n, g in enumerate(groups, 1)], **options)
    assert not report.errors, report.errors
    return report
