"""The diff_table tag: the one place a diff's HTML is marked safe, so every piece of a hostile
patch that reaches it (code lines, hunk headers, the note where highlighting stopped, the lane)
comes out escaped, highlighted or not, in both views."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from grading.rollouts import diffs
from grading.rollouts.diffs import HighlightBudget, parse_patch
from grading.templatetags.gagar import diff_table

HOSTILE = (
    "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n"
    "@@ -1,2 +1,2 @@ def f(): <script>alert(1)</script>\n"
    " a = '<img src=x onerror=alert(2)>'\n"
    '-b = "</td></tr></table><script>alert(3)</script>"\n'
    "+b = '&lt;already&gt; \u202e<iframe>'\n"
)


@pytest.fixture(autouse=True)
def uncached():
    """Each case highlights (or not) for itself: a cached hunk would skip the budget."""
    diffs.highlight_cache.clear()
    yield
    diffs.highlight_cache.clear()


def tables(budget: HighlightBudget | None = None) -> list[str]:
    (file,) = parse_patch(HOSTILE, budget=budget).files
    return [
        str(diff_table(SimpleNamespace(file=file, lane=lane, view=view, marks=marks)))
        for lane in ("0", "<b>")
        for view in ("unified", "split")
        for marks in (False, True)
    ]


@pytest.mark.parametrize("budget", [None, HighlightBudget(chars=0)], ids=["highlighted", "past the budget"])
def test_no_markup_from_the_patch_survives_in_either_view(budget):
    for html in tables(budget):
        tags = set(re.findall(r"<\s*/?\s*([a-zA-Z]+)", html))
        assert tags <= {"table", "colgroup", "col", "tr", "td", "span"}, tags
        assert "<b>" not in html and "onerror=alert(2)>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the hunk header, as text
        assert "&amp;lt;already&amp;gt;" in html  # escaped once more, not passed through


def test_the_note_where_highlighting_stopped_is_shown():
    html = tables(HighlightBudget(chars=0))[0]
    assert '<tr class="hunk note"><td colspan="3">Shown without highlighting' in html
    assert "hl-" not in html  # no pygments spans: the lines went through html.escape
