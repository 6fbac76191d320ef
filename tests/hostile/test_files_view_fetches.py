"""The files view answers from what the repository cache holds: a task whose base commit the
mirror lacks (the source moved on after the mirror was made) is shown as not fetched yet, and
no git fetch runs in the request; an admin's "fetch" queues it for a worker after the commit.

alice is an admin of acme (she may fetch), bob a reviewer (he may not)."""

from __future__ import annotations

import pytest

from grading.registry.workspaces import fetch_repo, repo_source
from tests.helpers.gitrepos import commit_all
from tests.helpers.people import member
from tests.helpers.repo_groups import tiny_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def moved_on(tmp_path, settings, acme):
    """A group whose task's base commit was made in the source after the mirror was fetched."""
    group, tiny = tiny_group(tmp_path, settings, acme)
    assert fetch_repo(repo=group.task.repo, base_commit=group.task.base_commit) == ""
    (tiny.path / "LATER.md").write_text("made after the mirror\n")
    group.task.base_commit = commit_all(tiny.path, "a commit the mirror has not seen")
    group.task.save(update_fields=["base_commit"])
    return group


def files_url(group, lane: str = "0") -> str:
    return f"/projects/acme/runs/{group.run.name}/groups/{group.uid}/rollouts/{lane}/files/"


def test_a_missing_base_commit_is_shown_as_not_fetched_and_nothing_is_fetched(client, moved_on, acme):
    source = repo_source()
    repo, base = moved_on.task.repo, moved_on.task.base_commit
    mirror = source.mirror_path(repo)
    fetches = source.fetches(repo)
    bob = member("bob", acme, "reviewer")
    client.force_login(bob)
    for query in ({"path": "tiny/calc.py"}, {"path": "LATER.md", "at": "base"}, {}):
        r = client.get(files_url(moved_on), query, HTTP_HX_REQUEST="true")
        html = r.content.decode()
        assert r.status_code == 200 and 'data-testid="files-unfetched-0"' in html
        assert "not fetched yet" in html and "a project admin can fetch it here" in html
    # No fetch ran: the source was not asked (its commit is not in the mirror) and none was counted.
    assert source.fetches(repo) == fetches and not source.has_commit(mirror, base)


def test_an_admin_queues_the_fetch_after_the_commit_and_then_it_shows(
    client, moved_on, alice, django_capture_on_commit_callbacks
):
    source = repo_source()
    repo, base = moved_on.task.repo, moved_on.task.base_commit
    client.force_login(alice)
    html = client.get(files_url(moved_on), {"path": "LATER.md", "at": "base"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="files-fetch-0"' in html
    with django_capture_on_commit_callbacks(execute=False) as queued:
        answer = client.post(files_url(moved_on) + "?path=LATER.md&at=base", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="files-fetching-0"' in answer  # the request answered before any fetch
    assert not source.has_commit(source.mirror_path(repo), base) and len(queued) == 1
    queued[0]()  # the commit: the worker's task runs (Celery is eager in tests)
    assert source.has_commit(source.mirror_path(repo), base)
    shown = client.get(files_url(moved_on), {"path": "LATER.md", "at": "base"}, HTTP_HX_REQUEST="true").content.decode()
    assert "made after the mirror" in shown
