"""What a rollout is searched by, and where a query hits in it. Pure: no Django.

A rollout is searched by its **fields** (`fields`): every patch path and changed line, every
test id, and every turn's message content, thought, action (the command), tool-call
arguments and observation — all of them, whole, with no cap but ingest's own limits. A
literal search matches a rollout exactly when one of its fields holds the substring.

The index stores a rollout's fields as **chunks** (`chunks`): runs of fields joined by
SEPARATOR, each at most CHUNK_CHARS characters. A field longer than that is cut into
segments that overlap by CHUNK_OVERLAP characters, one less than the longest query, so
every substring of a field that a query can ask for lies whole inside one chunk; and as no
query may hold SEPARATOR, none matches across two fields. `lexemes` is the rollout's set of
tokens (a tsvector without positions) for words and prefixes.

`find_hits` reads the same fields of a stored rollout and says where a query occurs: in
turn N and which field of it (the message's position, the numbering the group page's
`#turn-<rollout>-<N>` anchors and the grader's evidence use), on a patch line (path and
new-side line number, as the patch rows' anchors), or in a test id. Its cost is bounded by
`budget`, in work units: characters read times the query's `scan_cost` (1 for a literal,
more for each word, by its length), about 3 ns each on this project's machine at worst; it
says when it stopped short.

>>> got = chunks(fields([{"role": "assistant", "content": "run it", "action": "git log -p"}],
...                      "--- a/w.py\\n+++ b/w.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", {"FAIL_TO_PASS": ["t::a"]}))
>>> got == ["w.py\\x1ex = 1\\x1ex = 2\\x1et::a\\x1erun it\\x1egit log -p"]
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from grading.rollouts.turns import to_turn
from grading.search.query import MAX_QUERY_CHARS, Query, find, scan_cost, tokens

SEPARATOR = "\x1e"  # between two fields of a chunk; no query may hold it (query.parse_query)
CHUNK_CHARS = 8_000  # per chunk row: small enough that checking one candidate row is cheap
CHUNK_OVERLAP = MAX_QUERY_CHARS - 1  # a field's segments share this much: any query-sized substring is whole in one
MAX_LEXEME_CHARS = 200  # longer runs (hashes, base64) are not words anyone types; PostgreSQL's limit is 2 kB
MAX_LEXEMES_BYTES = 900_000  # a tsvector holds at most 1 MB; past this a rollout's rarest-last words are left out
SCAN_BUDGET = 64_000_000  # work units (characters x scan_cost) one request may spend listing a rollout's hits
SNIPPET_CONTEXT = 60  # characters either side of a match

FIELD_LABELS = {
    "content": "message",
    "thought": "thought",
    "action": "command",
    "tool_call": "tool call",
    "observation": "output",
    "patch": "patch",
    "path": "patch file",
    "test": "test id",
}


@dataclass(frozen=True)
class Part:
    """One searchable field of a rollout: a turn's field, a patch path or line, or a test id."""

    where: str  # "turn" | "patch" | "test"
    field: str  # a key of FIELD_LABELS
    text: str
    turn: int | None = None
    path: str = ""
    line: int | None = None


@dataclass(frozen=True)
class Hit:
    where: str
    field: str
    turn: int | None
    path: str
    line: int | None
    before: str  # the snippet is before + match + after, all plain text
    match: str
    after: str
    occurrences: int = 1  # how often the query occurs in this field (literal mode; 1 in words mode)

    @property
    def snippet(self) -> str:
        return self.before + self.match + self.after

    @property
    def label(self) -> str:
        return FIELD_LABELS.get(self.field, self.field)


@dataclass(frozen=True)
class Hits:
    """A page of one rollout's hits: `total` hits in the fields read; `complete` is False when
    the scan budget ran out first (there may be more past `total`); `more` is True when the
    scan stopped at the last hit asked for (`find_hits(count=False)`) with fields left unread."""

    hits: list[Hit]
    total: int
    complete: bool
    more: bool = False


def test_names(tests: object) -> list[str]:
    """Test names from a rollout's `tests`: SWE-bench's {"FAIL_TO_PASS": {"success": [...], "failure": [...]}},
    plain lists, or {name: outcome}."""
    names: list[str] = []
    if isinstance(tests, dict):
        for key, value in tests.items():
            if isinstance(value, dict):
                for outcome in value.values():
                    if isinstance(outcome, list):
                        names.extend(str(t) for t in outcome)
            elif isinstance(value, list):
                names.extend(str(t) for t in value)
            else:
                names.append(str(key))
    elif isinstance(tests, list):
        names.extend(str(t) for t in tests)
    return names


def patch_parts(patch: str) -> Iterator[Part]:
    """A unified diff's file paths and changed lines, each with its path and new-side line
    number (a removed line takes the number of the new line it sits before)."""
    path, new_no = "", 0
    for raw in (patch or "").splitlines():
        if raw.startswith("+++ "):
            name = raw[4:].split("\t", 1)[0].strip()
            path = name[2:] if name.startswith("b/") else name
            if path != "/dev/null":
                yield Part("patch", "path", path, path=path)
            continue
        if raw.startswith(("--- ", "diff --git ", "index ")):
            continue
        if raw.startswith("@@"):
            plus = raw.find("+")
            digits = ""
            for ch in raw[plus + 1 :] if plus >= 0 else "":
                if not ch.isdigit():
                    break
                digits += ch
            new_no = int(digits) if digits and len(digits) < 10 else 0
            continue
        if raw.startswith("+"):
            yield Part("patch", "patch", raw[1:], path=path, line=new_no or None)
            new_no += 1
        elif raw.startswith("-"):
            yield Part("patch", "patch", raw[1:], path=path, line=new_no or None)
        elif raw.startswith(" "):
            new_no += 1


def turn_parts(messages: Sequence[Any]) -> Iterator[Part]:
    """Every turn's fields in turn order: content, thought, action, tool-call arguments, observation."""
    for position, message in enumerate(messages if isinstance(messages, list) else []):
        if not isinstance(message, dict):
            continue
        turn = to_turn(position, message)
        for name, text in (
            ("content", turn.text),
            ("thought", turn.thought),
            ("action", turn.action),
            *(("tool_call", c["arguments"]) for c in turn.tool_calls),
            ("observation", turn.observation),
        ):
            if text:
                yield Part("turn", name, text, turn=position)


def parts(messages: Sequence[Any], patch: str, tests: object) -> Iterator[Part]:
    """Every searchable field: the patch first, then the test ids, then the turns in order."""
    yield from patch_parts(patch)
    for name in test_names(tests):
        yield Part("test", "test", name)
    yield from turn_parts(messages)


def fields(messages: Sequence[Any], patch: str, tests: object) -> Iterator[str]:
    """The texts of `parts`, in the same order (what the index stores)."""
    for part in parts(messages, patch, tests):
        yield part.text


def segments(text: str) -> Iterator[str]:
    """`text` cut into pieces of at most CHUNK_CHARS that overlap by CHUNK_OVERLAP, so any
    substring of at most CHUNK_OVERLAP + 1 characters is whole in one of them.

    >>> [len(s) for s in segments("x" * 20_000)]
    [8000, 8000, 5998]
    """
    if len(text) <= CHUNK_CHARS:
        yield text
        return
    step = CHUNK_CHARS - CHUNK_OVERLAP
    start = 0
    while True:
        yield text[start : start + CHUNK_CHARS]
        if start + CHUNK_CHARS >= len(text):
            return
        start += step


def chunks(texts: Iterable[str]) -> list[str]:
    """The fields `texts` packed into chunks of at most CHUNK_CHARS characters (one chunk may
    hold many short fields; a long field spans several), fields joined by SEPARATOR. A field's
    own SEPARATOR characters become spaces (no query can hold one, so none is lost)."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for text in texts:
        if SEPARATOR in text:
            text = text.replace(SEPARATOR, " ")
        for piece in segments(text):
            if current and size + 1 + len(piece) > CHUNK_CHARS:
                out.append(SEPARATOR.join(current))
                current, size = [], 0
            size += len(piece) + (1 if current else 0)
            current.append(piece)
    if current:
        out.append(SEPARATOR.join(current))
    return out


def lexemes(texts: Iterable[str]) -> str:
    """Every token of `texts` once (query.tokens: lower-case runs of letters and digits), in
    PostgreSQL's tsvector input form without positions: `'git' 'log' 'p'`. Tokens are letters
    and digits only, so nothing in them needs quoting. A token longer than MAX_LEXEME_CHARS is
    left out, and past MAX_LEXEMES_BYTES the rest are (a tsvector holds at most 1 MB).

    >>> lexemes(["git log -p", "GIT"])
    "'git' 'log' 'p'"
    """
    seen: dict[str, None] = {}
    for text in texts:
        seen.update(dict.fromkeys(tokens(text)))
    out, size = [], 0
    for token in seen:
        if len(token) > MAX_LEXEME_CHARS:
            continue
        size += len(token.encode()) + 8  # the entry's bytes in the tsvector, about
        if size > MAX_LEXEMES_BYTES:
            break
        out.append(f"'{token}'")
    return " ".join(out)


def _snippet(text: str, start: int, end: int) -> tuple[str, str, str]:
    left = max(0, start - SNIPPET_CONTEXT)
    right = min(len(text), end + SNIPPET_CONTEXT)
    before = ("…" if left else "") + text[left:start]
    after = text[end:right] + ("…" if right < len(text) else "")
    return before.replace("\n", " ⏎ "), text[start:end], after.replace("\n", " ⏎ ")


def _occurrences(query: Query, text: str) -> int:
    return text.count(query.literal) if query.mode == "literal" else 1


def find_hits(
    query: Query,
    messages: Sequence[Any],
    patch: str,
    tests: object,
    *,
    offset: int = 0,
    limit: int = 5,
    budget: int = SCAN_BUDGET,
    count: bool = True,
) -> Hits:
    """Where `query` occurs in the rollout: one hit per field that holds it, in part order;
    the hits `offset` to `offset + limit`, and how many there are in all. At most `budget`
    work units are spent (characters times query.scan_cost): past it `complete` is False.
    `count=False` stops at the last hit asked for (a results page): `more` then says whether
    anything was left unread, and `total` counts the hits up to there."""
    hits: list[Hit] = []
    total = 0
    spent = 0
    cost = scan_cost(query)
    for part in parts(messages, patch, tests):
        if not count and total >= offset + limit:
            return Hits(hits, total, complete=True, more=True)
        if spent + cost > budget:
            return Hits(hits, total, complete=False)
        text = part.text[: (budget - spent) // cost]
        spent += len(text) * cost
        start, end = find(query, text)
        if start >= 0:
            if offset <= total < offset + limit:
                before, match, after = _snippet(text, start, end)
                hits.append(
                    Hit(
                        part.where,
                        part.field,
                        part.turn,
                        part.path,
                        part.line,
                        before,
                        match,
                        after,
                        occurrences=_occurrences(query, text),
                    )
                )
            total += 1
        if len(text) < len(part.text):  # the budget ran out inside this field
            return Hits(hits, total, complete=False)
    return Hits(hits, total, complete=True)
