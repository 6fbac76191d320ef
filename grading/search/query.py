"""Search queries over rollouts: parsing and matching. Pure: no Django, no regex on the query.

Three modes. **auto** (the default, the search box): a query that looks like a command
(`looks_like_command`: `sed -i`, `git diff`, `cat setup.py`) is searched literally, any other
by its words; the Query says which (`mode`) and that it was chosen (`auto`). **words**: words
that must all appear (AND), `"quoted phrases"` whose words appear in that order, and prefixes
`foo*`. Text and query are both cut into *tokens*, the runs of letters and digits, compared
case-insensitively: `astropy==` is the token `astropy`; `git-log` or `foo_bar` in a query is
the phrase of its tokens. This is exactly how PostgreSQL's full-text index sees the text
(grading.search.index), so the database and `find` below agree on what matches. **literal**
(`mode=literal`): the exact substring, case-sensitive, punctuation and spaces included
(`pip install astropy==`).

>>> q = parse_query('pip "git log" astro*')
>>> [(t.kind, t.tokens) for t in q.terms]
[('word', ('pip',)), ('phrase', ('git', 'log')), ('prefix', ('astro',))]
>>> matches(q, "ran git log -p; pip freeze | grep astropy")
True
>>> matches(q, "ran git; log; pip")
False
>>> parse_query("git log -p", mode="literal").literal
'git log -p'

Cost: parsing is one pass over at most MAX_QUERY_CHARS characters; matching is str.find
calls, each bounded by the text scanned (callers cap it), a few per occurrence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

MAX_QUERY_CHARS = 1000
MAX_TERMS = 16
MODES = ("auto", "words", "literal")
SEPARATOR = "\x1e"  # what the index puts between two fields (grading.search.text); no query may hold it

# Commands an agent runs whose name alone starts a literal query (`git diff`, `python -c`).
COMMANDS = frozenset(
    """
awk bash cat cd chmod cp curl diff echo find git grep head less ls make mkdir more mv nl node npm npx patch perl
pip pip3 pytest python python3 rm rmdir sed sh sort tail tar tee touch tox uv wc wget which xargs
""".split()
)
# Characters a sentence rarely holds inside a word but a command, path or flag does.
_COMMAND_MARKS = frozenset("./=:|<>$;&\\~_()[]{}`@#%^+,")


class QueryError(ValueError):
    """A query that cannot be searched; the message says why, in the user's terms, and
    `field` which parameter it is about (`q`, or `mode`)."""

    def __init__(self, message: str, field: str = "q"):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Term:
    kind: str  # "word" | "phrase" | "prefix"
    tokens: tuple[str, ...]  # lower-case runs of letters and digits

    @property
    def label(self) -> str:
        if self.kind == "prefix":
            return self.tokens[0] + "*"
        return " ".join(self.tokens) if self.kind == "word" else '"' + " ".join(self.tokens) + '"'


@dataclass(frozen=True)
class Query:
    raw: str
    mode: str
    terms: tuple[Term, ...] = ()
    literal: str = ""
    auto: bool = False  # the mode was chosen from the query (mode "auto")

    @property
    def other_mode(self) -> str:
        """The mode to offer instead of the one used."""
        return "words" if self.mode == "literal" else "literal"


# A run of letters and digits (str.isalnum: \\w without the underscore). One character class
# repeated: linear in the text, which callers bound (MAX_QUERY_CHARS, text.MAX_TEXT_CHARS).
TOKEN = re.compile(r"[^\W_]+")


# ASCII text (nearly all of a rollout) takes a faster path with the same tokens: every
# character that is not a letter or digit becomes a space, then the text is split on spaces.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


def tokens(text: str) -> list[str]:
    """The runs of letters and digits of `text`, lower-cased.

    >>> tokens("pip install astropy==4.3; git_log -p Ünïcode")
    ['pip', 'install', 'astropy', '4', '3', 'git', 'log', 'p', 'ünïcode']
    """
    lowered = text.lower()
    if lowered.isascii():  # 5x faster than the regex on a rollout's 16,000 characters
        return lowered.translate(_ASCII_SEPARATORS).split()
    return TOKEN.findall(lowered)


def looks_like_command(raw: str) -> bool:
    """Whether a search box query reads as a command, path or flag (searched literally) rather
    than words: a known command with an argument, a `-flag`, or punctuation inside a word.
    Quotes and a trailing `*` are the words syntax, so such a query stays words.

    >>> [looks_like_command(q) for q in ("sed -i", "git diff", "cat setup.py", "pip install x==1.2")]
    [True, True, True, True]
    >>> [looks_like_command(q) for q in ("minimal fix", "scratch file left behind", "git", '"git log"', "astro*")]
    [False, False, False, False, False]
    """
    words = raw.split()
    if not words or '"' in raw or any(w.endswith("*") for w in words):
        return False
    if len(words) > 1 and words[0] in COMMANDS:
        return True
    for word in words:
        if word.startswith("-") and len(word) > 1:
            return True
        inner = word.rstrip(".,;:!?)").lstrip("(")
        if any(c in _COMMAND_MARKS for c in inner):
            return True
    return False


def literal_needs_scan(literal: str, vendor: str) -> bool:
    """Whether the index cannot narrow a search for `literal`, which is then served by a
    bounded scan (grading.search.selectors). SQLite's trigram index needs three characters in a
    row that are not LIKE wildcards; PostgreSQL's pg_trgm reads only runs of letters and
    digits, and a run of one (`-c`) gives a trigram nearly every row has.

    >>> [literal_needs_scan(q, "postgresql") for q in ("==", "-c", "rm -rf", "sed -i")]
    [True, True, False, False]
    >>> [literal_needs_scan(q, "sqlite") for q in ("==", "-c", "a%b", "rm -rf")]
    [True, True, True, False]
    """
    if vendor == "postgresql":
        return not any(len(run) >= 2 for run in TOKEN.findall(literal))
    run = 0
    for ch in literal:
        run = 0 if ch in "%_" else run + 1
        if run >= 3:
            return False
    return True


def parse_query(raw: str | None, *, mode: str = "words") -> Query:
    """The query `raw` in `mode` ("auto" chooses literal or words by `looks_like_command`);
    QueryError with a message for empty, over-long or malformed input."""
    if mode not in MODES:
        raise QueryError(f"mode must be one of {', '.join(MODES)}", field="mode")
    if raw is None or not raw.strip():
        raise QueryError('the query is empty: type a word, a "phrase", a prefix* or (literal mode) a command')
    if len(raw) > MAX_QUERY_CHARS:
        raise QueryError(f"the query is longer than {MAX_QUERY_CHARS:,} characters ({len(raw):,})")
    if "\x00" in raw or SEPARATOR in raw:
        raise QueryError("the query contains a control character (NUL or record separator) no rollout text is searched by")
    auto = mode == "auto"
    if auto:
        mode = "literal" if looks_like_command(raw.strip()) else "words"
    if mode == "literal":
        literal = raw.strip() if auto else raw  # the box's stray spaces are not part of a command
        return Query(raw=raw, mode=mode, literal=literal, auto=auto)
    terms: list[Term] = []
    i, n = 0, len(raw)
    while i < n:
        ch = raw[i]
        if ch.isspace():
            i += 1
            continue
        if ch == '"':
            end = raw.find('"', i + 1)
            if end < 0:
                raise QueryError('unclosed quote: a phrase is "between two double quotes"')
            words = tokens(raw[i + 1 : end])
            if not words:
                raise QueryError(f"the phrase {raw[i : end + 1][:60]!r} has no letters or digits to search for")
            terms.append(Term("phrase" if len(words) > 1 else "word", tuple(words)))
            i = end + 1
            continue
        end = i
        while end < n and not raw[end].isspace() and raw[end] != '"':
            end += 1
        chunk = raw[i:end]
        i = end
        if chunk.endswith("*"):
            stem = chunk[:-1]
            if not stem or not all(c.isalnum() for c in stem):
                raise QueryError(f"{chunk[:60]!r}: a prefix is letters or digits followed by one * (like astro*)")
            terms.append(Term("prefix", (stem.lower(),)))
            continue
        words = tokens(chunk)
        if not words:
            raise QueryError(f"{chunk[:60]!r} has no letters or digits to search for; use the literal mode for punctuation")
        terms.append(Term("phrase" if len(words) > 1 else "word", tuple(words)))
    if len(terms) > MAX_TERMS:
        raise QueryError(f"the query has {len(terms)} terms; at most {MAX_TERMS}")
    return Query(raw=raw, mode=mode, terms=tuple(dict.fromkeys(terms)), auto=auto)


# --- matching (the same rules as the index, for SQLite and for the hits of a page) ---------


def _lower(text: str) -> str:
    """`text` lower-cased, position for position: lower() lengthens a few letters (e.g. 'İ'),
    which then stay as they are, so offsets still point into the original."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


@lru_cache(maxsize=256)
def _term_pattern(term: Term) -> re.Pattern[str]:
    """The regular expression of a term over lower-cased text: its tokens, the first starting a
    run of letters and digits, the last ending one (a prefix: then the rest of its run), with
    anything but letters and digits between them. Tokens are letters and digits only and no
    quantifier nests, so a search is linear in the text, whatever it holds (a 2 MB run of `a`
    included): no position is tried twice in Python."""
    first = re.escape(term.tokens[0])
    # the lookbehind after the first token, not before it: a pattern that starts with literal
    # text is searched for that text first (the engine's fast scan), not tried at every position
    rest = "".join("[\\W_]+" + re.escape(token) for token in term.tokens[1:])
    tail = "[^\\W_]*" if term.kind == "prefix" else "(?![^\\W_])"
    return re.compile(first + f"(?<![^\\W_]{first})" + rest + tail)


def find_term(term: Term, low: str, start: int = 0) -> tuple[int, int]:
    """(start, end) of the first occurrence of `term` in the lower-cased text `low`; (-1, -1) if none."""
    match = _term_pattern(term).search(low, start)
    return match.span() if match else (-1, -1)


def scan_cost(query: Query) -> int:
    """Work units `find` may spend per character of a text, at most: 1 for a literal
    (str.find); for words, per term, what its pattern can cost at one position of a text that
    repeats its first token (`aaaa…` for `aa`): that token forward and back, and the rest
    compared. Budgets count characters times this, so a query of 16 long words reads less of
    a rollout than one word does, and no page costs more for its terms."""
    if query.mode == "literal":
        return 1
    return sum(2 * len(term.tokens[0]) + 1 + sum(len(t) for t in term.tokens[1:]) for term in query.terms)


def find(query: Query, text: str, start: int = 0) -> tuple[int, int]:
    """(start, end) of the first place in `text` where any part of `query` occurs; (-1, -1) if none."""
    if query.mode == "literal":
        pos = text.find(query.literal, start)
        return (pos, pos + len(query.literal)) if pos >= 0 else (-1, -1)
    low = _lower(text)
    best = (-1, -1)
    for term in query.terms:
        hit = find_term(term, low, start)
        if hit[0] >= 0 and (best[0] < 0 or hit[0] < best[0]):
            best = hit
    return best


def matches(query: Query, text: str) -> bool:
    """Whether `text` holds the whole query: every term (words mode) or the substring (literal)."""
    if query.mode == "literal":
        return query.literal in text
    low = _lower(text)
    return all(find_term(term, low)[0] >= 0 for term in query.terms)


def satisfied_terms(query: Query, text: str) -> set[Term]:
    """The terms of a words query that `text` holds (a rollout matches when its parts hold them all)."""
    low = _lower(text)
    return {term for term in query.terms if find_term(term, low)[0] >= 0}
