"""GET /api/v1/search/: a project's rollouts matching a query, one result per rollout with its hits.

Thin: the request is read by reviews.selectors.search (query, scope, who may filter by
grader fields) and searched by grading.search.selectors. A query that cannot be searched
(empty, over 1,000 characters, an unclosed quote...) is a 422 naming `q`; a malformed
filter a 400 naming it; a grader filter (tier, cheat) asked by a role that does not see
grader verdicts a 403.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from grading.api.errors import error
from grading.api.scoping import membership_for_request
from grading.formats import params
from grading.models import Capability
from grading.search.query import MAX_QUERY_CHARS, QueryError
from grading.search.selectors import COUNT_CAP, MAX_PAGE_SIZE, PAGE_SIZE, GraderFieldsHidden, SearchRefused, search_rollouts
from grading.search.text import FIELD_LABELS
from reviews.presenters import search_links
from reviews.selectors.search import read_search


class SearchHitSerializer(serializers.Serializer):
    where = serializers.ChoiceField(choices=["turn", "patch", "test"])
    field = serializers.ChoiceField(
        choices=list(FIELD_LABELS),
        help_text="which field holds it: a turn's content, thought, "
        "action (the command), tool_call or observation; a patch line or path; a test id",
    )
    turn = serializers.IntegerField(allow_null=True, help_text="the message's position (the group page's #turn-<index>-<turn>)")
    path = serializers.CharField(allow_blank=True, help_text="patch hits: the file")
    line = serializers.IntegerField(allow_null=True, help_text="patch hits: the new-side line number")
    occurrences = serializers.IntegerField(help_text="literal mode: how often the text occurs in that field")
    snippet = serializers.CharField(help_text="HTML: the surrounding text escaped, the match in <mark>")
    url = serializers.CharField(help_text="opens the group page at the turn, the patch row, or the tests")


class SearchResultSerializer(serializers.Serializer):
    run = serializers.CharField()
    step = serializers.IntegerField()
    uid = serializers.CharField()
    index = serializers.IntegerField(
        required=False, help_text="the rollout's index; left out on a group the caller judges blind, where `lane` is its label"
    )
    lane = serializers.CharField(
        help_text="how the caller names the rollout: its index, or (judging its group blind) its lane label, A, B, C..."
    )
    passed = serializers.BooleanField(allow_null=True)
    hit_count = serializers.IntegerField(help_text="fields of the rollout holding the query (one hit each), in the part read")
    hits_complete = serializers.BooleanField(help_text="false: the page's reading budget ran out; there may be more hits")
    hits_more = serializers.BooleanField(
        help_text="true: reading stopped at the hits shown (`hit_count` is at least); "
        "the group page and the hits endpoint count them all"
    )
    hits = SearchHitSerializer(many=True, help_text="the first hits; the group page walks all of them")


class ScanSerializer(serializers.Serializer):
    scanned = serializers.IntegerField(help_text="rollouts of the scope read so far, this page included")
    in_scope = serializers.IntegerField()
    complete = serializers.BooleanField(help_text="true: nothing of the scope is left to read")


# What GET /api/v1/search/ answers: the page the view assembles, rendered through it, so the response
# and its schema are one (fields in the order the view writes them).
class SearchPageSerializer(serializers.Serializer):
    count = serializers.IntegerField(
        help_text=f"matching rollouts, counted exactly up to {COUNT_CAP:,} (or estimated: `count_estimated`)"
    )
    count_capped = serializers.BooleanField(help_text=f"true: more than {COUNT_CAP:,} match and count says {COUNT_CAP:,}")
    count_estimated = serializers.BooleanField(
        help_text="true: a common literal or phrase, read rollout by rollout for this "
        "page; `count` is the share of the rollouts read times the scope"
    )
    mode = serializers.ChoiceField(choices=["words", "literal"], help_text="how the query was searched")
    auto = serializers.BooleanField(help_text="true: the mode was chosen from the query (mode=auto, the default)")
    indexed = serializers.BooleanField(help_text="false: some rollouts of the scope are stored but not indexed yet (`pending`)")
    pending = serializers.IntegerField(help_text="rollouts of the scope waiting for the search index")
    scan_capped = serializers.BooleanField(
        help_text="SQLite (`make run`) words only: not every candidate was checked "
        "(more than 50,000, or more text than one search may read); narrow the search"
    )
    scan = ScanSerializer(
        allow_null=True,
        help_text="set when the index could not narrow the query (a literal like `==`): "
        "rollouts are read in turn, a bounded number a page, and `count` is this page's",
    )
    results = SearchResultSerializer(many=True)
    next = serializers.CharField(allow_null=True, help_text="cursor of the next page, or null")


def _result(result) -> dict:
    rollout = result.rollout
    group = rollout.group
    named = {"index": rollout.index} if result.lane == str(rollout.index) else {}  # a blind judge's: the label only
    return {
        "run": group.run.name,
        "step": group.step_number,
        "uid": group.uid,
        **named,
        "lane": result.lane,
        "passed": rollout.passed,
        "hit_count": result.hit_count,
        "hits_complete": result.hits_complete,
        "hits_more": result.hits_more,
        "hits": [
            {
                "where": h.where,
                "field": h.field,
                "turn": h.turn,
                "path": h.path,
                "line": h.line,
                "occurrences": h.occurrences,
                "snippet": str(h.snippet),
                "url": h.url,
            }
            for h in result.hits
        ],
    }


class SearchView(APIView):
    @extend_schema(
        operation_id="search_rollouts",
        parameters=[
            OpenApiParameter("project", str, required=True, description="the project searched (a token implies its own)"),
            OpenApiParameter(
                "q",
                str,
                required=True,
                description=f'words (all of them), "phrases", prefix*; at most {MAX_QUERY_CHARS} characters',
            ),
            OpenApiParameter(
                "mode",
                str,
                enum=["auto", "words", "literal"],
                description="literal: the exact substring, case-sensitive; auto (default): literal when "
                "the query looks like a command (`sed -i`, `git diff`), else words",
            ),
            OpenApiParameter("run", str, description="one run"),
            OpenApiParameter("step_min", int),
            OpenApiParameter("step_max", int),
            OpenApiParameter("passed", bool, description="only passing (true) or failing (false) rollouts"),
            OpenApiParameter(
                "tier",
                str,
                enum=["T1", "T2", "T3"],
                description="latest valid verdict's tier (auditors, adjudicators, admins only)",
            ),
            OpenApiParameter(
                "cheat",
                str,
                enum=["any", "confirmed"],
                description="with a cheat signal / a confirmed one (auditors, adjudicators, admins only)",
            ),
            OpenApiParameter("cursor", str, description="`next` of the previous page"),
            OpenApiParameter("page_size", int, description=f"default {PAGE_SIZE}, at most {MAX_PAGE_SIZE}"),
        ],
        responses={
            200: SearchPageSerializer,
            400: OpenApiResponse(description="a malformed filter (`field` names it)"),
            403: OpenApiResponse(description="a grader filter your role may not use"),
            422: OpenApiResponse(description="a query that cannot be searched (`field`: q or mode)"),
        },
        summary="Search a project's rollouts (messages, patches, test names)",
    )
    def get(self, request):
        project, membership = membership_for_request(request, Capability.VIEW)
        try:
            search = read_search(request.query_params, project=project, membership=membership, user=request.user)
        except QueryError as exc:
            return error(status.HTTP_422_UNPROCESSABLE_ENTITY, str(exc), field=exc.field)
        except SearchRefused as exc:
            code = status.HTTP_403_FORBIDDEN if isinstance(exc, GraderFieldsHidden) else status.HTTP_400_BAD_REQUEST
            return error(code, str(exc), field=exc.field)
        cursor = params.optional_whole(request.query_params.get("cursor"), "cursor", maximum=params.MAX_ID)  # ParamError: a 400
        limit = params.optional_whole(request.query_params.get("page_size"), "page_size", minimum=1, maximum=MAX_PAGE_SIZE)
        page = search_links.linked_page(
            search_rollouts(
                query=search.query, scope=search.scope, sees_grader=search.sees_grader, after=cursor, limit=limit or PAGE_SIZE
            )
        )
        scan = page.scan
        body = {
            "count": page.count,
            "count_capped": page.count_capped,
            "count_estimated": page.count_estimated,
            "mode": search.query.mode,
            "auto": search.query.auto,
            "indexed": page.indexed,
            "pending": page.pending,
            "scan_capped": page.scan_capped,
            "scan": {"scanned": scan.scanned, "in_scope": scan.in_scope, "complete": scan.complete} if scan else None,
            "results": [_result(r) for r in page.results],
            "next": str(page.next_cursor) if page.next_cursor is not None else None,
        }
        return Response(SearchPageSerializer(body).data)
