"""The group page's files view: a lane's repository state (or the base commit) as the reviewer
sees it, opened from a diff hunk or a grader's citation; what it refuses and how it says so."""

from __future__ import annotations

import re

import pytest
from django.core.cache import cache

from grading.registry.workspaces import FETCH_STATE_KEY, fetch_repo, load_workspace, repo_source
from reviews.selectors.lanes import lanes_for
from tests.factories import make_assignment
from tests.helpers.people import member
from tests.helpers.repo_groups import HOSTILE_LINE, tiny_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def unfetched(tmp_path, settings, acme):
    return tiny_group(tmp_path, settings, acme)[0]


@pytest.fixture
def world(unfetched):
    assert fetch_repo(repo=unfetched.task.repo, base_commit=unfetched.task.base_commit) == ""
    return unfetched


def files(client, group, lane, **query):
    url = f"/projects/acme/runs/{group.run.name}/groups/{group.uid}/rollouts/{lane}/files/"
    return client.get(url, query, HTTP_HX_REQUEST="true")


def test_a_hunk_header_opens_the_file_at_its_line_with_the_patch_lines_marked(client, world, alice):
    client.force_login(alice)
    page = client.get(f"/projects/acme/runs/{world.run.name}/groups/{world.uid}/").content.decode()
    assert 'data-testid="browse-files-0"' in page
    hunk = re.search(r'<a class="hunk-link" href="([^"#]+)#file-0-L(\d+)"', page)
    assert hunk is not None, "the diff's hunk headers open the files view"
    url, line = hunk.group(1).replace("&amp;", "&"), int(hunk.group(2))
    html = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert f'id="file-0-L{line}" class=" target"' in html or f'id="file-0-L{line}" class="added target"' in html
    assert 'id="file-0-L9" class="added"' in html and "if values else 0.0" in html
    assert html.count('class="added') == 1  # the one line the patch wrote


def test_the_base_commit_and_a_directory_list_and_markup_stays_text(client, world, alice):
    client.force_login(alice)
    base = files(client, world, "0", path="tiny/calc.py", at="base").content.decode()
    assert "Base commit" in base and "if values else 0.0" not in base and 'class="added' not in base
    listing = files(client, world, "1", path="tiny").content.decode()
    assert "notes.html" in listing and "calc.py" in listing
    notes = files(client, world, "1", path="tiny/notes.html").content.decode()
    assert HOSTILE_LINE not in notes and "&lt;script&gt;" in notes


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", ".git/config", "docs-link/guide.md", "nope.py"])
def test_a_path_it_cannot_show_is_a_message_not_an_error(client, world, alice, path):
    client.force_login(alice)
    r = files(client, world, "0", path=path)
    assert r.status_code == 200 and 'data-testid="files-problem-0"' in r.content.decode()
    assert "root:" not in r.content.decode()


def test_a_patch_that_does_not_apply_is_shown_as_such(client, world, alice):
    client.force_login(alice)
    html = files(client, world, "3", path="tiny/calc.py").content.decode()
    assert 'data-testid="files-applied-3"' in html and "not at all" in html
    assert "does not apply at the base commit" in html


def test_a_task_without_a_repository_says_so(client, world, alice, settings):
    settings.GAGAR_REPO_CACHE = ""
    client.force_login(alice)
    assert "none is configured" in files(client, world, "0").content.decode()


def test_a_blind_reviewer_opens_their_own_lanes_by_label(client, world, acme):
    bob = member("bob", acme, "reviewer")
    make_assignment(world, bob, blind=True)
    lanes = lanes_for(user=bob, group=world)
    label = lanes.key(0)
    client.force_login(bob)
    html = files(client, world, label, path="tiny/calc.py").content.decode()
    assert f'id="file-{label}-L9" class="added"' in html
    assert files(client, world, "0", path="tiny/calc.py").status_code == 404  # an index names no lane when blind


def test_a_too_long_path_is_refused_plainly(client, world, alice):
    client.force_login(alice)
    r = files(client, world, "0", path="a" * 1001)
    assert r.status_code == 400 and "path: at most 1000 characters" in r.content.decode()


def test_a_page_never_fetches_an_admin_asks_for_it_and_then_it_shows(
    client, unfetched, alice, acme, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    html = files(client, unfetched, "0", path="tiny/calc.py").content.decode()
    assert 'data-testid="files-unfetched-0"' in html and 'data-testid="files-fetch-0"' in html
    assert not list(repo_source().mirrors_dir.glob("*.git"))  # the GET fetched nothing
    url = f"/projects/acme/runs/{unfetched.run.name}/groups/{unfetched.uid}/rollouts/0/files/?path=tiny%2Fcalc.py"
    with django_capture_on_commit_callbacks(execute=True):  # queued after the commit; Celery is eager in tests
        asked = client.post(url, HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="files-fetching-0"' in asked
    fetched = files(client, unfetched, "0", path="tiny/calc.py").content.decode()
    assert 'id="file-0-L9" class="added"' in fetched


def test_a_reviewer_is_told_and_cannot_fetch(client, unfetched, acme):
    bob = member("bob", acme, "reviewer")
    client.force_login(bob)
    html = files(client, unfetched, "0").content.decode()
    assert "a project admin can fetch it here" in html and "files-fetch-0" not in html
    url = f"/projects/acme/runs/{unfetched.run.name}/groups/{unfetched.uid}/rollouts/0/files/"
    assert client.post(url).status_code == 403
    assert not list(repo_source().mirrors_dir.glob("*.git"))


def test_a_fetch_being_made_polls_and_a_failed_one_says_why(
    client, unfetched, alice, settings, django_capture_on_commit_callbacks
):
    client.force_login(alice)
    key = FETCH_STATE_KEY.format(name=repo_source().safe_name(unfetched.task.repo))
    cache.set(key, {"pending": True})
    html = files(client, unfetched, "0").content.decode()
    assert 'data-testid="files-fetching-0"' in html and 'hx-trigger="load delay:3s"' in html
    cache.delete(key)
    settings.GAGAR_REPO_URL_TEMPLATE = "file:///nonexistent-gagar-repositories/{repo}"
    url = f"/projects/acme/runs/{unfetched.run.name}/groups/{unfetched.uid}/rollouts/0/files/"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, HTTP_HX_REQUEST="true")
    failed = files(client, unfetched, "0").content.decode()
    assert "could not be fetched" in failed and "Try again" in failed


@pytest.mark.parametrize("commit", ["abc1234", "", "g" * 40])
def test_a_task_without_a_full_commit_id_has_no_workspace(client, world, alice, commit):
    world.task.base_commit = commit  # an abbreviation could name another commit tomorrow; the demo's are made up
    world.task.save(update_fields=["base_commit"])
    client.force_login(alice)
    page = client.get(f"/projects/acme/runs/{world.run.name}/groups/{world.uid}/").content.decode()
    assert "browse-files-" not in page and "hunk-link" not in page
    assert load_workspace(world).repo_view is None
