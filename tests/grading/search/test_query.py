"""The search query parser and matcher (grading.search.query, grading.search.text): pure, no database."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grading.search.query import MAX_QUERY_CHARS, QueryError, find, matches, parse_query, tokens
from grading.search.text import CHUNK_CHARS, SEPARATOR, chunks, fields, find_hits, lexemes, patch_parts


def kinds(raw: str):
    return [(t.kind, t.tokens) for t in parse_query(raw).terms]


def test_words_phrases_and_prefixes():
    assert kinds('pip "git log" astro*') == [("word", ("pip",)), ("phrase", ("git", "log")), ("prefix", ("astro",))]
    # punctuation is not a token: astropy== is the word astropy; git-log and foo_bar are phrases
    assert kinds("astropy== git-log foo_bar") == [("word", ("astropy",)), ("phrase", ("git", "log")), ("phrase", ("foo", "bar"))]
    assert kinds('"PIP"') == [("word", ("pip",))]
    assert kinds("a a") == [("word", ("a",))]  # the same term once


@pytest.mark.parametrize(
    "raw, message",
    [
        ("", "empty"),
        ("   ", "empty"),
        (None, "empty"),
        ("x" * (MAX_QUERY_CHARS + 1), "longer than 1,000"),
        ('"git log', "unclosed quote"),
        ("==", "no letters or digits"),
        ('""', "no letters or digits"),
        ("*", "a prefix is"),
        ("foo-b*", "a prefix is"),
        ("a\x00b", "NUL"),
        ("a\x1eb", "record separator"),
        (" ".join(f"w{i}" for i in range(17)), "at most 16"),
    ],
)
def test_bad_queries_say_why(raw, message):
    with pytest.raises(QueryError, match=message):
        parse_query(raw)


def test_literal_mode_is_the_exact_substring_case_sensitive():
    q = parse_query("pip install astropy==", mode="literal")
    assert matches(q, "$ pip install astropy==4.2")
    assert not matches(q, "$ PIP install astropy==4.2")
    assert not matches(q, "pip install astropy")
    assert parse_query("==", mode="literal").literal == "=="  # short literals are searched too (by a bounded scan)
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


@given(
    st.lists(st.text(alphabet=st.characters(categories=("L", "Nd")), min_size=1, max_size=8), min_size=1, max_size=4),
    st.text(max_size=30),
    st.text(max_size=30),
)
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
    messages = [
        {"role": "user", "content": "Fix it"},
        {"role": "assistant", "content": "THOUGHT\n```bash\ngit log -p <script>\n```", "observation": "commit abc"},
    ]
    patch = "--- a/w.py\n+++ b/w.py\n@@ -1 +1 @@\n-x = 1\n+x = 2  # git\n"
    found = find_hits(parse_query("git"), messages, patch, {"FAIL_TO_PASS": {"success": ["tests/test_git.py::t"]}})
    hits = found.hits
    assert [(h.where, h.field, h.turn, h.path, h.line) for h in hits] == [
        ("patch", "patch", None, "w.py", 1),
        ("test", "test", None, "", None),
        ("turn", "content", 1, "", None),
        ("turn", "action", 1, "", None),
    ]
    assert found.total == 4 and found.complete
    assert hits[2].match == "git" and "<script>" in hits[2].snippet  # escaping is the page's job


def test_every_hit_of_a_long_rollout_is_counted_and_paged():
    messages = [{"role": "assistant", "content": "x" * 30_000 + f" git diff {i}"} for i in range(40)]
    query = parse_query("git diff", mode="literal")
    found = find_hits(query, messages, "", {}, offset=30, limit=5)
    assert found.total == 40 and found.complete and [h.turn for h in found.hits] == [30, 31, 32, 33, 34]
    cut = find_hits(query, messages, "", {}, budget=100_000)
    assert not cut.complete and cut.total == 3  # the budget says it stopped short


@pytest.mark.parametrize(
    "raw",
    [
        "sed -i",
        "git log -p",
        "git diff",
        "python -c",
        "find . -name",
        "rm -rf",
        "pip install x==1.2",
        "pytest tests/test_x.py::test_y",
        "cat setup.py",
    ],
)
def test_the_default_box_searches_a_command_as_that_command(raw):
    query = parse_query(raw, mode="auto")
    assert query.mode == "literal" and query.auto and query.literal == raw


@pytest.mark.parametrize("raw", ["scratch file left behind", "minimal fix", '"git log"', "astro*", "git"])
def test_the_default_box_searches_prose_by_words(raw):
    assert parse_query(raw, mode="auto").mode == "words"


def test_nothing_of_a_long_rollout_is_left_out_of_its_chunks():
    messages = [{"role": "tool", "content": f"turn {i} " + "x" * 50_000 + f" end {i}"} for i in range(30)]
    got = chunks(fields(messages, "", {}))
    assert all(len(c) <= CHUNK_CHARS for c in got)
    assert all(f"end {i}" in "".join(got) for i in range(30))  # 1.5 MB, all of it


@given(
    st.lists(st.text(st.characters(blacklist_characters=SEPARATOR), max_size=20_000), max_size=6),
    st.integers(0, 10**6),
    st.integers(1, MAX_QUERY_CHARS),
)
def test_every_query_sized_substring_of_a_field_lies_whole_in_one_chunk(texts, seed, length):
    got = chunks(texts)
    assert all(len(c) <= CHUNK_CHARS for c in got)
    for text in texts:
        if len(text) >= length:
            start = seed % (len(text) - length + 1)
            needle = text[start : start + length]
            assert any(needle in piece for c in got for piece in c.split(SEPARATOR))


@given(st.lists(st.text(max_size=300), max_size=5))
def test_lexemes_hold_every_token_once(texts):
    vector = lexemes(texts)
    words = {w for t in texts for w in tokens(t) if len(w) <= 200}
    assert (set(vector.split(" ")) if vector else set()) == {f"'{w}'" for w in words}


@given(st.one_of(st.text(max_size=300), st.text(st.characters(max_codepoint=127), max_size=300)))
def test_ascii_fast_path_cuts_the_same_tokens_as_the_pattern(text):
    from grading.search.query import TOKEN

    assert tokens(text) == TOKEN.findall(text.lower())


def test_doctests():
    import doctest

    from grading.search import query, text

    for module in (query, text):
        assert doctest.testmod(module).failed == 0
