"""What a rollout is searched by, and where a query hits in it. Pure: no Django.

`search_text` is the bounded text the index holds for one rollout, most telling first:
the patch (file paths and changed lines), the test names, every turn's action or command
and tool calls, then the turns' contents, then their observations — each part cut to
MAX_PART_CHARS, MAX_TEXT_CHARS in all (what the index costs ingest grows with it:
benchmarks/search.py). `vector_literal` is that text's tokens with their positions, as
PostgreSQL's tsvector reads them. `find_hits` reads the same parts of the stored rollout and
says where a query occurs: in turn N (the message's position, the numbering the group
page's `#turn-<rollout>-<N>` anchors and the grader's evidence use), on a patch line
(path and new-side line number, as the patch rows' anchors), or in a test name. Its
cost is bounded: at most MAX_SCAN_CHARS of a rollout are scanned, with str.find.

>>> text = search_text([{"role": "assistant", "content": "run it", "action": "git log -p"}],
...                    "--- a/w.py\\n+++ b/w.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n", {"FAIL_TO_PASS": ["t::a"]})
>>> "w.py" in text and "git log -p" in text and "t::a" in text
True
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from grading.rollouts.turns import to_turn
from grading.search.query import Query, find, tokens

MAX_TEXT_CHARS = 16_000  # per rollout in the index
MAX_PART_CHARS = 2_000  # per part (a patch line, a command, a message's content, an observation) in the index
MAX_LEXEME_CHARS = 200  # longer runs (hashes, base64) are not words anyone types; PostgreSQL's limit is 2 kB
MAX_SCAN_CHARS = 2_000_000  # per rollout when looking for hits
MAX_HITS = 5  # per rollout, shown
SNIPPET_CONTEXT = 60  # characters either side of a match


@dataclass(frozen=True)
class Part:
    """One searchable piece of a rollout: a turn's field, a patch line or a test name."""

    where: str  # "turn" | "patch" | "test"
    text: str
    turn: int | None = None
    path: str = ""
    line: int | None = None


@dataclass(frozen=True)
class Hit:
    where: str
    turn: int | None
    path: str
    line: int | None
    before: str  # the snippet is before + match + after, all plain text
    match: str
    after: str

    @property
    def snippet(self) -> str:
        return self.before + self.match + self.after


def test_names(tests) -> list[str]:
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
                yield Part("patch", path, path=path)
            continue
        if raw.startswith(("--- ", "diff --git ", "index ")):
            continue
        if raw.startswith("@@"):
            plus = raw.find("+")
            digits = ""
            for ch in raw[plus + 1:] if plus >= 0 else "":
                if not ch.isdigit():
                    break
                digits += ch
            new_no = int(digits) if digits and len(digits) < 10 else 0
            continue
        if raw.startswith("+"):
            yield Part("patch", raw[1:], path=path, line=new_no or None)
            new_no += 1
        elif raw.startswith("-"):
            yield Part("patch", raw[1:], path=path, line=new_no or None)
        elif raw.startswith(" "):
            new_no += 1


def _turns(messages):
    for position, message in enumerate(messages if isinstance(messages, list) else []):
        if isinstance(message, dict):
            yield to_turn(position, message)


def turn_parts(messages) -> Iterator[Part]:
    """Every turn's fields in turn order (where a hit is shown)."""
    for turn in _turns(messages):
        for text in (turn.action, turn.text, *(c["arguments"] for c in turn.tool_calls), turn.observation):
            if text:
                yield Part("turn", text, turn=turn.position)


def parts(messages, patch: str, tests) -> Iterator[Part]:
    """Every searchable part, patch first, then tests, then turns in order."""
    yield from patch_parts(patch)
    for name in test_names(tests):
        yield Part("test", name)
    yield from turn_parts(messages)


def _indexed_texts(messages, patch: str, tests) -> Iterator[str]:
    for part in patch_parts(patch):
        yield part.text
    yield from test_names(tests)
    turns = list(_turns(messages))
    for turn in turns:
        if turn.action:
            yield turn.action
        for call in turn.tool_calls:
            yield call["arguments"]
    for turn in turns:
        if turn.text:
            yield turn.text
    for turn in turns:
        if turn.observation:
            yield turn.observation


def search_text(messages, patch: str, tests) -> str:
    """The rollout's text for the index: its parts, most telling first, each cut to
    MAX_PART_CHARS, joined by newlines, up to MAX_TEXT_CHARS."""
    out: list[str] = []
    size = 0
    for whole in _indexed_texts(messages, patch, tests):
        text = whole[:MAX_PART_CHARS]
        if size + len(text) + 1 > MAX_TEXT_CHARS:
            text = text[: max(0, MAX_TEXT_CHARS - size - 1)]
            if text:
                out.append(text)
            break
        out.append(text)
        size += len(text) + 1
    return "\n".join(out)


def vector_literal(text: str) -> str:
    """`text`'s tokens (query.tokens: lower-case runs of letters and digits) with their
    positions, in PostgreSQL's tsvector input form: `'git':1,5 'log':2`. Tokens are letters
    and digits only, so nothing in them needs quoting.

    >>> vector_literal("git log -p; GIT")
    "'git':1,4 'log':2 'p':3"
    """
    positions: dict[str, list[str]] = {}
    # search_text holds at most MAX_TEXT_CHARS / 2 tokens (under PostgreSQL's MAX_POSITION); a longer text
    # passed here keeps its first that many.
    for n, token in zip(_POSITIONS, tokens(text)):
        seen = positions.get(token)
        if seen is None:
            positions[token] = [n]
        else:
            seen.append(n)
    # PostgreSQL keeps 256 positions a lexeme.
    return " ".join([f"'{token}':{','.join(p[:256])}" for token, p in positions.items() if len(token) <= MAX_LEXEME_CHARS])


# Position numbers as text, made once: a rollout's vector writes thousands of them.
_POSITIONS = [str(n) for n in range(1, MAX_TEXT_CHARS // 2 + 2)]


def _snippet(text: str, start: int, end: int) -> tuple[str, str, str]:
    left = max(0, start - SNIPPET_CONTEXT)
    right = min(len(text), end + SNIPPET_CONTEXT)
    before = ("…" if left else "") + text[left:start]
    after = text[end:right] + ("…" if right < len(text) else "")
    return before.replace("\n", " ⏎ "), text[start:end], after.replace("\n", " ⏎ ")


def find_hits(query: Query, messages, patch: str, tests, *, limit: int = MAX_HITS) -> list[Hit]:
    """Where `query` occurs in the rollout: up to `limit` hits, one per part, in part order,
    scanning at most MAX_SCAN_CHARS. In words mode a part hits when any term is in it."""
    hits: list[Hit] = []
    scanned = 0
    for part in parts(messages, patch, tests):
        text = part.text[: max(0, MAX_SCAN_CHARS - scanned)]
        scanned += len(text)
        start, end = find(query, text)
        if start >= 0:
            before, match, after = _snippet(text, start, end)
            hits.append(Hit(part.where, part.turn, part.path, part.line, before, match, after))
            if len(hits) >= limit:
                break
        if scanned >= MAX_SCAN_CHARS:
            break
    return hits

