"""Search across a project's rollouts: which rollouts match, a page of them, and their hits.

The project is the first filter of every search and cannot be left out (a `SearchScope`
needs one), so no query reaches another project's rollouts. Every field of a rollout is
searched, whole (grading.search.text). Matching is done by the database (grading.search.index
has the indexes): a **literal** by its chunks, case-sensitively and exactly, through pg_trgm
on PostgreSQL and the FTS5 trigram table on SQLite; **words** and prefixes by the rollout's
tsvector on PostgreSQL, phrases then by their chunks; on SQLite words are narrowed by the
trigram table and checked in Python (grading.search.query, the same rules), at most
SQLITE_SCAN_ROWS candidates a search. A literal the index cannot narrow (`==`, `-c`:
query.literal_needs_scan) is served by a **scan**: SCAN_ROLLOUTS rollouts a page, and the
page says how far it got. A literal or a phrase is first **probed**: the next PROBE_ROLLOUTS
rollouts of the scope are read one by one, each until its first chunk holding it (strpos, a
regex for a phrase); when they hold more than a page, that is the page and the count is
estimated from their share (`count_estimated`) — a common string (`git diff`) costs a page's
worth of reading, not a recheck of every chunk the trigram index names. Otherwise the index
answers, exactly. Hits are found in Python over the page's rollouts only, up to MAX_HITS
each, within PAGE_SCAN_BUDGET work units a page (grading.search.text.find_hits: characters
read times the query's cost per character); opening a rollout counts all of its hits (rollout_hits).

Grader fields: `tier` (the latest valid verdict's tier) and `cheat` (a cheat signal, which
can be a grader's flag) are filters only for people whose role sees grader verdicts; the
caller says so (`sees_grader`), and passes the groups whose grader fields this person may
still not see (their open blind assignments), which such a search then leaves out.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import orjson
from django.db import OperationalError, connection, transaction
from django.db.models import (
    BigIntegerField,
    BooleanField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, StrIndex
from django.utils.html import format_html
from psycopg.errors import QueryCanceled

from grading.method.tiers import TIERS
from grading.models import (
    CheatDecision,
    Project,
    Rollout,
    RolloutContent,
    RolloutGrade,
    RolloutSearch,
    Run,
    SearchBacklog,
    SearchChunk,
    Verdict,
)
from grading.search.index import FTS_TABLE, has_index
from grading.search.query import SEPARATOR, Query, Term, literal_needs_scan, satisfied_terms, scan_cost
from grading.search.text import Hit, Hits, find_hits
from grading.templatetags.gagar import patch_anchor

PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
# An exact count up to this many matching rollouts; past it, `count` is this and `count_capped`
# is true. Counting reads each matching rollout's word vector (PostgreSQL filters them from
# the heap, not the index): 10,000 of them cost 220-580 ms at 50,000 real-length rollouts.
COUNT_CAP = 1_000
SQLITE_SCAN_ROWS = 50_000  # words on SQLite: at most this many candidate rollouts are read per search
SQLITE_CHECK_BUDGET = 256_000_000  # ... and at most this much work (characters x query.scan_cost) spent checking them
SCAN_ROLLOUTS = 200  # a literal the index cannot narrow (`==`): rollouts read per page
PROBE_ROLLOUTS = 16  # a literal or phrase: rollouts read one by one before the index is asked
PROBE_MAX = 320  # rollouts a page reads when the index cannot answer in time, or for a phrase (~0.3 s at 200 kB each)
INDEX_SECONDS = 0.25  # a literal's look-up in the trigram index; past it, rollouts are read in turn (PROBE_MAX a page)
MAX_HITS = 5  # hits shown per rollout on a results page (the rest: its count and the group page)
PAGE_SCAN_BUDGET = 64_000_000  # work units (text.find_hits) a results page spends on its rollouts' hits, shared among them
CHUNKS = "grading_searchchunk"
CHEAT_FILTERS = ("any", "confirmed")


class SearchRefused(ValueError):
    """A filter this person may not use, or a value that cannot be searched; `field` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class GraderFieldsHidden(SearchRefused):
    """A grader filter (tier, cheat) asked by someone whose role does not see grader verdicts."""

    def __init__(self, field: str):
        super().__init__(field, "your role does not see grader verdicts, so it cannot search by tier or cheat signal")


@dataclass
class SearchScope:
    project: Project
    run: Run | None = None
    step_min: int | None = None
    step_max: int | None = None
    passed: bool | None = None
    tier: str | None = None
    cheat: str | None = None  # "any" | "confirmed"
    grader_hidden: QuerySet | None = None  # group ids whose grader fields this person may not see yet
    # Rollout ids this person may not find: the sources of the comparison rollouts they judge
    # blind (a hit on one, in its run, would say which run a lane's identical copy came from).
    rollouts_hidden: QuerySet | None = None
    # How this person names a rollout in hits and links: None, its index; a blind judge's
    # lane label on a group they judge blind (reviews.selectors.lanes.search_lanes).
    lane_of: Callable[[Rollout], str] | None = field(default=None, repr=False, compare=False)
    _run_ids: list[int] | None = field(default=None, repr=False, compare=False)  # read once per search

    @property
    def uses_grader_fields(self) -> bool:
        return bool(self.tier or self.cheat)


@dataclass
class SearchHit:
    where: str
    field: str  # grading.search.text.FIELD_LABELS
    turn: int | None
    path: str
    line: int | None
    snippet: str  # HTML: the text escaped, the match in <mark>
    text: str  # the same snippet as plain text
    link: dict  # the group page's query string at this hit: lane, hit bar, turn in view
    anchor: str  # and its fragment: the turn, patch row or test table
    occurrences: int = 1
    label: str = ""
    url: str = ""  # the address link and anchor make, which the review desk fills in (reviews.presenters.search_links)


@dataclass
class SearchResult:
    rollout: Rollout
    hits: list[SearchHit] = field(default_factory=list)
    hit_count: int = 0  # hits (fields holding the query) in the part of the rollout read
    hits_complete: bool = True  # False: the page's budget ran out before the whole rollout was read
    hits_more: bool = False  # True: reading stopped at MAX_HITS hits; the group page counts them all
    hits_url: str = ""  # the group page at this rollout's first hit, with hit-by-hit navigation (filled as `url`)
    walk_link: dict = field(default_factory=dict)  # without hits, the group page's query string for the hit bar
    lane: str = ""  # how the searcher names the rollout: its index, or their blind lane label (SearchScope.lane_of)


@dataclass
class SearchPage:
    count: int
    count_capped: bool
    results: list[SearchResult]
    next_cursor: int | None
    indexed: bool  # every rollout of the scope is in the index (none waits for a worker)
    pending: int = 0  # rollouts of the scope stored but not indexed yet (GAGAR_SEARCH_INDEX=task)
    scan: ScanProgress | None = None  # set when the index could not narrow the query and rows were read
    scan_capped: bool = False  # SQLite words only: more rows than SQLITE_SCAN_ROWS, the rest were not read
    count_estimated: bool = False  # a probed page (PROBE_ROLLOUTS): `count` is the probed share times the scope


@dataclass
class ScanProgress:
    """A search the index could not narrow (a literal like `==` or `-c`): rollouts are read in
    id order, SCAN_ROLLOUTS at most per page; `count` is what this page's window held."""

    scanned: int  # rollouts read for this page
    in_scope: int  # rollouts in the scope, in all
    complete: bool  # nothing of the scope is left past this page


def _tsquery(query: Query) -> str:
    """The tsquery text of a words query over the rollout's tokens: every word, every prefix,
    every token of every phrase (the phrase's order is then checked on the chunks). Tokens are
    letters and digits only (query.tokens), so quoting them cannot be broken out of."""
    parts = []
    for term in query.terms:
        if term.kind == "prefix":
            parts.append(f"'{term.tokens[0]}':*")
        else:
            parts.extend(f"'{token}'" for token in term.tokens)
    return " & ".join(dict.fromkeys(parts))


def _matches_vector(tsquery: str) -> RawSQL:
    # The tsquery is a bind parameter read as tsquery input: quoted lexemes that are letters
    # and digits only (built by _tsquery), lower-cased like the vectors.
    return RawSQL("vector @@ %s::tsquery", [tsquery], output_field=BooleanField())


def _phrase_regex(term: Term) -> str:
    """A PostgreSQL regular expression (used with ~*, case-insensitive) for a phrase: its
    tokens, each starting and ending a run of letters and digits, one after the other with
    anything but letters, digits and the field separator between. Tokens are letters and
    digits only, so nothing in them is a regex operator."""
    between = f"[^[:alnum:]{SEPARATOR}]+"
    return "(^|[^[:alnum:]])" + between.join(term.tokens) + "([^[:alnum:]]|$)"


def _like_pattern(literal: str, vendor: str) -> str:
    if vendor == "postgresql":  # backslash is LIKE's escape character there
        return "%" + literal.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    # SQLite's trigram table is used for LIKE only without ESCAPE: a wildcard stands for the
    # character it replaces (a superset), and instr() then checks the substring itself.
    return "%" + literal.replace("%", "_") + "%"


def _chunk_holds(query: Query) -> list:
    """Conditions on one rollout, correlated (`Exists`): a chunk of it holds the literal
    (strpos / instr, case-sensitive), or each phrase (PostgreSQL's regex). Neither can use
    the trigram index, so the database reads the rollout's chunks in order and stops at the
    first that holds it."""
    chunks = SearchChunk.objects.filter(rollout_id=OuterRef("pk"))
    if query.mode == "literal":
        return [Exists(chunks.annotate(_at=StrIndex("text", Value(query.literal))).filter(_at__gt=0))]
    return [
        Exists(chunks.filter(RawSQL("text ~* %s", [_phrase_regex(term)], output_field=BooleanField())))
        for term in query.terms
        if term.kind == "phrase"
    ]


def probes(query: Query) -> bool:
    """Whether a page of `query` is first looked for rollout by rollout (a literal, or words
    with a phrase on PostgreSQL) before the index is asked."""
    return query.mode == "literal" or (has_index() and any(t.kind == "phrase" for t in query.terms))


def _chunks_holding(literal: str) -> RawSQL:
    """The rollout ids with a chunk holding `literal`, case-sensitively (the index narrows,
    the database checks the substring itself)."""
    vendor = connection.vendor
    if vendor == "postgresql":
        return RawSQL(f"SELECT c.rollout_id FROM {CHUNKS} c WHERE c.text LIKE %s", [_like_pattern(literal, vendor)])
    return RawSQL(
        f"SELECT c.rollout_id FROM {CHUNKS} c WHERE c.id IN (SELECT rowid FROM {FTS_TABLE} WHERE text LIKE %s) "
        "AND instr(c.text, %s) > 0",
        [_like_pattern(literal, vendor), literal],
    )


def _chunks_with_phrase(term: Term) -> RawSQL:
    return RawSQL(f"SELECT c.rollout_id FROM {CHUNKS} c WHERE c.text ~* %s", [_phrase_regex(term)])


def _chunks_with_token(token: str) -> RawSQL:
    """SQLite's words pre-filter: rollouts with a chunk holding `token`, ignoring ASCII case;
    through the trigram table when the token has three characters or more."""
    if len(token) >= 3:
        return RawSQL(
            f"SELECT c.rollout_id FROM {CHUNKS} c WHERE c.id IN (SELECT rowid FROM {FTS_TABLE} WHERE text LIKE %s)",
            [_like_pattern(token, "sqlite")],
        )
    return RawSQL(f"SELECT c.rollout_id FROM {CHUNKS} c WHERE c.text LIKE %s", [_like_pattern(token, "sqlite")])


def _scoped(scope: SearchScope, sees_grader: bool) -> QuerySet[RolloutSearch]:
    # The project's runs as a list of ids, not a join: joined, PostgreSQL scanned the text
    # index once per run (benchmarks/search.py); a project has few runs.
    if scope.run is not None:
        if scope.run.project_id != scope.project.pk:  # a run of another project is no scope of this one
            return RolloutSearch.objects.none()
        rows = RolloutSearch.objects.filter(run_id=scope.run.pk)
    else:
        # `run_id + 0`: an expression, not the column, so no plan reads the run index and then
        # filters word vectors row by row (_planned)
        rows = RolloutSearch.objects.alias(_run=ExpressionWrapper(F("run_id") + 0, output_field=BigIntegerField())).filter(
            _run__in=_run_ids(scope)
        )
    if scope.step_min is not None:
        rows = rows.filter(step_number__gte=scope.step_min)
    if scope.step_max is not None:
        rows = rows.filter(step_number__lte=scope.step_max)
    if scope.passed is not None:
        rows = rows.filter(passed=scope.passed)
    if scope.uses_grader_fields and not sees_grader:
        raise GraderFieldsHidden("tier" if scope.tier else "cheat")
    if scope.tier:
        if scope.tier not in TIERS:
            raise SearchRefused("tier", f"tier must be one of {', '.join(TIERS)}")
        latest_valid = (
            Verdict.objects.filter(group_id=OuterRef("verdict__group_id"), status=Verdict.Status.VALID)
            .order_by("-created_at", "-id")
            .values("id")[:1]
        )
        graded = RolloutGrade.objects.filter(
            tier=scope.tier, verdict__status=Verdict.Status.VALID, verdict_id=Subquery(latest_valid)
        ).values("rollout_id")
        rows = rows.filter(rollout_id__in=graded)
    if scope.cheat:
        if scope.cheat not in CHEAT_FILTERS:
            raise SearchRefused("cheat", f"cheat must be one of {', '.join(CHEAT_FILTERS)}")
        signals = CheatDecision.objects.all() if scope.cheat == "any" else CheatDecision.objects.filter(confirmed=True)
        rows = rows.filter(rollout_id__in=signals.values("rollout_id"))
    if scope.uses_grader_fields and scope.grader_hidden is not None:
        rows = rows.exclude(rollout__group_id__in=scope.grader_hidden)
    if scope.rollouts_hidden is not None:
        rows = rows.exclude(rollout_id__in=scope.rollouts_hidden)
    return rows


def _run_ids(scope: SearchScope) -> list[int]:
    if scope.run is not None:
        return [scope.run.pk] if scope.run.project_id == scope.project.pk else []
    if scope._run_ids is None:
        scope._run_ids = list(Run.objects.filter(project=scope.project).values_list("pk", flat=True))
    return scope._run_ids


def needs_scan(query: Query) -> bool:
    """Whether the index cannot narrow `query` (a literal like `==`), so a search reads rows."""
    return query.mode == "literal" and literal_needs_scan(query.literal, connection.vendor)


def matching(query: Query, scope: SearchScope, *, sees_grader: bool) -> QuerySet[RolloutSearch]:
    """The scope's rows the database itself can tell match: exactly, but for words on SQLite,
    where this is a pre-filter (each token somewhere, ignoring case) that `search_rollouts`
    checks in Python. Not for a query that `needs_scan`."""
    rows = _scoped(scope, sees_grader)
    if query.mode == "literal":
        return rows.filter(rollout_id__in=_chunks_holding(query.literal))
    if has_index():
        rows = rows.filter(_matches_vector(_tsquery(query)))
        for term in query.terms:
            if term.kind == "phrase":
                rows = rows.filter(rollout_id__in=_chunks_with_phrase(term))
        return rows
    for token in dict.fromkeys(t for term in query.terms for t in term.tokens):
        rows = rows.filter(rollout_id__in=_chunks_with_token(token))
    return rows


def _words_hold(query: Query, rollout_ids: list[int]) -> tuple[list[int], bool]:
    """SQLite: which of `rollout_ids` hold every term of a words query, reading their chunks
    (a term is looked for in each field, as the hits are), and whether all of them were
    decided: the check spends at most SQLITE_CHECK_BUDGET work units (characters times
    query.scan_cost); rollouts it did not finish are left out, and that is said."""
    needed = set(query.terms)
    found: dict[int, set] = {}
    cost, spent, last = scan_cost(query), 0, None
    for rollout_id, text in (
        SearchChunk.objects.filter(rollout_id__in=rollout_ids)
        .order_by("rollout_id", "seq")
        .values_list("rollout_id", "text")
        .iterator()
    ):
        have = found.setdefault(rollout_id, set())
        if have >= needed:
            continue
        if spent > SQLITE_CHECK_BUDGET:
            last = rollout_id
            break
        spent += len(text) * cost
        for piece in text.split(SEPARATOR):
            have |= satisfied_terms(query, piece)
    held = [pk for pk in rollout_ids if found.get(pk, set()) >= needed]
    if last is None:
        return held, True
    return [pk for pk in held if pk < last], False


def _pending(scope: SearchScope) -> int:
    return SearchBacklog.objects.filter(run_id__in=_run_ids(scope)).count()


def search_rollouts(
    *, query: Query, scope: SearchScope, sees_grader: bool, after: int | None = None, limit: int = PAGE_SIZE
) -> SearchPage:
    """One page of the rollouts matching `query` in `scope`, after the rollout id `after`
    (keyset paging, by rollout id), each with its hits. Queries: the project's runs, 1 for the
    backlog, 2 to find them (count and page), 2 to load the page's rollouts and their bodies;
    a scan (`needs_scan`) counts the scope and reads one window instead."""
    pending = _pending(scope)
    if needs_scan(query):
        return _scanned_page(query, scope, sees_grader, after, limit, pending)
    if probes(query):
        page = _probed_page(query, scope, sees_grader, after, limit, pending)
        if page is not None:
            return page
    rows = matching(query, scope, sees_grader=sees_grader)
    scan_capped = False
    if probes(query):  # the chunks' check is the cost: done once, the count and the page from the same ids
        found = _within_index_time(lambda: list(rows.order_by("pk").values_list("pk", flat=True)[: COUNT_CAP + 1]))
        if found is None:  # the index names too many chunks to check in time: read rollouts in turn after all
            walked = _probed_page(query, scope, sees_grader, after, limit, pending, walk=True)
            assert walked is not None  # a walk answers with what it read, whatever that is
            return walked
        count = len(found)
        ids = [pk for pk in found if after is None or pk > after][: limit + 1]
    elif has_index():
        page_rows = rows.order_by("pk")
        if after is not None:
            page_rows = page_rows.filter(pk__gt=after)
        with _planned(enable_seqscan="off"):
            count = rows.order_by().values("pk")[: COUNT_CAP + 1].count()
            ids = list(page_rows.values_list("pk", flat=True)[: limit + 1])
    else:
        candidates = list(rows.order_by("pk").values_list("pk", flat=True)[: SQLITE_SCAN_ROWS + 1])
        scan_capped = len(candidates) > SQLITE_SCAN_ROWS
        found, decided = _words_hold(query, candidates[:SQLITE_SCAN_ROWS])
        scan_capped = scan_capped or not decided
        count = len(found)
        ids = [pk for pk in found if after is None or pk > after][: limit + 1]
    capped = count > COUNT_CAP
    next_cursor = ids[limit - 1] if len(ids) > limit else None
    ids = ids[:limit]
    return SearchPage(
        count=min(count, COUNT_CAP),
        count_capped=capped,
        results=_results(query, ids, scope.lane_of),
        next_cursor=next_cursor,
        indexed=pending == 0,
        pending=pending,
        scan_capped=scan_capped,
    )


@contextmanager
def _planned(**settings: str):
    """PostgreSQL planner and executor settings for the queries inside (none elsewhere), in a
    savepoint that is rolled back after them, so the settings end with it; reads only.

    Why: the word vectors are TOASTed (~50 kB a rollout), which the planner does not price, so
    it filters them row by row from the heap (a sequential scan, or the run index) instead of
    asking their GIN index: a rare word's count took 0.7-8 s at 50,000 real-length rollouts,
    24 ms from the index. `enable_seqscan=off` and the run filter written as `run_id + 0`
    (_scoped) leave the GIN index the plan."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            for name, value in settings.items():
                cursor.execute("SELECT set_config(%s, %s, true)", [name, value])
        yield
        transaction.set_rollback(True)


def _within_index_time(read: Callable[[], list[int]]) -> list[int] | None:
    """`read()`, or None when it takes longer than INDEX_SECONDS (PostgreSQL's statement
    timeout): a literal whose trigrams are common names so many chunks that checking them all
    is the whole corpus's work, linear in it."""
    try:
        with _planned(statement_timeout=str(max(1, round(INDEX_SECONDS * 1000)))):
            return read()
    except OperationalError as exc:
        if isinstance(exc.__cause__, QueryCanceled):
            return None
        raise


def _probed_page(
    query: Query, scope: SearchScope, sees_grader: bool, after: int | None, limit: int, pending: int, *, walk: bool = False
) -> SearchPage | None:
    """The page read rollout by rollout: the next PROBE_ROLLOUTS rollouts of the scope after
    `after`, those holding the query, when they hold more than a page (a common string) or are
    the rest of the scope; None otherwise, for the index to answer. `walk` (the index could not
    answer in time): PROBE_MAX rollouts are read instead, and the page holds what they held,
    fewer than `limit` perhaps, even none — its cursor goes on reading from the last rollout
    read. The count is exact when the rollouts read were the whole scope, else estimated from
    their share.

    A phrase has no index of its own (the word index says which rollouts hold its words, not
    in what order), so its pages are always read this way (`walk`), among the rollouts holding
    all its words."""
    rows = _scoped(scope, sees_grader)
    if query.mode != "literal":
        rows = rows.filter(_matches_vector(_tsquery(query)))
        walk = True
    window_rows = rows.order_by("pk")
    if after is not None:
        window_rows = window_rows.filter(pk__gt=after)
    size = max(PROBE_ROLLOUTS, 2 * (limit + 1))  # a string in half the rollouts or more fills a page from here
    window: list[int] = []
    held: list[int] = []
    whole = False
    with _planned(enable_seqscan="off") if query.mode != "literal" else nullcontext():  # a phrase's words: their index
        while len(held) <= limit and not whole and len(window) < (PROBE_MAX if walk else size):
            batch = list(
                (window_rows.filter(pk__gt=window[-1]) if window else window_rows).values_list("pk", flat=True)[: size + 1]
            )
            whole = len(batch) <= size  # nothing of the scope past this batch
            window += batch[:size]
            held += _held(query, batch[:size])
    if len(held) <= limit and not whole and not walk:
        return None
    next_cursor = held[limit - 1] if len(held) > limit else (None if whole else window[-1])
    if whole and after is None:
        count, estimated = len(held), False
    else:
        read = window[: window.index(held[limit]) + 1] if len(held) > limit else window  # the page's share of what it read
        share = min(len(held), limit + 1) / len(read) if read else 0.0
        with (
            _planned(enable_seqscan="off") if query.mode != "literal" else nullcontext()
        ):  # a phrase's candidates: by their index
            candidates = rows.order_by().count()
        count, estimated = max(len(held), round(share * candidates)), True
    capped = not estimated and count > COUNT_CAP  # an estimate costs nothing more when it is large
    return SearchPage(
        count=count if estimated else min(count, COUNT_CAP),
        count_capped=capped,
        results=_results(query, held[:limit], scope.lane_of),
        next_cursor=next_cursor,
        indexed=pending == 0,
        pending=pending,
        count_estimated=estimated,
    )


def _held(query: Query, ids: list[int]) -> list[int]:
    """Which of the rollouts `ids` hold the query, read rollout by rollout (_chunk_holds), in id
    order. For a phrase, `ids` already hold all its words (_probed_page's window)."""
    if not ids:
        return []
    probe = RolloutSearch.objects.filter(pk__in=ids).filter(*_chunk_holds(query))
    return list(probe.order_by("pk").values_list("pk", flat=True))


def _window_matches(query: Query, window: list[int]) -> list[int]:
    held = (
        SearchChunk.objects.filter(rollout_id__in=window)
        .annotate(_at=StrIndex("text", Value(query.literal)))
        .filter(_at__gt=0)
        .values_list("rollout_id", flat=True)
        .distinct()
    )  # strpos / instr: case-sensitive
    return sorted(set(held))


def _scanned_page(query: Query, scope: SearchScope, sees_grader: bool, after: int | None, limit: int, pending: int) -> SearchPage:
    """A literal the index cannot narrow: the next SCAN_ROLLOUTS rollouts of the scope after
    `after` are read, and those holding it are the page (the work per page is bounded; the
    page says how far the scan got, and its cursor goes on from there)."""
    rows = _scoped(scope, sees_grader)
    in_scope = rows.order_by().count()
    window_rows = rows.order_by("pk")
    if after is not None:
        window_rows = window_rows.filter(pk__gt=after)
    window = list(window_rows.values_list("pk", flat=True)[:SCAN_ROLLOUTS])
    found = _window_matches(query, window)
    next_cursor: int | None
    if len(found) > limit:
        ids, next_cursor = found[:limit], found[limit - 1]
        scanned = window.index(next_cursor) + 1
    else:
        ids = found
        next_cursor = window[-1] if len(window) == SCAN_ROLLOUTS else None
        scanned = len(window)
    before = rows.filter(pk__lte=after).count() if after is not None else 0
    progress = ScanProgress(scanned=before + scanned, in_scope=in_scope, complete=next_cursor is None)
    return SearchPage(
        count=len(ids),
        count_capped=False,
        results=_results(query, ids, scope.lane_of),
        next_cursor=next_cursor,
        indexed=pending == 0,
        pending=pending,
        scan=progress,
    )


def _results(query: Query, ids: list[int], lane_of: Callable[[Rollout], str] | None = None) -> list[SearchResult]:
    if not ids:
        return []
    rollouts = {r.pk: r for r in Rollout.objects.filter(pk__in=ids).select_related("group__run__project")}
    contents = _bodies(ids)
    results = []
    budget = PAGE_SCAN_BUDGET // len(ids)  # the page's hit-finding is bounded as a whole
    for pk in ids:
        rollout = rollouts.get(pk)
        if rollout is None:  # deleted between the two reads
            continue
        body = contents.get(pk)
        found = find_hits(query, *body, limit=MAX_HITS, budget=budget, count=False) if body else Hits([], 0, True)
        lane = lane_of(rollout) if lane_of is not None else str(rollout.index)
        hits = [_hit(rollout, h, query, number, lane) for number, h in enumerate(found.hits)]
        results.append(
            SearchResult(
                rollout,
                hits,
                hit_count=found.total,
                hits_complete=found.complete,
                hits_more=found.more,
                walk_link={"lane": lane, **_query_params(query)},
                lane=lane,
            )
        )
    return results


def _bodies(ids: list[int]) -> dict[int, tuple]:
    """(messages, patch, tests) of the rollouts `ids`, the JSON read as text and decoded by
    orjson (a quarter of json.loads' time on a 250 kB rollout's messages). orjson reads an
    integer past 64 bits as a float: only a hit's snippet could show it so, never which
    rollouts match (the index holds the stored text)."""
    rows = (
        RolloutContent.objects.filter(rollout_id__in=ids)
        .annotate(_messages=Cast("messages", TextField()), _tests=Cast("tests", TextField()))
        .values_list("rollout_id", "_messages", "patch", "_tests")
    )
    return {pk: (orjson.loads(messages), patch, orjson.loads(tests)) for pk, messages, patch, tests in rows}


def rollout_hits(
    *, query: Query, rollout: Rollout, offset: int = 0, limit: int = 50, lane: str | None = None
) -> tuple[list[SearchHit], Hits]:
    """One rollout's hits for `query`, `offset` to `offset + limit` (the group page's hit-by-hit
    navigation), with how many there are in all: the whole rollout is read, up to
    text.SCAN_BUDGET work units. `rollout` comes with group__run__project; `lane`: how the
    links name it (SearchScope.lane_of), its index by default."""
    content = RolloutContent.objects.filter(rollout=rollout).only("messages", "patch", "tests").first()
    if content is None:
        return [], Hits([], 0, True)
    found = find_hits(query, content.messages, content.patch, content.tests, offset=offset, limit=limit)
    return linked_hits(query=query, rollout=rollout, hits=found.hits, offset=offset, lane=lane), found


def every_rollout_hit(*, query: Query, rollout: Rollout) -> Hits:
    """All of one rollout's hits for `query` (text.Hit, unlinked), from one read of the rollout
    within one text.SCAN_BUDGET: what a request that pages or searches among them spends in all."""
    content = RolloutContent.objects.filter(rollout=rollout).only("messages", "patch", "tests").first()
    if content is None:
        return Hits([], 0, True)
    return find_hits(query, content.messages, content.patch, content.tests, offset=0, limit=sys.maxsize)


def linked_hits(*, query: Query, rollout: Rollout, hits: list[Hit], offset: int, lane: str | None = None) -> list[SearchHit]:
    """`hits` (the rollout's hits from number `offset` on) with the group page's address at each;
    `lane` as for rollout_hits."""
    lane = str(rollout.index) if lane is None else lane
    return [_hit(rollout, h, query, offset + i, lane) for i, h in enumerate(hits)]


def _query_params(query: Query) -> dict[str, str]:
    return {"q": query.raw, "mode": "auto" if query.auto else query.mode}


def _hit(rollout: Rollout, hit: Hit, query: Query, number: int, lane: str) -> SearchHit:
    """A hit and what of the group page's address at it is data: the query string (the
    rollout's lane, the hit bar on hit `number`, its place among the rollout's hits from 0)
    and the fragment (the turn, patch row or test table in view: static/js/hits.js)."""
    params = {"lane": lane, **({"start": hit.turn} if hit.where == "turn" else {}), **_query_params(query), "hit": number}
    if hit.where == "turn":
        anchor = f"turn-{lane}-{hit.turn}"
    elif hit.where == "patch":
        anchor = patch_anchor(lane, hit.path, hit.line) if hit.line else f"diff-{lane}"
    else:
        anchor = f"tests-{lane}"
    snippet = format_html("{}<mark>{}</mark>{}", hit.before, hit.match, hit.after)
    return SearchHit(
        hit.where,
        hit.field,
        hit.turn,
        hit.path,
        hit.line,
        snippet,
        hit.snippet,
        params,
        anchor,
        occurrences=hit.occurrences,
        label=hit.label,
    )


def search_signal_targets(*, query: Query, scope: SearchScope, cap: int) -> list[int] | None:
    """The ids of every rollout matching `query` in `scope` (an auditor turning a search into
    cheat signals), or None when there are more than `cap` — or when the index cannot narrow
    the query and the scope holds more than a scan reads (SCAN_ROLLOUTS)."""
    if needs_scan(query):
        rows = _scoped(scope, sees_grader=True)
        window = list(rows.order_by("pk").values_list("pk", flat=True)[: SCAN_ROLLOUTS + 1])
        if len(window) > SCAN_ROLLOUTS:
            return None
        ids = _window_matches(query, window)
    elif has_index() or query.mode == "literal":
        ids = list(matching(query, scope, sees_grader=True).order_by("pk").values_list("pk", flat=True)[: cap + 1])
    else:
        candidates = list(matching(query, scope, sees_grader=True).order_by("pk").values_list("pk", flat=True)[:SQLITE_SCAN_ROWS])
        ids, decided = _words_hold(query, candidates)
        if not decided:
            return None
    return None if len(ids) > cap else ids
