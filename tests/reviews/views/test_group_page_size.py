"""The group page of the largest real multi-model group stays within 300 kB and still shows
what a reviewer reads there.

The group is tests/helpers/real_groups.real_size_group(37): 15 real mini-swe-agent rollouts
of two models, each real fix with the scratch files agents leave in front of it. Of the 64
real-size groups (one starting at each of the 64 real trajectories) its page is the largest.
Its task is given a base commit, as a SWE-bench task has, so each file and each hunk of a
patch links to the lane's files view. It is ingested with its after-commit work run (its
patches highlighted ahead) and graded by the heuristic grader. alice, acme's admin, sees the
verdict; bob judges the group blind, his lanes in WORST_ORDER: of 150 blind shuffles tried,
one that puts the most patch on his page.
"""

from __future__ import annotations

import re
from html import unescape

import pytest

from grading.jobs.grade import grade_group
from grading.models import Group, Membership, PatchHighlight
from grading.rollouts.diffs import parse_patch
from reviews.models import Assignment
from reviews.presenters.group_page import group_page
from reviews.presenters.group_page.diffs import DIFF_PAGE_CHARS
from reviews.services.queue import assign
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import producer_values, real_size_group

pytestmark = pytest.mark.django_db

PAGE_BYTES = 300_000
BASE_COMMIT = "0123456789abcdef0123456789abcdef01234567"
WORST_ORDER = [14, 11, 2, 12, 1, 10, 0, 9, 7, 13, 8, 5, 3, 4, 6]  # passing first, as a blind shuffle puts them
URL = "/projects/acme/runs/r1/groups/real-size-37@1/"


@pytest.fixture
def line():
    line = real_size_group(37, run="r1")
    line["task"]["base_commit"] = BASE_COMMIT
    return line


@pytest.fixture
def group(acme, bob, line, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ingest_groups(acme, line)
    group = Group.objects.select_related("run__project", "step", "task").get(uid=line["uid"])
    assert PatchHighlight.objects.filter(rollout__group=group).count() == 15
    grade_group(group_id=group.pk, backend="heuristic")
    passing = {r["index"] for r in line["rollouts"] if r["reward"] == 1}
    assert set(WORST_ORDER[: len(passing)]) == passing
    assignment = assign(group=group, reviewer=bob, blind=True)
    Assignment.objects.filter(pk=assignment.pk).update(order=WORST_ORDER)
    return group


def _code_rows(html: str) -> list[str]:
    """The text of every unified diff row's code cell, in order."""
    return [unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r'<td class="code">(.*?)</td></tr>', html)]


def _files(html: str) -> list[str]:
    return re.findall(r'<details class="file"[^>]*>\s*<summary><code>([^<]+)</code>', html)


@pytest.mark.parametrize("person", ["alice", "bob"])
def test_the_largest_real_group_page_stays_within_300_kb_and_shows_every_lane(client, request, line, group, person):
    user = request.getfixturevalue(person)
    client.force_login(user)
    r = client.get(URL)
    html = r.content.decode()
    assert r.status_code == 200
    assert len(r.content) <= PAGE_BYTES, f"{person}'s page of {line['uid']} is {len(r.content):,} bytes"

    page = group_page(user=user, group=group, membership=Membership.objects.get(user=user, project=group.run.project), query={})
    assert len(page.rollouts) == 15 and html.count('<article class="lane ') == 15
    patches = {r["index"]: r["patch"] for r in line["rollouts"]}
    inline = [lane for lane in page.rollouts if lane.diff is not None]
    # The page still carries its patches up to the page's budget: the cut is in the markup.
    assert sum(len(patches[lane.index]) for lane in inline) >= DIFF_PAGE_CHARS * 3 // 4
    for lane in page.rollouts:
        box = html[html.index(f'id="diff-{lane.lane}"') : html.index(f'id="turns-{lane.lane}"')]
        if lane.diff is None:
            assert lane.diff_deferred and f'data-testid="load-diff-{lane.lane}"' in box
            continue
        # Every core file of the patch, highlighted, each line of it as the patch has it.
        rows = {
            f.path: [row.text for h in f.hunks for row in h.unified] for f in parse_patch(patches[lane.index], render=False).files
        }
        shown = [table.file.path for table in lane.diff.tables]
        assert shown and _files(box) == shown
        assert _code_rows(box) == [text for path in shown for text in rows[path]]
        assert '<span class="hl-' in box
        assert box.count('data-testid="open-file"') == len(shown)  # each file opens in the lane's files view
        assert box.count('class="hunk-link"') == sum(len(t.file.hunks) for t in lane.diff.tables)
        if lane.diff.extra:  # the scratch files listed, their diffs loaded when asked
            assert f"+{len(lane.diff.extra)} extra file" in box and 'hx-trigger="toggle once"' in box
    if person == "bob":  # his judging fields on every passing lane, and nothing of the producers
        assert html.count('<section class="judge"') == sum(1 for lane in page.rollouts if lane.passed)
        assert [v for v in producer_values(line) if v in html] == []
    else:  # the verdict on every lane it grades
        assert html.count('<section class="verdict"') == sum(1 for lane in page.rollouts if lane.grade is not None) > 0
