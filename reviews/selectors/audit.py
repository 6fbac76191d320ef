"""The cheat audit, read by rollout: one row per rollout with every signal raised on it.

A rollout is *pending* while any of its signals is open; otherwise it is *confirmed* or
*overturned* by its most recently decided signal — the rule the advantage engine applies
(grading.method.services, docs/method.md §1), so the state shown is the state in force.
Each signal keeps its author and its own evidence (grading.CheatDecision.author/evidence).
A query for the page's rows, one for their signals and one for the audits: the count does
not grow with the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, TypedDict

from django.core.paginator import Page, Paginator
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils.http import urlencode

from grading.grader.prescreen.signals import LEAK_SIGNALS, RETIRED_SIGNALS, TAMPER_SIGNALS
from grading.models import AdvantageResult, CheatDecision, Project, Rollout
from grading.templatetags.gagar import patch_anchor
from reviews.models import CheatAudit, ReviewPolicy
from reviews.selectors.blind import open_blind_group_ids

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class AuditAnnotations(TypedDict):
    has_open: bool  # a signal of the rollout is not decided yet
    in_force: bool | None  # the confirmed flag of its latest decided signal, None when none is


if TYPE_CHECKING:
    AuditedRollout = WithAnnotations[Rollout, AuditAnnotations]

STATES = ("pending", "confirmed", "overturned", "all")
# A prescreen signal's reason is "<rule>: <detail>" (grading.jobs.scans.record_prescreen); the
# rules are the scanners' categories (grading.grader.prescreen.catalogue).
PRESCREEN_RULES = (*LEAK_SIGNALS, *TAMPER_SIGNALS, *RETIRED_SIGNALS)
LITERAL_SUFFIX = " (literal)"  # how a literal search names itself in its signals' reason
PER_PAGE = 50  # rollouts on a page of the audit queue
MAX_BULK = 500  # rollouts one bulk decision may settle, as a search may flag at most 500


@dataclass(frozen=True)
class AuditScope:
    """Which rollouts the queue lists: a state, and optionally a source, a prescreen rule,
    a search (its query, as its signals carry it) or named rollouts (ids, as the run page
    links the cheats confirmed after their step was served)."""

    status: str = "pending"
    source: str = ""
    rule: str = ""
    search: str = ""
    rollouts: tuple[int, ...] = ()

    def params(self) -> dict[str, str]:
        out = {"status": self.status}
        for name in ("source", "rule", "search"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.rollouts:
            out["rollouts"] = ",".join(map(str, self.rollouts))
        return out

    @property
    def query_string(self) -> str:
        return urlencode(self.params())


def read_scope(data) -> AuditScope:
    """The scope from request.GET or POST; anything unknown falls back to its default."""
    status = data.get("status") or "pending"
    source = data.get("source") or ""
    rule = data.get("rule") or ""
    search = (data.get("search") or "")[:1000]
    return AuditScope(
        status=status if status in STATES else "pending",
        source=source if source in CheatDecision.Source.values else "",
        rule=rule if rule in PRESCREEN_RULES else "",
        search=search,
        rollouts=_rollout_ids(data.get("rollouts") or ""),
    )


def _rollout_ids(text: str) -> tuple[int, ...]:
    """Rollout ids from "12,15,40": the first MAX_BULK distinct whole numbers; anything else is
    left out (the run page links at most as many, grading.method.late_credit.MAX_LINKED)."""
    ids: dict[int, None] = {}
    for part in text[: MAX_BULK * 21].split(","):
        part = part.strip()
        if part.isascii() and part.isdigit() and len(part) <= 18:
            ids[int(part)] = None
            if len(ids) == MAX_BULK:
                break
    return tuple(ids)


def _signals(**kw) -> QuerySet[CheatDecision]:
    return CheatDecision.objects.filter(rollout=OuterRef("pk"), **kw)


def _by_rule(rule: str) -> Q:
    return Q(source=CheatDecision.Source.PRESCREEN, reason__startswith=f"{rule}:")


def _by_search(query: str) -> Q:
    return Q(source=CheatDecision.Source.SEARCH, reason=query)


def _audited(project: Project, *, hidden_from=None) -> QuerySet[AuditedRollout]:
    """Rollouts of the project with a signal, each with `has_open` and `in_force` (the
    confirmed flag of its latest decided signal, None when none is decided). Groups the
    auditor still judges blind stay out: a grader flag and its evidence are grader fields."""
    rollouts = Rollout.objects.filter(group__run__project=project).filter(Exists(_signals()))
    if hidden_from is not None:
        rollouts = rollouts.exclude(group_id__in=open_blind_group_ids(project=project, user=hidden_from))
    latest = _signals(confirmed__isnull=False).order_by("-decided_at", "-id").values("confirmed")[:1]
    return rollouts.annotate(has_open=Exists(_signals(confirmed__isnull=True)), in_force=Subquery(latest))


STATE_FILTERS = {
    "pending": Q(has_open=True),
    "confirmed": Q(has_open=False, in_force=True),
    "overturned": Q(has_open=False, in_force=False),
    "all": Q(),
}


def split_first(project: Project) -> Q:
    """A rollout whose cheat call the graders split on (Rollout.cheat_split), where the
    project's review policy puts disagreements first (reviews.models.ReviewPolicy; on when
    none is stored). In the listing's own query: no query of its own."""
    off = ReviewPolicy.objects.filter(project_id=project.pk, disagreements_first=False)
    return Q(cheat_split=True) & ~Q(Exists(off))


def audit_rollouts(project: Project, *, scope: AuditScope, hidden_from=None) -> QuerySet[AuditedRollout]:
    """The rollouts the queue lists for `scope`: with the policy's disagreements first, those
    whose cheat call graders split on first; then by risk, the most credit at stake first (the
    largest positive A* the rollout was given: what a cheat would take); then newest signal first."""
    rollouts = _audited(project, hidden_from=hidden_from).filter(STATE_FILTERS[scope.status])
    if scope.source:
        rollouts = rollouts.filter(Exists(_signals(source=scope.source)))
    if scope.rule:
        rollouts = rollouts.filter(Exists(CheatDecision.objects.filter(_by_rule(scope.rule), rollout=OuterRef("pk"))))
    if scope.search:
        rollouts = rollouts.filter(Exists(CheatDecision.objects.filter(_by_search(scope.search), rollout=OuterRef("pk"))))
    if scope.rollouts:
        rollouts = rollouts.filter(pk__in=scope.rollouts)
    newest = _signals().order_by("-id").values("id")[:1]
    first = Case(When(split_first(project), then=Value(1)), default=Value(0), output_field=IntegerField())
    # Risk: the credit a cheat would take, the largest positive A* the rollout was given (a
    # failing rollout's is not positive: nothing at stake). Stored advantages, one subquery.
    stake = (
        AdvantageResult.objects.filter(rollout=OuterRef("pk"), redistributed_advantage__gt=0)
        .order_by("-redistributed_advantage")
        .values("redistributed_advantage")[:1]
    )
    return (
        rollouts.annotate(
            newest_signal=Subquery(newest),
            split_first=first,
            at_stake=Coalesce(Subquery(stake, output_field=FloatField()), Value(0.0)),
        )
        .select_related("group__run", "group__task")
        .only(
            "id",
            "index",
            "cheat_split",
            "group_id",
            "group__uid",
            "group__step_number",
            "group__run__name",
            "group__task__instance_id",
        )
        .order_by("-split_first", "-at_stake", "-newest_signal", "-id")
    )


def audit_counts(project: Project, *, hidden_from=None) -> dict[str, int]:
    """Rollouts in each state, in one aggregate."""
    counts = _audited(project, hidden_from=hidden_from).aggregate(
        **{f"n_{name}": Count("pk", filter=q) for name, q in STATE_FILTERS.items()}
    )
    return {name: counts[f"n_{name}"] for name in STATE_FILTERS}


@dataclass(frozen=True)
class BulkChoice:
    kind: str  # "rule" | "search"
    value: str
    pending: int  # rollouts with an open signal of it


def bulk_choices(project: Project, *, hidden_from=None) -> list[BulkChoice]:
    """The prescreen rules and searches with open signals, each with how many rollouts
    one bulk decision would settle (one query: a signal's rule, or its search's query, as a key)."""
    open_signals = CheatDecision.objects.filter(rollout__group__run__project=project, confirmed__isnull=True)
    if hidden_from is not None:
        open_signals = open_signals.exclude(rollout__group_id__in=open_blind_group_ids(project=project, user=hidden_from))
    key = Case(
        *(When(_by_rule(rule), then=Value(rule)) for rule in PRESCREEN_RULES),
        When(source=CheatDecision.Source.SEARCH, then=F("reason")),
        default=Value(""),
        output_field=TextField(),
    )
    keyed = (
        open_signals.filter(source__in=[CheatDecision.Source.PRESCREEN, CheatDecision.Source.SEARCH])
        .annotate(key=key)
        .exclude(key="")
        .values("source", "key")
        .annotate(n=Count("rollout_id", distinct=True))
        .order_by("source", "-n", "key")
    )
    return [
        BulkChoice("rule" if k["source"] == CheatDecision.Source.PRESCREEN else "search", k["key"], k["n"]) for k in keyed[:40]
    ]


def bulk_targets(project: Project, *, scope: AuditScope, hidden_from=None) -> list[int] | None:
    """The pending rollouts of a prescreen rule or a search (their ids), or None when more
    than MAX_BULK would be settled at once."""
    ids = list(
        audit_rollouts(
            project, scope=AuditScope(status="pending", rule=scope.rule, search=scope.search), hidden_from=hidden_from
        ).values_list("id", flat=True)[: MAX_BULK + 1]
    )
    return None if len(ids) > MAX_BULK else ids


def audit_rollout_for(project: Project, rollout_id: int, *, hidden_from=None) -> AuditedRollout | None:
    """One audited rollout of the project, as the queue lists it; None when it has no signal,
    is another project's or is on a group the auditor judges blind."""
    return audit_rollouts(project, scope=AuditScope(status="all"), hidden_from=hidden_from).filter(pk=rollout_id).first()


# --- the rows, as the page shows them ------------------------------------------------------


@dataclass(frozen=True)
class EvidenceLink:
    kind: str
    locator: str
    note: str
    href: str


@dataclass(frozen=True)
class AuditEntry:
    auditor: str
    confirmed: bool
    reason: str
    at: datetime


@dataclass(frozen=True)
class SignalView:
    pk: int
    source: str
    source_label: str
    author: str
    reason: str
    evidence: list[EvidenceLink]
    confirmed: bool | None
    decided_by: str
    created_at: datetime
    audits: list[AuditEntry]
    rule: str = ""  # a prescreen signal's rule
    search_url: str = ""  # a search signal: the search itself


@dataclass(frozen=True)
class AuditRow:
    rollout_id: int
    index: int
    group_uid: str
    run: str
    step: int
    instance_id: str
    group_url: str
    state: str  # pending | confirmed | overturned
    in_force: bool | None  # what the advantage engine reads now (a confirmed cheat: True)
    signals: list[SignalView]
    graders_split: bool = False  # graders' valid verdicts differ on its cheat call (Rollout.cheat_split)

    @property
    def n_open(self) -> int:
        return sum(1 for s in self.signals if s.confirmed is None)


def evidence_links(group_url: str, index: int, evidence) -> list[EvidenceLink]:
    """Where each cited item opens on the group page: a turn through `?lane=&start=` and its
    `#turn-<lane>-<turn>` anchor, a patch row by its anchor, a test in the lane's test table."""
    links = []
    for item in evidence if isinstance(evidence, list) else []:
        if not isinstance(item, dict):
            continue
        kind, locator = str(item.get("kind", "")), str(item.get("locator", ""))
        rollout = item.get("rollout")
        lane = rollout if isinstance(rollout, int) and rollout >= 0 else index
        if kind == "turn" and locator.isdigit() and len(locator) < 10:
            turn: dict[str, int | str] = {"lane": lane, "start": locator}
            href = f"{group_url}?{urlencode(turn)}#turn-{lane}-{locator}"
        elif kind == "patch" and ":" in locator and locator.rpartition(":")[2].isdigit():
            path, _, line = locator.rpartition(":")
            href = f"{group_url}#{patch_anchor(lane, path, line)}"
        else:
            href = f"{group_url}#tests-{lane}"
        links.append(EvidenceLink(kind, locator, str(item.get("note", "")), href))
    return links


def _search_url(project: Project, reason: str) -> str:
    literal = reason.endswith(LITERAL_SUFFIX)
    query = {"q": reason[: -len(LITERAL_SUFFIX)] if literal else reason, "mode": "literal" if literal else "words"}
    return reverse("search", args=[project.name]) + "?" + urlencode(query)


def audit_rows(project: Project, rollouts: list[AuditedRollout]) -> list[AuditRow]:
    """The rows for a page of `audit_rollouts` (rollouts annotated there): two queries."""
    ids = [r.pk for r in rollouts]
    signals: dict[int, list[CheatDecision]] = {}
    for s in (
        CheatDecision.objects.filter(rollout_id__in=ids)
        .select_related("decided_by")
        .only("id", "rollout_id", "source", "author", "reason", "evidence", "confirmed", "created_at", "decided_by__username")
        .order_by("created_at", "id")
    ):
        signals.setdefault(s.rollout_id, []).append(s)
    audits: dict[int, list[AuditEntry]] = {}
    for a in (
        CheatAudit.objects.filter(decision__rollout_id__in=ids)
        .select_related("auditor")
        .only("decision_id", "confirmed", "reason", "created_at", "auditor__username")
        .order_by("created_at", "id")
    ):
        audits.setdefault(a.decision_id, []).append(AuditEntry(a.auditor.username, a.confirmed, a.reason, a.created_at))
    labels = dict(CheatDecision.Source.choices)
    rows = []
    for r in rollouts:
        group = r.group
        url = reverse("group", args=[project.name, group.run.name, group.uid])
        views = [
            SignalView(
                pk=s.pk,
                source=s.source,
                source_label=labels.get(s.source, s.source),
                author=s.author,
                reason=s.reason,
                evidence=evidence_links(url, r.index, s.evidence),
                confirmed=s.confirmed,
                decided_by=s.decided_by.username if s.decided_by else "",
                created_at=s.created_at,
                audits=audits.get(s.pk, []),
                rule=s.reason.partition(":")[0] if s.source == CheatDecision.Source.PRESCREEN else "",
                search_url=_search_url(project, s.reason) if s.source == CheatDecision.Source.SEARCH else "",
            )
            for s in signals.get(r.pk, [])
        ]
        state = "pending" if r.has_open else ("confirmed" if r.in_force else "overturned")
        rows.append(
            AuditRow(
                r.pk,
                r.index,
                group.uid,
                group.run.name,
                group.step_number,
                group.task.instance_id,
                url,
                state,
                r.in_force,
                views,
                graders_split=r.cheat_split,
            )
        )
    return rows


def audit_page(project: Project, *, scope: AuditScope, number, hidden_from=None) -> tuple[Page, list[AuditRow]]:
    """Page `number` of the audit queue and its rows (read in full). Rollouts on groups
    `hidden_from` still judges blind stay out until they submit (grader fields)."""
    page = Paginator(audit_rollouts(project, scope=scope, hidden_from=hidden_from), PER_PAGE).get_page(number)
    page.object_list = list(page.object_list)
    return page, audit_rows(project, page.object_list)
