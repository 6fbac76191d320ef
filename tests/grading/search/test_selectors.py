"""The search index and selector (grading.search): ingest keeps the index current, and the
selector finds words, phrases, prefixes and literal text within a project's scope — the same
answers on SQLite (rows read in Python) and PostgreSQL (the index of migration 0015).

acme holds run r1 (steps 1 and 2) and r2; "other" holds a rollout with the same words,
which no acme search may return.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.db.models.expressions import RawSQL

from grading.models import CheatDecision, Group, Rollout, RolloutSearch, SearchChunk
from grading.search.query import parse_query
from grading.search.selectors import GraderFieldsHidden, SearchScope, search_rollouts
from grading.verdicts.store import GradeInput, record_verdict
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = pytest.mark.django_db


def _where(hit) -> str:
    """Where a hit points on the group page: its query string and fragment (the URL's tail)."""
    return f"{urlencode(hit.link)}#{hit.anchor}"


def with_commands(group: dict, *commands: str) -> dict:
    """`group` whose rollout i ran commands[i] (and printed it back)."""
    for rollout, command in zip(group["rollouts"], commands):
        rollout["messages"].append(
            {
                "role": "assistant",
                "content": f"THOUGHT: try\n```bash\n{command}\n```",
                "action": command,
                "observation": f"ran: {command}\nok",
            }
        )
    return group


@pytest.fixture
def corpus(acme, other_project):
    ingest_groups(
        acme,
        with_commands(small_group("a@1", rewards=(1, 0, 1)), "git log -p", "pip install astropy==4.2", "Git Log --oneline"),
        with_commands(small_group("b@2", step=2, instance_id="t-2", rewards=(1, 0)), "log git", "pip install astropy"),
        with_commands(small_group("c@1", run="r2", instance_id="t-3", rewards=(0, 1)), "git log -p", "astroid check"),
    )
    ingest_groups(other_project, with_commands(small_group("secret@1", rewards=(1,)), "git log -p"))
    return {g.uid: g for g in Group.objects.all()}


def found(project, raw: str, mode: str = "words", **scope) -> set[str]:
    page = search_rollouts(
        query=parse_query(raw, mode=mode), scope=SearchScope(project=project, **scope), sees_grader=True, limit=100
    )
    return {f"{r.rollout.group.uid}#{r.rollout.index}" for r in page.results}


def test_ingest_indexes_every_rollout_in_its_transaction(corpus):
    assert RolloutSearch.objects.count() == Rollout.objects.count() == 8
    row = RolloutSearch.objects.select_related("rollout__group").get(rollout__group__uid="b@2", rollout__index=1)
    assert (row.step_number, row.passed, row.run_id) == (2, False, row.rollout.group.run_id)
    text = "".join(SearchChunk.objects.filter(rollout_id=row.rollout_id).order_by("seq").values_list("text", flat=True))
    assert "pip install astropy" in text and "w.py" in text and "t::a" in text


def test_a_resent_line_indexes_nothing_twice_and_an_extension_indexes_its_new_rollouts(acme, corpus):
    line = with_commands(small_group("a@1", rewards=(1, 0, 1)), "git log -p", "pip install astropy==4.2", "Git Log --oneline")
    ingest_groups(acme, line)  # unchanged
    assert RolloutSearch.objects.count() == 8
    extended = with_commands(
        small_group("a@1", rewards=(1, 0, 1, 0)), "git log -p", "pip install astropy==4.2", "Git Log --oneline", "svn blame"
    )
    report = ingest_groups(acme, extended)
    assert report.groups_extended == 1 and RolloutSearch.objects.count() == 9
    assert found(acme, "svn blame") == {"a@1#3"}


def test_words_any_case_all_of_them(acme, corpus):
    assert found(acme, "git log") == {"a@1#0", "a@1#2", "b@2#0", "c@1#0"}
    assert found(acme, "GIT oneline") == {"a@1#2"}
    assert found(acme, "git nosuchword") == set()


def test_phrase_keeps_the_order(acme, corpus):
    assert found(acme, '"git log"') == {"a@1#0", "a@1#2", "c@1#0"}  # not b@2#0, which ran "log git"
    assert found(acme, '"log git"') == {"b@2#0"}


def test_prefix(acme, corpus):
    assert found(acme, "astro*") == {"a@1#1", "b@2#1", "c@1#1"}
    assert found(acme, "astropy") == {"a@1#1", "b@2#1"}  # astroid is not astropy


def test_literal_is_case_sensitive_and_keeps_punctuation(acme, corpus):
    assert found(acme, "git log -p", mode="literal") == {"a@1#0", "c@1#0"}
    assert found(acme, "Git Log", mode="literal") == {"a@1#2"}
    assert found(acme, "pip install astropy==", mode="literal") == {"a@1#1"}
    # a literal may start or end inside a word: "it log -" is in "git log -p"
    assert found(acme, "it log -", mode="literal") == {"a@1#0", "c@1#0"}
    # one run of letters with punctuation: no word the index can use, every row in scope is read
    assert found(acme, "astropy==", mode="literal") == {"a@1#1"}


def test_scopes(acme, corpus):
    r1 = corpus["a@1"].run
    assert found(acme, "git", run=r1) == {"a@1#0", "a@1#2", "b@2#0"}
    assert found(acme, "git", step_min=2) == {"b@2#0"}
    assert found(acme, "git", step_max=1, run=r1) == {"a@1#0", "a@1#2"}
    assert found(acme, "git", passed=False) == {"c@1#0"}


def test_another_projects_rollouts_never_appear(acme, other_project, corpus):
    # "secret@1" in "other" ran the same command; acme's searches never see it, whatever the scope
    assert "secret@1#0" not in found(acme, "git log -p", mode="literal")
    foreign_run = corpus["secret@1"].run
    assert found(acme, "git", run=foreign_run) == set()
    assert found(other_project, "git log -p", mode="literal") == {"secret@1#0"}


def test_tier_and_cheat_scopes_and_who_may_use_them(acme, corpus):
    a1 = corpus["a@1"]
    record_verdict(group=a1, grader="g@1", status="valid", grades=[GradeInput(0, "T1", 1), GradeInput(2, "T3", 2, cheat=True)])
    assert found(acme, "git", tier="T3") == {"a@1#2"}
    assert found(acme, "git", tier="T1") == {"a@1#0"}
    assert found(acme, "git", cheat="any") == {"a@1#2"}  # the grader's cheat flag is a signal
    assert found(acme, "git", cheat="confirmed") == set()
    CheatDecision.objects.filter(rollout__group=a1).update(confirmed=True)
    assert found(acme, "git", cheat="confirmed") == {"a@1#2"}
    # a person whose role does not see grader verdicts cannot filter by them
    for scope in ({"tier": "T1"}, {"cheat": "any"}):
        with pytest.raises(GraderFieldsHidden):
            search_rollouts(query=parse_query("git"), scope=SearchScope(project=acme, **scope), sees_grader=False)
    # groups whose grader fields this person may not see yet drop out of a grader-scoped search
    hidden = Group.objects.filter(pk=a1.pk).values_list("pk", flat=True)
    page = search_rollouts(
        query=parse_query("git"), scope=SearchScope(project=acme, tier="T1", grader_hidden=hidden), sees_grader=True
    )
    assert page.results == []


def test_hits_name_the_turn_the_patch_line_and_link_there(acme, corpus):
    page = search_rollouts(query=parse_query("git log -p", mode="literal"), scope=SearchScope(project=acme), sees_grader=False)
    first = page.results[0]
    turn_hits = [h for h in first.hits if h.where == "turn"]
    assert turn_hits and turn_hits[0].turn == 2  # the third message (0: user, 1: assistant, 2: ours)
    # the group page at the turn, with the query and the hit's number: the hit bar shows that
    # hit highlighted and walks on from it
    # (the selector says where; the review desk, whose page it is, makes the URL from it)
    assert _where(turn_hits[0]) == "lane=0&start=2&q=git+log+-p&mode=literal&hit=0#turn-0-2"
    assert str(turn_hits[0].snippet).count("<mark>git log -p</mark>") == 1
    patch_result = search_rollouts(
        query=parse_query("y = 1", mode="literal"), scope=SearchScope(project=acme), sees_grader=False
    ).results[0]
    patch_hit = patch_result.hits[0]
    assert (patch_hit.where, patch_hit.path, patch_hit.line) == ("patch", "w.py", 2)
    # a patch line too opens the group page's hit bar, at the diff row
    assert _where(patch_hit).startswith("lane=0&q=y+%3D+1&mode=literal&hit=0#p0-")


def test_snippets_are_escaped(acme):
    ingest_groups(acme, with_commands(small_group("x@1", rewards=(1,)), "echo '<script>alert(1)</script>'"))
    hit = search_rollouts(query=parse_query("alert"), scope=SearchScope(project=acme), sees_grader=False).results[0].hits[0]
    assert "<script>" not in str(hit.snippet) and "&lt;script&gt;" in str(hit.snippet)
    assert "<mark>alert</mark>" in str(hit.snippet)


def test_keyset_paging_and_count(acme, corpus):
    query, scope = parse_query("git"), SearchScope(project=acme)
    first = search_rollouts(query=query, scope=scope, sees_grader=False, limit=2)
    assert first.count == 4 and not first.count_capped and first.next_cursor is not None
    second = search_rollouts(query=query, scope=scope, sees_grader=False, limit=2, after=first.next_cursor)
    assert second.next_cursor is None
    ids = [r.rollout.pk for r in first.results + second.results]
    assert len(ids) == 4 == len(set(ids)) and ids == sorted(ids)
    assert first.indexed and first.pending == 0  # indexed in the ingest transaction (eager Celery)


def test_query_count_is_pinned(acme, corpus, django_assert_num_queries):
    # the project's runs, the backlog; PostgreSQL: count, page; SQLite: the candidates and their chunks; then
    # rollouts, bodies. PostgreSQL: 4 more for the planner's settings (a savepoint, set_config, its rollback
    # and release: selectors._planned)
    from django.db import connection

    with django_assert_num_queries(6 + (4 if connection.vendor == "postgresql" else 0)):
        search_rollouts(query=parse_query("git"), scope=SearchScope(project=acme), sees_grader=False)


def test_migration_backfill_indexes_rollouts_stored_before_it(acme, corpus):
    from django.apps import apps

    from grading.search.index import backfill

    RolloutSearch.objects.all().delete()
    assert backfill(apps, batch=3) == 8
    assert found(acme, '"git log"') == {"a@1#0", "a@1#2", "c@1#0"}


def _many(acme, n_groups: int, size: int, command_of) -> None:
    """`n_groups` groups of `size` rollouts; rollout k (0-based over all) ran `command_of(k)`."""
    groups = []
    for g in range(n_groups):
        commands = [command_of(g * size + i) for i in range(size)]
        groups.append(with_commands(small_group(f"m{g}@1", instance_id=f"t-m{g}", rewards=(1,) * size), *commands))
    ingest_groups(acme, *groups)


def _every_page(acme, raw: str, mode: str = "literal", limit: int = 20) -> tuple[list, list[str]]:
    pages, seen, after = [], [], None
    while True:
        page = search_rollouts(
            query=parse_query(raw, mode=mode), scope=SearchScope(project=acme), sees_grader=True, after=after, limit=limit
        )
        pages.append(page)
        seen += [f"{r.rollout.group.uid}#{r.rollout.index}" for r in page.results]
        if page.next_cursor is None:
            return pages, seen
        after = page.next_cursor


def _brute(raw: str) -> list[str]:
    return [
        f"{r.group.uid}#{r.index}"
        for r in Rollout.objects.select_related("group", "content").order_by("pk")
        if any(raw in (m.get("action") or "") for m in r.content.messages)
    ]


def test_a_common_literal_is_paged_from_the_rollouts_read_and_its_count_estimated(acme):
    # 96 rollouts, two in three ran `git diff`: a page lies within the first rollouts read
    _many(acme, 12, 8, lambda k: "git diff HEAD" if k % 3 else "ls -la")
    pages, seen = _every_page(acme, "git diff")
    assert pages[0].count_estimated and len(pages[0].results) == 20
    assert 55 <= pages[0].count <= 75  # 64 truly; estimated from the share of the first rollouts read
    assert seen == _brute("git diff") and len(seen) == 64  # every page together: exactly the rollouts that ran it
    # the hits of a probed page are those of any page: the first few, numbered from 0, on the group page
    first = pages[0].results[0]
    assert first.rollout.group.uid == "m0@1"
    assert _where(first.hits[0]).startswith("lane=1&start=") and "&hit=0#turn-1-" in _where(first.hits[0])


def test_a_literal_of_a_few_rollouts_and_a_rare_one_are_counted_by_the_index(acme):
    # 240 rollouts: `python -c` in one of six (too few in the first rollouts read for a page:
    # the index answers, exactly), `rm -rf build` in three
    _many(acme, 30, 8, lambda k: "python -c 'print(1)'" if k % 6 == 0 else ("rm -rf build" if k in (5, 77, 151) else "ls"))
    pages, seen = _every_page(acme, "python -c")
    assert len(pages[0].results) == 20 and not pages[0].count_estimated and pages[0].count == 40
    assert seen == _brute("python -c") and len(seen) == 40
    pages, seen = _every_page(acme, "rm -rf build")
    assert len(pages) == 1 and not pages[0].count_estimated and pages[0].count == 3
    assert seen == _brute("rm -rf build")


def test_a_probed_scope_read_whole_is_counted_exactly(acme):
    _many(acme, 3, 4, lambda k: "git diff" if k % 2 else "git status")  # 12 rollouts: fewer than one window
    pages, seen = _every_page(acme, "git diff", limit=5)
    assert pages[0].count == 6 and not pages[0].count_estimated and len(pages) == 2
    assert seen == _brute("git diff")


def test_a_rare_phrase_among_rollouts_holding_its_words_is_read_a_bounded_stretch_a_page(acme):
    # every rollout holds the words `git` and `diff`; one, the 391st, the phrase "git diff"
    from django.db import connection

    _many(acme, 50, 8, lambda k: "git diff HEAD" if k == 390 else "git status; diff a b")
    pages, seen = _every_page(acme, '"git diff"', mode="words")
    assert seen == [f"m{390 // 8}@1#{390 % 8}"]
    if connection.vendor == "postgresql":  # SQLite checks its candidates in Python, all at once
        assert len(pages) == 2 and pages[0].results == [] and pages[0].next_cursor is not None


def test_a_literal_the_index_cannot_answer_in_time_is_read_in_turn(acme, monkeypatch):
    # the first window holds none of it, so the index is asked; given no time (1 ms), it is
    # cancelled and the page is read rollout by rollout instead, bounded, and still exact
    from django.db import connection

    from grading.search import selectors

    if connection.vendor != "postgresql":
        pytest.skip("the index's time limit is PostgreSQL's statement_timeout")
    _many(acme, 50, 8, lambda k: "make check" if k >= 300 else "ls")
    monkeypatch.setattr(selectors, "INDEX_SECONDS", 0.001)
    monkeypatch.setattr(
        selectors,
        "_chunks_holding",
        lambda literal: RawSQL(
            "SELECT c.rollout_id FROM grading_searchchunk c, pg_sleep(0.05) WHERE c.text LIKE %s", [f"%{literal}%"]
        ),
    )
    pages, seen = _every_page(acme, "make check")
    assert pages[0].count_estimated and pages[0].next_cursor is not None  # (it read PROBE_MAX: the first 320)
    assert [r.rollout.group.uid for r in pages[0].results][:1] == ["m37@1"]  # rollout 300 is the 5th of group 37
    assert seen == _brute("make check") and len(seen) == 100
