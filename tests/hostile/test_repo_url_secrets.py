"""Credentials in the repository URL template (a token in the query string, a user and password
before the host) never reach a message: not the error a fetch raises, not the error stored for
the group page, not the page, not a log line. alice is an admin of acme."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache

from grading.registry.workspaces import FETCH_STATE_KEY, fetch_repo, load_workspace, repo_source
from grading.repos.source import RepoSource, bounded, redact_urls
from grading.repos.types import FetchRefused, RepoError
from tests.helpers.repo_groups import tiny_group

SECRETS = ("pa55word", "SECRET-QS", "frag-SECRET")
TEMPLATES = [
    "https://127.0.0.1:9/{repo}.git?token=SECRET-QS",
    "https://bot:pa55word@127.0.0.1:9/{repo}.git?private_token=SECRET-QS&x=1",
    "http://bot:pa55word@127.0.0.1:9/{repo}?token=SECRET-QS#frag-SECRET",
    "file:///nonexistent-gagar/{repo}?token=SECRET-QS",
]


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {text!r}"


@pytest.mark.parametrize("template", TEMPLATES)
def test_a_failed_fetch_says_where_without_the_credentials(tmp_path, template):
    source = RepoSource(cache=tmp_path / "cache", url_template=template, fetch_timeout=20)
    with pytest.raises(FetchRefused) as refused:
        source.mirror("acme/tiny", "0" * 40)
    said = str(refused.value)
    assert_clean(said)
    assert "acme/tiny" in said and "failed" in said  # still says which repository and that it failed


def test_a_template_without_repo_is_refused_without_echoing_it():
    with pytest.raises(ValueError) as refused:
        RepoSource(cache=Path("unused"), url_template="https://bot:pa55word@host/fixed.git?token=SECRET-QS")
    assert_clean(str(refused.value))
    assert "{repo}" in str(refused.value)


def test_a_bad_template_stops_the_start_without_echoing_it():
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "GAGAR_"))}
    env = {**clean, "DJANGO_SETTINGS_MODULE": "gagar_web.settings"}
    env["GAGAR_REPO_URL_TEMPLATE"] = "https://bot:pa55word@host/fixed.git?token=SECRET-QS"
    root = Path(__file__).resolve().parents[2]
    started = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    assert started.returncode != 0 and "GAGAR_REPO_URL_TEMPLATE" in started.stderr
    assert_clean(started.stderr)


def test_urls_in_any_text_lose_their_userinfo_query_and_fragment():
    text = (
        "fatal: unable to access 'https://bot:pa55word@host/a/b.git?token=SECRET-QS#frag-SECRET/': 403\n"
        "see ssh://git:pa55word@host:22/a/b?SECRET-QS and http://host/x?a=SECRET-QS."
    )
    shown = redact_urls(text)
    assert_clean(shown)
    assert "https://***@host/a/b.git?***" in shown and "ssh://***@host:22/a/b?***" in shown
    assert_clean(bounded("x" * 5000 + text, limit=60))  # cut first or not, nothing of them is left


@pytest.mark.django_db
def test_the_stored_error_the_page_and_the_logs_hold_no_credentials(
    tmp_path, settings, acme, alice, client, caplog, django_capture_on_commit_callbacks
):
    group, _ = tiny_group(tmp_path, settings, acme)
    settings.GAGAR_REPO_URL_TEMPLATE = TEMPLATES[1]
    caplog.set_level(logging.DEBUG)
    # The worker's task: its answer, and what it stores for the page.
    said = fetch_repo(repo=group.task.repo, base_commit=group.task.base_commit)
    assert said and "acme/tiny" in said
    assert_clean(said)
    stored = cache.get(FETCH_STATE_KEY.format(name=repo_source().safe_name(group.task.repo)))
    assert stored and stored["error"]
    assert_clean(repr(stored))
    # The grader's tools read through the same source.
    with pytest.raises(RepoError) as read:
        load_workspace(group).repo_view.read("base", "README.md")
    assert_clean(str(read.value))
    # The page, after an admin asks again.
    client.force_login(alice)
    url = f"/projects/acme/runs/{group.run.name}/groups/{group.uid}/rollouts/0/files/"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, HTTP_HX_REQUEST="true")
    html = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "could not be fetched" in html
    assert_clean(html)
    assert_clean("\n".join(r.getMessage() for r in caplog.records))
