"""The search query parser and matcher (grading.search.query, grading.search.text): pure, no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading.search.query import MAX_QUERY_CHARS, QueryError, find, literal_tsquery, matches, parse_query, tokens
from grading.search.text import MAX_TEXT_CHARS, find_hits, patch_parts, search_text, vector_literal


def kinds(raw: str):
    return [(t.kind, t.tokens) for t in parse_query(raw).terms]


def test_words_phrases_and_prefixes():
    assert kinds('pip "git log" astro*') == [("word", ("pip",)), ("phrase", ("git", "log")), ("prefix", ("astro",))]
    # punctuation is not a token: astropy== is the word astropy; git-log and foo_bar are phrases
    assert kinds("astropy== git-log foo_bar") == [("word", ("astropy",)), ("phrase", ("git", "log")), ("phrase", ("foo", "bar"))]
    assert kinds('"PIP"') == [("word", ("pip",))]
    assert kinds("a a") == [("word", ("a",))]  # the same term once


@pytest.mark.parametrize("raw, message", [
    ("", "empty"), ("   ", "empty"), (None, "empty"),
    ("x" * (MAX_QUERY_CHARS + 1), "longer than 1,000"),
    ('"git log', "unclosed quote"),
    ("==", "no letters or digits"), ('""', "no letters or digits"),
    ("*", "a prefix is"), ("foo-b*", "a prefix is"),
    ("a\x00b", "NUL"),
    (" ".join(f"w{i}" for i in range(17)), "at most 16"),
])
def test_bad_queries_say_why(raw, message):
    with pytest.raises(QueryError, match=message):
        parse_query(raw)


def test_literal_mode_is_the_exact_substring_case_sensitive():
    q = parse_query("pip install astropy==", mode="literal")
    assert matches(q, "$ pip install astropy==4.2")
    assert not matches(q, "$ PIP install astropy==4.2")
    assert not matches(q, "pip install astropy")
    with pytest.raises(QueryError, match="at least 3"):
        parse_query("ab", mode="literal")
    with pytest.raises(QueryError, match="mode must be"):
        parse_query("git", mode="regex")


def test_matching_words_phrases_prefixes():
    q = parse_query('"git log" -p')
    assert matches(q, "ran `git log -p` here")
    assert matches(q, "GIT   LOG\n-P")  # any case, any separators between a phrase's words
    assert not matches(q, "log git -p")  # order matters in a phrase
    assert not matches(q, "git login -p")  # whole tokens
    assert matches(parse_query("astro*"), "import astropy")
    assert not matches(parse_query("astro*"), "gastronomy")  # a prefix starts a token
    assert not matches(parse_query("py"), "numpy")


def test_a_letter_that_lower_cases_longer_does_not_hide_the_rest():
    # 'İ'.lower() is two characters; the rest of the text is still matched case-insensitively
    assert matches(parse_query('"A"'), " A İ") and find(parse_query("b"), "İ B") == (2, 3)


def test_find_returns_the_first_place_any_term_occurs():
    q = parse_query('setup "git log"')
    text = "first git log then setup"
    start, end = find(q, text)
    assert text[start:end] == "git log"


@given(st.text(max_size=200))
def test_parser_never_fails_otherwise(raw):
    try:
        q = parse_query(raw)
    except QueryError:
        return
    assert q.terms and all(t.tokens and all(tok.isalnum() for tok in t.tokens) for t in q.terms)


@given(st.lists(st.text(alphabet=st.characters(categories=("L", "Nd")), min_size=1, max_size=8), min_size=1, max_size=4),
       st.text(max_size=30), st.text(max_size=30))
def test_a_phrase_of_the_texts_own_tokens_is_found(words, before, after):
    words = [w for w in words if len(w.lower()) == len(w) and tokens(w) == [w.lower()]]
    if not words:
        return
    text = before + " " + " ".join(words) + " " + after
    assert matches(parse_query('"' + " ".join(words) + '"'), text)


def test_patch_parts_carry_path_and_new_line():
    patch = "diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -3,3 +10,4 @@\n ctx\n-old\n+new one\n+new two\n"
    parts = [(p.text, p.path, p.line) for p in patch_parts(patch)]
    assert parts == [("w.py", "w.py", None), ("old", "w.py", 11), ("new one", "w.py", 11), ("new two", "w.py", 12)]


def test_hits_say_where_and_snippet_is_plain_text():
    messages = [{"role": "user", "content": "Fix it"},
                {"role": "assistant", "content": "THOUGHT\n```bash\ngit log -p <script>\n```", "observation": "commit abc"}]
    patch = "--- a/w.py\n+++ b/w.py\n@@ -1 +1 @@\n-x = 1\n+x = 2  # git\n"
    hits = find_hits(parse_query("git"), messages, patch, {"FAIL_TO_PASS": {"success": ["tests/test_git.py::t"]}})
    assert [(h.where, h.turn, h.path, h.line) for h in hits] == [("patch", None, "w.py", 1), ("test", None, "", None),
                                                                ("turn", 1, "", None), ("turn", 1, "", None)]
    assert hits[2].match == "git" and "<script>" in hits[2].snippet  # escaping is the page's job


def test_search_text_is_bounded():
    messages = [{"role": "tool", "content": "x" * 50_000} for _ in range(100)]
    text = search_text(messages, "", {})
    assert len(text) <= MAX_TEXT_CHARS


def test_literal_prefilter_uses_only_words_the_literal_cannot_start_or_end_inside():
    assert literal_tsquery("git log -p") == "'log'"
    assert literal_tsquery("$ git log -p --stat") == "'git' & 'log' & 'p'"
    assert literal_tsquery(" install") == "'install':*"  # no whole word: a prefix of 3 or more
    assert literal_tsquery(" -p") is None and literal_tsquery("astropy==") is None and literal_tsquery("==") is None


@given(st.text(max_size=300))
def test_vector_holds_every_token_of_the_text_with_its_position(text):
    vector = vector_literal(text)
    words = tokens(text)
    entries = dict(entry.rsplit(":", 1) for entry in vector.split(" ")) if vector else {}
    assert set(entries) == {f"'{w}'" for w in words if len(w) <= 200}
    for n, word in enumerate(words, start=1):
        if len(word) <= 200 and n <= 256:
            assert str(n) in entries[f"'{word}'"].split(",")


@given(st.one_of(st.text(max_size=300), st.text(st.characters(max_codepoint=127), max_size=300)))
def test_ascii_fast_path_cuts_the_same_tokens_as_the_pattern(text):
    from grading.search.query import TOKEN

    assert tokens(text) == TOKEN.findall(text.lower())


def test_doctests():
    import doctest

    from grading.search import query, text

    for module in (query, text):
        assert doctest.testmod(module).failed == 0
