"""Search across a project's rollouts: which rollouts match, a page of them, and their hits.

The project is the first filter of every search and cannot be left out (a `SearchScope`
needs one), so no query reaches another project's rollouts. Matching is done by the
database: on PostgreSQL by the index of migration 0015 (words, phrases and prefixes on the
tsvector column; literal substrings pre-filtered by their words there, then LIKE); on SQLite, which has no index, the
rows' text is read and matched in Python (grading.search.query, the same rules), at most
SQLITE_SCAN_ROWS rows per search. Hits are found in Python over the page's rollouts only
(grading.search.text.find_hits: bounded str.find).

Grader fields: `tier` (the latest valid verdict's tier) and `cheat` (a cheat signal, which
can be a grader's flag) are filters only for people whose role sees grader verdicts; the
caller says so (`sees_grader`), and passes the groups whose grader fields this person may
still not see (their open blind assignments), which such a search then leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import BooleanField, OuterRef, QuerySet, Subquery, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import StrIndex
from django.urls import reverse
from django.utils.html import format_html

from grading.method.tiers import TIERS
from grading.models import CheatDecision, Project, Rollout, RolloutContent, RolloutGrade, RolloutSearch, Run, Verdict
from grading.search.index import has_index
from grading.search.query import Query, literal_tsquery, matches
from grading.search.text import Hit, find_hits
from grading.templatetags.gagar import patch_anchor

PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
# An exact count up to this many matching rollouts; past it, `count` is this and `count_capped`
# is true (a common word over a million rollouts would otherwise cost seconds to count).
COUNT_CAP = 10_000
SQLITE_SCAN_ROWS = 50_000  # without an index, at most this many rows are read per search
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

    @property
    def uses_grader_fields(self) -> bool:
        return bool(self.tier or self.cheat)


@dataclass
class SearchHit:
    where: str
    turn: int | None
    path: str
    line: int | None
    snippet: str  # HTML: the text escaped, the match in <mark>
    text: str  # the same snippet as plain text
    url: str


@dataclass
class SearchResult:
    rollout: Rollout
    hits: list[SearchHit] = field(default_factory=list)


@dataclass
class SearchPage:
    count: int
    count_capped: bool
    results: list[SearchResult]
    next_cursor: int | None
    indexed: bool  # False: no index (SQLite), the rows were read
    scan_capped: bool = False  # SQLite only: more rows than SQLITE_SCAN_ROWS, the rest were not read


def _tsquery(query: Query) -> str:
    """The tsquery text of a words query. Tokens are letters and digits only (query.tokens),
    so quoting them cannot be broken out of."""
    parts = []
    for term in query.terms:
        quoted = [f"'{token}'" for token in term.tokens]
        if term.kind == "prefix":
            parts.append(quoted[0] + ":*")
        elif term.kind == "phrase":
            parts.append("(" + " <-> ".join(quoted) + ")")
        else:
            parts.append(quoted[0])
    return " & ".join(parts)


def _matches_vector(tsquery: str) -> RawSQL:
    # The tsquery is a bind parameter read as tsquery input: quoted lexemes that are letters
    # and digits only (built here or by query.literal_tsquery), lower-cased like the vectors.
    return RawSQL("vector @@ %s::tsquery", [tsquery], output_field=BooleanField())


def _scoped(scope: SearchScope, sees_grader: bool) -> QuerySet[RolloutSearch]:
    # The project's runs as a list of ids, not a join: joined, PostgreSQL scanned the text
    # index once per run (benchmarks/search.py); a project has few runs.
    if scope.run is not None:
        if scope.run.project_id != scope.project.pk:  # a run of another project is no scope of this one
            return RolloutSearch.objects.none()
        rows = RolloutSearch.objects.filter(run_id=scope.run.pk)
    else:
        rows = RolloutSearch.objects.filter(run_id__in=list(Run.objects.filter(project=scope.project).values_list("pk", flat=True)))
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
        latest_valid = Verdict.objects.filter(group_id=OuterRef("verdict__group_id"), status=Verdict.Status.VALID).order_by(
            "-created_at", "-id").values("id")[:1]
        graded = RolloutGrade.objects.filter(tier=scope.tier, verdict__status=Verdict.Status.VALID,
                                             verdict_id=Subquery(latest_valid)).values("rollout_id")
        rows = rows.filter(rollout_id__in=graded)
    if scope.cheat:
        if scope.cheat not in CHEAT_FILTERS:
            raise SearchRefused("cheat", f"cheat must be one of {', '.join(CHEAT_FILTERS)}")
        signals = CheatDecision.objects.all() if scope.cheat == "any" else CheatDecision.objects.filter(confirmed=True)
        rows = rows.filter(rollout_id__in=signals.values("rollout_id"))
    if scope.uses_grader_fields and scope.grader_hidden is not None:
        rows = rows.exclude(rollout__group_id__in=scope.grader_hidden)
    return rows


def matching(query: Query, scope: SearchScope, *, sees_grader: bool) -> QuerySet[RolloutSearch]:
    """The scope's index rows the database itself can tell match (PostgreSQL), or the
    SQLite pre-filter (each token somewhere, case-insensitively; `search_rollouts` then
    checks the rows in Python)."""
    rows = _scoped(scope, sees_grader)
    if query.mode == "literal":
        if has_index():
            # The index narrows the rows to those with the literal's words in order; LIKE
            # (case-sensitive) then checks the substring itself. A literal with no word the
            # index can use (one run of letters, like `astropy==`) reads every row in scope.
            prefilter = literal_tsquery(query.literal)
            if prefilter:
                rows = rows.filter(_matches_vector(prefilter))
            return rows.filter(text__contains=query.literal)
        return rows.annotate(_at=StrIndex("text", Value(query.literal))).filter(_at__gt=0)  # instr(): case-sensitive
    if has_index():
        return rows.filter(_matches_vector(_tsquery(query)))
    for term in query.terms:
        for token in term.tokens:
            rows = rows.filter(text__icontains=token)
    return rows


def search_rollouts(*, query: Query, scope: SearchScope, sees_grader: bool, after: int | None = None,
                    limit: int = PAGE_SIZE) -> SearchPage:
    """One page of the rollouts matching `query` in `scope`, after the rollout id `after`
    (keyset paging, by rollout id), each with its hits. Queries: the project's runs (unless
    the scope is one run), 2 to find them (count and page; 1 without an index), 2 to load
    the page's rollouts and their bodies."""
    rows = matching(query, scope, sees_grader=sees_grader)
    scan_capped = False
    if has_index():
        count = rows.order_by().values("pk")[: COUNT_CAP + 1].count()
        page_rows = rows.order_by("pk")
        if after is not None:
            page_rows = page_rows.filter(pk__gt=after)
        ids = list(page_rows.values_list("pk", flat=True)[: limit + 1])
    else:
        found: list[int] = []
        scanned = 0
        for pk, text in rows.order_by("pk").values_list("pk", "text")[: SQLITE_SCAN_ROWS + 1].iterator():
            scanned += 1
            if scanned > SQLITE_SCAN_ROWS:
                scan_capped = True
                break
            if query.mode == "literal" or matches(query, text):
                found.append(pk)
        count = len(found)
        ids = [pk for pk in found if after is None or pk > after][: limit + 1]
    capped = count > COUNT_CAP
    next_cursor = ids[limit - 1] if len(ids) > limit else None
    ids = ids[:limit]
    return SearchPage(count=min(count, COUNT_CAP), count_capped=capped, results=_results(query, ids), next_cursor=next_cursor,
                      indexed=has_index(), scan_capped=scan_capped)


def _results(query: Query, ids: list[int]) -> list[SearchResult]:
    if not ids:
        return []
    rollouts = {r.pk: r for r in Rollout.objects.filter(pk__in=ids).select_related("group__run__project")}
    contents = {c.rollout_id: c for c in RolloutContent.objects.filter(rollout_id__in=ids).only("rollout_id", "messages",
                                                                                                 "patch", "tests")}
    results = []
    for pk in ids:
        rollout = rollouts.get(pk)
        if rollout is None:  # deleted between the two reads
            continue
        content = contents.get(pk)
        hits = find_hits(query, content.messages if content else [], content.patch if content else "",
                         content.tests if content else {}) if content else []
        results.append(SearchResult(rollout, [_hit(rollout, h) for h in hits]))
    return results


def _hit(rollout: Rollout, hit: Hit) -> SearchHit:
    group = rollout.group
    args = [group.run.project.name, group.run.name, group.uid]
    if hit.where == "turn":
        url = reverse("group", args=args) + f"?lane={rollout.index}&start={hit.turn}#turn-{rollout.index}-{hit.turn}"
    elif hit.where == "patch":
        url = reverse("rollout-diff", args=[*args, rollout.index])
        if hit.line:
            url += "#" + patch_anchor(rollout.index, hit.path, hit.line)
    else:
        url = reverse("group", args=args) + f"#tests-{rollout.index}"
    snippet = format_html("{}<mark>{}</mark>{}", hit.before, hit.match, hit.after)
    return SearchHit(hit.where, hit.turn, hit.path, hit.line, snippet, hit.snippet, url)


def search_signal_targets(*, query: Query, scope: SearchScope, cap: int) -> list[int] | None:
    """The ids of every rollout matching `query` in `scope` (an auditor turning a search into
    cheat signals), or None when there are more than `cap`."""
    rows = matching(query, scope, sees_grader=True)
    if has_index():
        ids = list(rows.order_by("pk").values_list("pk", flat=True)[: cap + 1])
    else:
        ids = []
        for pk, text in rows.order_by("pk").values_list("pk", "text")[:SQLITE_SCAN_ROWS].iterator():
            if query.mode == "literal" or matches(query, text):
                ids.append(pk)
                if len(ids) > cap:
                    break
    return None if len(ids) > cap else ids
