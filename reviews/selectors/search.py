"""A search request read once for the page and the API: the query, the scope and what this
person may filter by (grading.search.selectors does the searching)."""

from __future__ import annotations

from dataclasses import dataclass

from grading.formats import params
from grading.formats.groupline import MAX_NAME
from grading.method.tiers import TIERS
from grading.models import Membership, Project, Run
from grading.search.query import Query, QueryError, parse_query
from grading.search.selectors import CHEAT_FILTERS, GraderFieldsHidden, SearchRefused, SearchScope
from reviews.selectors.blind import blind_comparison_sources, open_blind_group_ids
from reviews.selectors.browse import SEES_VERDICT
from reviews.selectors.lanes import search_lanes

FIELDS = ("q", "mode", "run", "step_min", "step_max", "passed", "tier", "cheat")


def sees_grader(membership: Membership) -> bool:
    """Whether this role may see, and so filter by, grader fields (the tier, cheat signals):
    auditors, adjudicators and admins; a reviewer never (reviews.selectors.browse)."""
    return bool(membership.capabilities & SEES_VERDICT)


@dataclass
class SearchRequest:
    query: Query
    scope: SearchScope
    sees_grader: bool

    def params(self) -> dict[str, str]:
        """The request's filters as query parameters (for the next page's link)."""
        out = {"q": self.query.raw}
        if not self.query.auto:
            out["mode"] = self.query.mode
        scope = self.scope
        for name, value in (
            ("run", scope.run.name if scope.run else None),
            ("step_min", scope.step_min),
            ("step_max", scope.step_max),
            ("tier", scope.tier),
            ("cheat", scope.cheat),
            ("passed", None if scope.passed is None else str(scope.passed).lower()),
        ):
            if value is not None and value != "":
                out[name] = str(value)
        return out


def read_search(data, *, project: Project, membership: Membership, user) -> SearchRequest:
    """The query and scope of `data` (request.GET or POST). QueryError for the query itself;
    SearchRefused(field, message) for a filter that is malformed, unknown or not this person's to use."""
    mode = data.get("mode") or "auto"
    query = parse_query(data.get("q"), mode=mode)
    scope = SearchScope(project=project, lane_of=search_lanes(project=project, user=user))
    scope.rollouts_hidden = blind_comparison_sources(project=project, user=user)
    run_name = data.get("run") or ""
    if run_name:
        if not params.usable_name(run_name, max_len=MAX_NAME):
            raise SearchRefused("run", "no such run")
        scope.run = Run.objects.filter(project=project, name=run_name).first()
        if scope.run is None:
            raise SearchRefused("run", f"no run {run_name[:MAX_NAME]!r} in {project.name}")
    try:
        scope.step_min = params.optional_whole(data.get("step_min") or None, "step_min")
        scope.step_max = params.optional_whole(data.get("step_max") or None, "step_max")
    except params.ParamError as exc:
        raise SearchRefused(exc.name, str(exc)) from None
    passed = data.get("passed") or ""
    if passed:
        if passed not in ("true", "false"):
            raise SearchRefused("passed", "passed must be true or false")
        scope.passed = passed == "true"
    grader = sees_grader(membership)
    tier, cheat = data.get("tier") or "", data.get("cheat") or ""
    if (tier or cheat) and not grader:
        raise GraderFieldsHidden("tier" if tier else "cheat")
    if cheat and cheat not in CHEAT_FILTERS:
        raise SearchRefused("cheat", f"cheat must be one of {', '.join(CHEAT_FILTERS)}")
    if tier and tier not in TIERS:  # (the selector refuses it too, but only once the search runs)
        raise SearchRefused("tier", f"tier must be one of {', '.join(TIERS)}")
    scope.tier, scope.cheat = tier or None, cheat or None
    if grader and (tier or cheat):
        scope.grader_hidden = open_blind_group_ids(project=project, user=user)
    return SearchRequest(query, scope, grader)


__all__ = ["FIELDS", "GraderFieldsHidden", "QueryError", "SearchRefused", "SearchRequest", "read_search", "sees_grader"]


def run_names(project: Project) -> list[str]:
    """The project's run names, for the search form's run filter."""
    return list(project.runs.order_by("name").values_list("name", flat=True))
