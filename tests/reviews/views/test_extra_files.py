"""The group page's scratch files load on demand (rollout-extra-files), and patches
highlighted ahead are read, not lexed, on a group's first view.

Group g1@1 is tests/helpers/real_groups.scratch_files_group with a 50-line FIX_SUMMARY.md:
six real mini-swe-agent trajectories of two models; rollout 4's patch puts FIX_SUMMARY.md,
debug_issue.py and reproduce_issue.py in front of its fix and is small enough to show inline.
Ingested with its after-commit work run (its patches highlighted ahead). alice is acme's
admin; bob reviews acme, judging g1@1 blind; carol is admin of another project.
"""

from __future__ import annotations

import re
from html import unescape

import pytest

from grading.models import Group, PatchHighlight
from grading.rollouts import diffs
from grading.rollouts.diffs import parse_patch
from grading.verdicts.store import GradeInput, record_verdict
from reviews.selectors.lanes import lanes_for
from reviews.services.queue import assign
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import producer_values, scratch_files_group

pytestmark = pytest.mark.django_db

GROUP = "/projects/acme/runs/r1/groups/g1@1/"
HTMX = {"HTTP_HX_REQUEST": "true"}
SCRATCH = ("FIX_SUMMARY.md", "debug_issue.py", "reproduce_issue.py")


@pytest.fixture
def line():
    return scratch_files_group("g1@1", summary_lines=50)


@pytest.fixture
def group(acme, line, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ingest_groups(acme, line)
    return Group.objects.get(uid="g1@1")


@pytest.fixture
def no_lexing(monkeypatch):
    diffs.highlight_cache.clear()

    def refuse(*args, **kwargs):
        raise AssertionError("the highlighter was called while showing the page")

    monkeypatch.setattr(diffs.highlighter, "highlight", refuse)
    yield
    diffs.highlight_cache.clear()


def _code_rows(html: str) -> list[str]:
    """The text of every unified diff row's code cell, in order."""
    cells = re.findall(r'<td class="code">(.*?)</td></tr>', html)
    return [unescape(re.sub(r"<[^>]+>", "", cell)) for cell in cells]


def _files(html: str) -> list[str]:
    return re.findall(r'<details class="file"[^>]*>\s*<summary><code>([^<]+)</code>', html)


def test_the_first_view_reads_every_patch_highlighted_ahead(client, alice, group, no_lexing):
    assert PatchHighlight.objects.filter(rollout__group=group).count() == 6
    client.force_login(alice)
    r = client.get(GROUP)
    assert r.status_code == 200 and 'class="hl-' in r.content.decode()  # highlighted, by no one now


def test_scratch_files_are_listed_on_the_page_and_their_diffs_load_when_asked(client, alice, group, line):
    client.force_login(alice)
    page = client.get(GROUP).content.decode()
    box = page[page.index('id="diff-4"') : page.index('id="turns-4"')]
    assert "+3 extra files" in box and 'hx-trigger="toggle once"' in box
    assert not any(path in _files(box) for path in SCRATCH)  # listed in the summary only
    assert _files(box) == ["django/core/management/base.py"]

    url = f"{GROUP}rollouts/4/extra-files/?view=unified"
    assert f'hx-get="{url}"' in box and f'href="{url}"' in box  # htmx, and a plain link without it
    part = client.get(url, **HTMX).content.decode()
    assert 'data-ready="extra-files"' in part and _files(part) == list(SCRATCH)
    # Apart from where they are, the rows are the patch's own, all of them, once.
    parsed = parse_patch(line["rollouts"][4]["patch"], render=False)
    whole = [row.text for f in parsed.files for h in f.hunks for row in h.unified]
    assert sorted(_code_rows(box) + _code_rows(part)) == sorted(whole)

    split = client.get(f"{GROUP}rollouts/4/extra-files/?view=split", **HTMX).content.decode()
    assert 'class="diff split hl"' in split and _files(split) == list(SCRATCH)
    full = client.get(url)  # without htmx: a page of its own
    assert full.status_code == 200 and "<html" in full.content.decode() and _files(full.content.decode()) == list(SCRATCH)


def test_a_lane_without_scratch_files_has_no_extra_box_and_an_empty_part(client, alice, group):
    client.force_login(alice)
    page = client.get(GROUP).content.decode()
    assert 'data-testid="extra-files-0"' not in page
    part = client.get(f"{GROUP}rollouts/0/extra-files/", **HTMX).content.decode()
    assert "No extra files" in part and 'data-ready="extra-files"' in part


def test_evidence_in_a_scratch_file_opens_the_extra_files_part(client, alice, group):
    record_verdict(
        group=group,
        grader="g@1",
        status="valid",
        grades=[
            GradeInput(0, "T1", 1),
            GradeInput(1, "T2", 2),
            GradeInput(2, "T2", 2),
            GradeInput(4, "T3", 3, evidence=[{"kind": "patch", "rollout": 4, "locator": "FIX_SUMMARY.md:3", "note": "notes"}]),
            GradeInput(5, "T2", 2),
        ],
    )
    client.force_login(alice)
    page = client.get(GROUP).content.decode()
    href = re.search(r'href="([^"]+)"[^>]*data-testid="evidence-patch"', page).group(1)
    assert href.startswith(f"{GROUP}rollouts/4/extra-files/#p4-")
    anchor = href.split("#", 1)[1]
    assert f'id="{anchor}"' in client.get(href.split("#")[0]).content.decode()


def test_the_part_keeps_the_page_access_rules(client, alice, bob, carol, group, line):
    url = f"{GROUP}rollouts/4/extra-files/"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(carol)  # another project's admin
    assert client.get(url, **HTMX).status_code == 404
    assign(group=group, reviewer=bob, blind=True)
    label = lanes_for(user=bob, group=group).key(4)
    client.force_login(bob)
    assert label != "4" and client.get(url, **HTMX).status_code == 404  # a blind judge names lanes by label only
    r = client.get(f"{GROUP}rollouts/{label}/extra-files/", **HTMX)
    html = r.content.decode()
    assert r.status_code == 200 and _files(html) == list(SCRATCH)
    assert not [v for v in producer_values(line) if v in html]
    page = client.get(GROUP).content.decode()
    assert f"{GROUP}rollouts/{label}/extra-files/" in page and not [v for v in producer_values(line) if v in page]
    assert client.get(f"{GROUP}rollouts/ZZ/extra-files/", **HTMX).status_code == 404
