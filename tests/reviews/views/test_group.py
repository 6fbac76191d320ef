"""The group page's overview and the search within a rollout's turns, as HTML.

bob reviews acme (tests/conftest.py); alice is its admin and sees grader verdicts. Group
c1@1: #0, #2 and #3 pass with the same fix (#3 also adds debug_issue.py), #1 fails with
another patch. #0 has 60 messages: turn k runs `echo needle-k`, turn 10's observation is
120 lines long. The browser side is tests/browser/test_group_overview.py.
"""

from __future__ import annotations

import doctest
import re

import pytest

from grading.models import Group
from grading.rollouts import turns as turns_module
from grading.rollouts.turns import FOLD_LINES, find_turns, fold_head
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db

FIX = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 0\n+y = 42\n"
DEBUG = (
    "diff --git a/debug_issue.py b/debug_issue.py\nnew file mode 100644\n--- /dev/null\n+++ b/debug_issue.py\n"
    "@@ -0,0 +1 @@\n+print('debug')\n"
)
PAGE = "/projects/acme/runs/r1/groups/c1@1/"
TURNS = PAGE + "rollouts/0/turns/"


@pytest.fixture
def clustered(acme):
    line = small_group("c1@1", instance_id="c-1", rewards=(1, 0, 1, 1))
    for index, patch in {0: FIX, 2: FIX, 3: FIX + DEBUG}.items():
        line["rollouts"][index]["patch"] = patch
    messages = [{"role": "user", "content": "Fix the widget."}]
    for k in range(1, 60):
        observation = "\n".join(f"line {j} of a long listing" for j in range(120)) if k == 10 else f"output {k}"
        messages.append({"role": "assistant", "content": f"step {k}", "action": f"echo needle-{k}", "observation": observation})
    line["rollouts"][0]["messages"] = messages
    ingest_groups(acme, line)
    return Group.objects.get(uid="c1@1")


def _rows(html: str) -> list[str]:
    return re.findall(r'data-testid="overview-row-(\d+)"', html)


def test_overview_has_a_row_per_rollout_passing_first_with_clusters(client, bob, clustered):
    client.force_login(bob)
    html = client.get(PAGE).content.decode()
    assert _rows(html) == ["0", "2", "3", "1"]  # passing lanes first, failing after
    assert re.findall(r'<article class="lane \w+" id="rollout-(\d+)"', html) == ["0", "2", "3", "1"]
    assert "4 rollouts, 2 distinct changes (1 among the passing)" in html
    row3 = html[html.index('data-testid="overview-row-3"') :]
    row3 = row3[: row3.index("</tr>")]
    assert "same change as #0, #2, +1 extra file" in row3
    assert 'data-files="2"' in row3 and 'data-lines="3"' in row3 and 'data-f2p="1"' in row3 and 'data-tokens="1003"' in row3
    assert '<span class="add">1</span>/<span class="del">0</span>' in row3  # F2P passed/failed
    assert re.search(r'data-testid="cluster-0"[^>]*>same change as #2, #3<', html)
    assert re.search(r'data-testid="cluster-2"[^>]*>same change as #0, #3<', html)  # one wording for every member
    assert 'data-cluster="0"' in html and 'data-testid="tier-cluster-' not in html  # bob is not judging


def test_overview_shows_the_grader_tier_only_with_the_verdict(client, alice, bob, clustered):
    record_verdict(
        group=clustered,
        grader="g@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(2, "T2", 2), GradeInput(3, "T2", 2)],
    )
    client.force_login(alice)
    html = client.get(PAGE).content.decode()
    assert "grader tier" in html and 'data-tier="T2" data-rank="2"' in html


def test_turn_search_finds_the_turn_with_its_own_number(client, bob, clustered):
    client.force_login(bob)
    r = client.get(TURNS, {"q": "NEEDLE-42"}, HTTP_HX_REQUEST="true")
    html = r.content.decode()
    assert r.status_code == 200 and "1 turn containing" in html
    assert re.findall(r'id="turn-0-(\d+)"', html) == ["42"] and "turn 42" in html
    assert 'data-land="turn-0-42"' in html  # "read on from turn 42" lands on it
    r = client.get(TURNS, {"q": "needle-1"}, HTTP_HX_REQUEST="true")  # needle-1, needle-10..19
    assert re.findall(r'id="turn-0-(\d+)"', r.content.decode()) == ["1", *map(str, range(10, 20))]
    r = client.get(TURNS, {"q": "no such text"}, HTTP_HX_REQUEST="true")
    assert "No turn containing" in r.content.decode()
    # Text that would be a costly or broken pattern is searched for as it is.
    r = client.get(TURNS, {"q": "(a+)+$ [" * 10}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and "No turn containing" in r.content.decode()


def test_turn_search_pages_its_matches():
    messages = [{"role": "assistant", "content": f"hit {k}"} for k in range(100)]
    first, after = find_turns(messages, "HIT", 0, 40)
    assert [t.position for t in first] == list(range(40)) and after == 40
    rest, after = find_turns(messages, "hit", after, 40)
    assert rest[0].position == 40 and after == 80
    assert find_turns(messages, "hit", 95, 40)[1] is None


def test_turn_search_refuses_a_huge_query_naming_the_field(client, bob, clustered):
    client.force_login(bob)
    r = client.get(TURNS, {"q": "x" * 5000})
    assert r.status_code == 400 and r.content.decode().startswith("q: ")


def test_jump_to_a_turn_and_past_the_end(client, bob, clustered):
    client.force_login(bob)
    html = client.get(TURNS, {"start": "55"}, HTTP_HX_REQUEST="true").content.decode()
    assert re.findall(r'id="turn-0-(\d+)"', html)[:2] == ["55", "56"]
    html = client.get(TURNS, {"start": "99"}, HTTP_HX_REQUEST="true").content.decode()
    assert "No turn 99: this rollout has 60 messages (turns 0–59)" in html


def test_long_observations_are_folded_with_show_all(client, bob, clustered):
    client.force_login(bob)
    html = client.get(TURNS, HTTP_HX_REQUEST="true").content.decode()
    turn10 = html[html.index('id="turn-0-10"') : html.index('id="turn-0-11"')]
    assert 'data-testid="fold-0-10"' in turn10 and "show all 3,129 characters" in turn10
    head = turn10[turn10.index("fold-head") :]
    head = head[: head.index("</pre>")]
    assert "line 23 of" in head and "line 24 of" not in head
    assert 'data-testid="fold-0-9"' not in html  # short ones are shown whole


def test_fold_head_and_doctests():
    assert fold_head("short") == ""
    assert fold_head("x" * 5000) == "x" * 2000
    assert fold_head("\n".join("ab" for _ in range(40))).count("\n") == FOLD_LINES - 1
    assert doctest.testmod(turns_module).failed == 0


def test_overview_reads_the_stored_clusters(client, bob, clustered):
    """The page reads each rollout's stored cluster (grading.ingest.cluster_storage wrote it at
    ingest) and parses no patch for it; a group not clustered yet shows no cluster column."""
    from grading.models import Rollout

    Rollout.objects.filter(group=clustered, index=1).update(cluster=0)  # only the stored field says so
    client.force_login(bob)
    html = client.get(PAGE).content.decode()
    assert re.search(r'data-testid="cluster-1"[^>]*>same change as #0, #2, #3<', html) and "(1 among the passing)" in html
    Rollout.objects.filter(group=clustered).update(cluster=None)
    html = client.get(PAGE).content.decode()
    assert _rows(html) == ["0", "2", "3", "1"] and 'data-testid="cluster-' not in html and 'data-sort="cluster"' not in html


def test_a_judgment_given_without_a_citation_is_shown_uncited(client, alice, bob, clustered):
    # fleet@1 posted from elsewhere: #2's T2 cites nothing, #3's T3 cites a turn, #0's T1 needs nothing
    cited = [{"kind": "turn", "rollout": 3, "locator": "1", "note": "adds a debug file"}]
    record_verdict(
        group=clustered,
        grader="fleet@1",
        status="valid",
        grades=[GradeInput(0, "T1", 1), GradeInput(2, "T2", 2), GradeInput(3, "T3", 3, evidence=cited)],
        raw={"external": {"posted_by": "alice"}},
    )
    client.force_login(alice)
    html = client.get(PAGE).content.decode()
    lanes = {i: html.split(f'id="rollout-{i}"')[1].split("</article>")[0] for i in (0, 2, 3)}
    assert ">uncited</span>" in lanes[2] and 'data-testid="uncited-2"' in lanes[2]
    assert "uncited" not in lanes[0] and "uncited" not in lanes[3] and "turn 1" in lanes[3]
    row = html.split('data-testid="overview-row-2"')[1].split("</tr>")[0]
    assert 'data-testid="overview-uncited-2"' in row and ">uncited</span>" in row
    assert html.count(">uncited</span>") == 2  # the lane and its overview row, nowhere else
