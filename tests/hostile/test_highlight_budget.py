"""Highlighting has a budget and the diff partial a size budget.

The lexer is chosen from the patch's file name, which the agent controls, and some of
pygments' lexers backtrack catastrophically: `val s = "` and 40 backslashes in a `.scala`
line took ~25 s to highlight, 60 never finished, and the group page hung with it. Now
pygments runs in a worker process that is killed past the budget, and the text is shown
escaped, unhighlighted, with a note. The scan below tries every lexer a file name can pick
with pathological lines; each call must come back, highlighted or marked plain, with every
character escaped. It asserts on the mechanism's outcome (the note, the escaping); the one
wall-clock bound is what the mechanism guarantees (the call's timeout, plus a worker's
start-up limit, plus slack), not a performance figure.
"""

from __future__ import annotations

import html
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.urls import reverse
from pygments.lexers import find_lexer_class_for_filename, get_all_lexers

from grading.rollouts import diffs, highlighter
from reviews.presenters.group_page import diffs as group_diffs
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

SCALA_LINE = 'val s = "' + "\\" * 60  # before: never finished (40 backslashes: ~25 s)
SCAN_SECONDS = 0.3  # each scan call's lexing budget (a stopped lexer costs this, then a new worker)
GUARANTEED = SCAN_SECONDS + highlighter.SPAWN_SECONDS + 5  # timeout + a worker's start-up + kill/slack

# Short enough to be lexed (not skipped as too long) and to keep the scan quick; exponential
# backtracking needs only dozens of characters (the Scala case: 40 backslashes, ~25 s).
PATHOLOGICAL = [
    SCALA_LINE,
    "'" + "\\" * 80,
    '"' + '\\"' * 80,
    "`" + "\\`" * 80,
    "#" + "\\" * 80,
    "(" * 300,
    "[{(" * 100,
    "${" * 150 + "$(" * 150,
    "<a " * 100 + "<" * 100,
    " " * 300 + "x",
    "\t" * 300 + "x",
    "/*" + "*" * 200 + " (*" * 100 + "{-" * 50,
    "<!--" + "-" * 300,
    '"' + "a " * 150,
    "0x" + "1" * 200 + ".e" + "a." * 100,
]


def _sample_name(pattern: str) -> str:
    """A file name matching a pygments filename pattern ('*.scala', '*.[ch]', 'Makefile.*')."""
    name = re.sub(r"\[!?([^\]]*)\]", lambda m: m.group(1)[:1] or "x", pattern)
    return name.replace("*", "sample").replace("?", "x")


def lexer_file_names() -> dict[str, str]:
    """One file name per lexer that some file name can select: {lexer class: name}."""
    chosen: dict[str, str] = {}
    for _name, _aliases, patterns, _mimes in get_all_lexers():
        for pattern in patterns:
            name = _sample_name(pattern)
            lexer = find_lexer_class_for_filename(name)
            if lexer is not None:
                chosen.setdefault(lexer.__name__, name)
    return chosen


_TAG = re.compile(r'<span class="hl-[A-Za-z0-9-]+(?: hl-[A-Za-z0-9-]+)*">|</span>')


def assert_escaped(lines: list[str], out: tuple[str, ...], note: str) -> None:
    """Every line's HTML is pygments' spans around escaped text, or the escaped text alone."""
    assert len(out) == len(lines)
    for line, fragment in zip(lines, out):
        text = _TAG.sub("", fragment)
        assert "<" not in text and ">" not in text, fragment[:200]
        assert html.unescape(text) == line
        if note:
            assert fragment == html.escape(line)


def _one(name: str, line: str):
    budget = diffs.HighlightBudget(seconds=SCAN_SECONDS, hunk_seconds=SCAN_SECONDS)
    lines = [line, "x = 1  # after"]
    started = time.monotonic()
    out, note = diffs.highlight_lines(lines, name, budget)
    return name, line, lines, out, note, budget, time.monotonic() - started


@pytest.fixture(autouse=True)
def _empty_cache():
    diffs.highlight_cache.clear()
    yield
    diffs.highlight_cache.clear()


def test_scala_backslashes_stop_within_budget_and_show_plain_text():
    started = time.monotonic()
    out, note = diffs.highlight_lines([SCALA_LINE, "val t = 1"], "src/A.scala")
    elapsed = time.monotonic() - started
    assert note.startswith("Shown without highlighting") and "did not finish" in note
    assert out == (html.escape(SCALA_LINE), "val t = 1")
    assert elapsed < diffs.HUNK_SECONDS + highlighter.SPAWN_SECONDS + 5
    # Shown again (a reload, the queue's "next"): the stopped side is remembered, not re-lexed.
    started = time.monotonic()
    assert diffs.highlight_lines([SCALA_LINE, "val t = 1"], "src/A.scala") == (out, note)
    assert time.monotonic() - started < diffs.HUNK_SECONDS
    # The highlighter still works afterwards (the stuck worker was killed, a new one serves).
    out, note = diffs.highlight_lines(["val t = 1"], "src/B.scala")
    assert not note and '<span class="hl-' in out[0]


@pytest.mark.slow
def test_every_lexer_a_file_name_can_pick_comes_back_on_pathological_lines():
    names = lexer_file_names()
    assert len(names) > 300 and "ScalaLexer" in names
    jobs = [(name, line) for name in sorted(names.values()) for line in PATHOLOGICAL]
    with ThreadPoolExecutor(highlighter.POOL_SIZE) as pool:
        results = list(pool.map(lambda job: _one(*job), jobs))
    stopped, refused = [], []
    for name, line, lines, out, note, budget, elapsed in results:
        assert_escaped(lines, out, note)
        assert elapsed < GUARANTEED, (name, line[:20], elapsed)
        assert budget.spent_seconds <= GUARANTEED
        if note:
            # stopped past its budget, or a lexer (console sessions, literate sources) whose
            # output did not give back the line's text: shown plain rather than altered
            assert any(why in note for why in ("did not finish", "no highlighter was free", "did not match")), note
            stopped.append((name, line[:12]))
            if "did not match" in note:
                refused.append((name, line[:12]))
    assert ("sample.scala", SCALA_LINE[:12]) in stopped
    # Most lexers highlight these lines. Only refusals count here: how many lexers run past
    # their time depends on how loaded the machine is, not on the code (on a shared 2-core
    # machine at load 15 more than a tenth did), and the bounds above already hold each one.
    assert len(refused) < len(jobs) / 10, refused
    print(
        f"\nhighlight scan: {len(names)} lexers x {len(PATHOLOGICAL)} lines, {len(stopped)} stopped: "
        + ", ".join(sorted({n for n, _ in stopped}))
    )


def test_a_patch_spends_one_budget_then_the_rest_is_plain_with_a_note():
    hunks = "".join(f"@@ -{i * 10 + 1},1 +{i * 10 + 1},1 @@\n-x\n+{SCALA_LINE}{i}\n" for i in range(6))
    patch = f"--- a/A.scala\n+++ b/A.scala\n{hunks}"
    budget = diffs.HighlightBudget(seconds=0.6, hunk_seconds=0.3)
    started = time.monotonic()
    parsed = diffs.parse_patch(patch, budget=budget)
    assert time.monotonic() - started < 0.6 + 2 * (highlighter.SPAWN_SECONDS + 1)
    notes = [h.note for h in parsed.files[0].hunks]
    assert all(notes) and any("budget" in n for n in notes) and any("did not finish" in n for n in notes)
    assert budget.spent_seconds < 0.6 + 2 * (highlighter.SPAWN_SECONDS + 1)
    for hunk in parsed.files[0].hunks:
        for row in hunk.unified:
            if row.kind == "added":  # the Scala lines: stopped, or past the spent budget
                assert row.html == html.escape(row.text)


def test_long_lines_and_carriage_returns_are_not_lexed_and_rows_stay_aligned():
    lines = ["a = 1", "b = '" + "x" * (diffs.HIGHLIGHT_LINE_CHARS + 1), "c = 2\rd = <3>", "e = 4"]
    out, note = diffs.highlight_lines(lines, "m.py")
    assert_escaped(lines, out, "")
    assert "2 lines longer than" in note
    assert out[1] == html.escape(lines[1]) and out[2] == html.escape(lines[2])
    assert '<span class="hl-' in out[0] and '<span class="hl-' in out[3]


def test_cut_patch_counts_and_leaves_later_files_out():
    patch = "".join(f"--- a/f{k}.py\n+++ b/f{k}.py\n@@ -0,0 +1,3 @@\n+a\n+b\n+c\n" for k in range(4))
    parsed = diffs.parse_patch(patch, render=False, max_rows=5)
    assert (parsed.shown_lines, parsed.total_lines, parsed.cut) == (5, 12, True)
    assert [f.path for f in parsed.files] == ["f0.py", "f1.py"]
    assert [len(h.unified) for f in parsed.files for h in f.hunks] == [3, 2]
    whole = diffs.parse_patch(patch, render=False)
    assert (whole.shown_lines, whole.total_lines, whole.cut) == (12, 12, False)


# The pages ------------------------------------------------------------------------------


def _scala_group(uid: str, patch: str) -> dict:
    g = small_group(uid, rewards=(1, 1))
    g["rollouts"][0]["patch"] = patch
    return g


@pytest.mark.django_db
def test_group_page_and_partial_show_the_scala_patch_plain_with_a_note(client, alice, acme):
    patch = f"diff --git a/A.scala b/A.scala\n--- a/A.scala\n+++ b/A.scala\n@@ -1,1 +1,2 @@\n-x\n+{SCALA_LINE}\n+<b>bold</b>\n"
    ingest_groups(acme, _scala_group("scala-1@1", patch))
    client.force_login(alice)
    page = client.get(reverse("group", args=["acme", "r1", "scala-1@1"]))
    assert page.status_code == 200
    text = page.content.decode()
    assert 'class="hunk note"' in text and "Shown without highlighting" in text
    assert "<b>bold</b>" not in text and "&lt;b&gt;bold&lt;/b&gt;" in text
    for view in ("unified", "split"):
        r = client.get(reverse("rollout-diff", args=["acme", "r1", "scala-1@1", 0]) + f"?view={view}", HTTP_HX_REQUEST="true")
        body = r.content.decode()
        assert r.status_code == 200 and 'class="hunk note"' in body and "<b>bold</b>" not in body


@pytest.mark.django_db
@pytest.mark.slow
def test_diff_partial_of_a_200k_line_patch_is_bounded_with_a_note_and_a_raw_download(client, alice, acme):
    n = 200_000
    patch = f"--- /dev/null\n+++ b/big.py\n@@ -0,0 +1,{n} @@\n" + "".join(f"+line_{i} = {i} * 2  # <i>\n" for i in range(n))
    ingest_groups(acme, _scala_group("big-1@1", patch))
    client.force_login(alice)
    url = reverse("rollout-diff", args=["acme", "r1", "big-1@1", 0])
    for view in ("unified", "split"):
        r = client.get(url + f"?view={view}", HTTP_HX_REQUEST="true")
        assert r.status_code == 200
        body = r.content.decode()
        assert len(r.content) < 3_000_000, len(r.content)  # was 42 MB
        assert 'data-testid="diff-note-0"' in body
        assert f"Showing the first {group_diffs.DIFF_PARTIAL_ROWS:,} of its {n:,} lines" in body
        assert "?format=raw" in body and "<i>" not in body
    raw = client.get(url + "?format=raw")
    assert raw.status_code == 200 and raw.content.decode() == patch
    assert raw["Content-Type"].startswith("text/plain") and raw["X-Content-Type-Options"] == "nosniff"
    assert raw["Content-Disposition"].startswith("attachment") and "no-store" in raw["Cache-Control"]
    page = client.get(url)  # the partial's own page (no htmx) has the same budget
    assert page.status_code == 200 and len(page.content) < 3_000_000 and 'data-testid="diff-note-0"' in page.content.decode()


@pytest.mark.django_db
def test_small_patch_partial_has_no_note(client, alice, acme):
    ingest_groups(acme, small_group("small-1@1"))
    client.force_login(alice)
    r = client.get(reverse("rollout-diff", args=["acme", "r1", "small-1@1", 0]), HTTP_HX_REQUEST="true")
    body = r.content.decode()
    assert r.status_code == 200 and "diff-note-0" not in body and "hunk note" not in body and '<span class="hl-' in body
