"""No page or API view runs a query itself: every SQL query a request issues comes from a
selector, a service, a presenter or the framework, never from a `views` or `api` module.

One request (or more) to every URL pattern the resolver knows, as a person who may see it,
on a small dataset of real trajectories; each query is traced to the innermost frame of the
stack that is in the project's own code (grading/, reviews/, gagar_web/), and that frame's
module must not be a `views` or `api` module. A URL pattern with no request here fails the
test, so a new page or endpoint is checked the day it lands.

People: alice is admin of acme (sees and may do everything there); her API token is acme's.
"""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import django
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, clear_url_caches, get_resolver, path

from grading.comparisons.services import create_comparison
from grading.method.guide import RUBRIC
from grading.method.services.mappings import default_mapping
from grading.models import ApiToken, Campaign, CheatDecision, FactorMapping, ImportJob, Membership, Rollout
from grading.projects.tokens import issue_api_token
from tests.helpers.groups import jsonl, small_group
from tests.helpers.ingest import NDJSON, ingest_groups
from tests.helpers.people import member
from tests.helpers.real_groups import load_real_long_groups
from tests.helpers.vendored import MINI_SWE_AGENT

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[1]
OWN = tuple(str(ROOT / package) + "/" for package in ("grading", "reviews", "gagar_web"))
SESSION_LOADING = tuple(str(Path(django.__file__).parent / "contrib" / app) + "/" for app in ("auth", "sessions"))
# Not reads or writes: an atomic service called from a view opens its savepoint before its
# own frame exists (the view's queries inside a transaction it opened are still found).
TRANSACTION_CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT", "ROLLBACK")
THIN = ("views", "api")  # a module under a package of one of these names runs no query itself

# Patterns outside this test's reach: Django's admin (its own views, under django.contrib).
NOT_OURS = ("admin/",)


@dataclass
class Origins:
    """Where a request's queries came from: (module, function) -> the routes that ran them."""

    by_origin: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    route: str = ""

    def offenders(self) -> dict[tuple[str, str], set[str]]:
        return {origin: routes for origin, routes in self.by_origin.items() if is_thin(origin[0])}


def is_thin(module: str) -> bool:
    return any(part in THIN for part in module.split(".")[1:-1]) or module.split(".")[-1] in THIN


def origin_of(frame: FrameType | None) -> tuple[str, str] | None:
    """The innermost frame from `frame` outwards in the project's own code, as (dotted module,
    qualified function name); None when the query came from the framework alone: the test
    client, or Django loading the session and its user (`request.user` is lazy, so the first
    code to read it, a view or not, triggers that load)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith(SESSION_LOADING):
            return None
        if filename.startswith(OWN):
            module = Path(filename).relative_to(ROOT).with_suffix("").as_posix().replace("/", ".")
            return module.removesuffix(".__init__"), frame.f_code.co_qualname
        frame = frame.f_back
    return None


@contextmanager
def recording() -> Iterator[Origins]:
    origins = Origins()

    def wrapper(execute, sql, params, many, context):
        origin = None if sql.lstrip().upper().startswith(TRANSACTION_CONTROL) else origin_of(sys._getframe(1))
        if origin is not None:
            origins.by_origin.setdefault(origin, set()).add(origins.route)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield origins


def patterns() -> list[str]:
    """Every URL pattern outside NOT_OURS, includes flattened, as its full route."""
    out = []

    def walk(items, prefix: str) -> None:
        for p in items:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                out.append(prefix + str(p.pattern))

    walk(get_resolver().url_patterns, "")
    return [route for route in out if not route.startswith(NOT_OURS)]


@dataclass
class Call:
    """One request: to `route` (its pattern) at `url`, by `method`, answered with one of `ok`."""

    route: str
    method: str
    url: str
    kwargs: dict = field(default_factory=dict)
    ok: tuple[int, ...] = (200,)
    client: str = "alice"  # alice's session; "token": her API token; "anonymous": nobody


def json_body(value: dict) -> dict:
    """The test client's keyword arguments for a JSON request body."""
    return {"data": json.dumps(value), "content_type": "application/json"}


@pytest.fixture
def world(acme, alice, alice_token):
    """Two real groups of four rollouts each (long trajectories) in run "long", step 0, and a
    small one of three in run "r1" step 1; a cheat signal on the first rollout, for the audit;
    an import job; a second member to change. alice is also site staff here, who may create
    projects."""
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])
    groups = [{**g, "run": "long"} for g in load_real_long_groups(4)[:2]]
    ingest_groups(acme, *groups, small_group("t-1@1"))
    rollout = Rollout.objects.get(group__uid=groups[0]["uid"], index=0)
    CheatDecision.objects.create(rollout=rollout, source="prescreen", author="prescreen", reason="upstream_history")
    job = ImportJob.objects.create(project=acme, run=rollout.group.run, step=0, created_by=alice)
    ingest_groups(acme, *[{**g, "run": "long-b"} for g in groups])  # the same tasks again, to compare blind
    create_comparison(project=acme, body={"name": "cmp", "a": {"run": "long"}, "b": {"run": "long-b"}})
    bob = member("bob", acme, "reviewer")
    return {
        "uid": groups[0]["uid"],
        "other_uid": groups[1]["uid"],
        "rollout_id": rollout.pk,
        "job": job.pk,
        "bob_membership": Membership.objects.get(user=bob).pk,
    }


def calls(world: dict, mapping_id: int, token_id: int, invite_path: str) -> list[Call]:
    """The requests: a GET of every pattern, then the main writes with valid bodies."""
    p = "/projects/acme/"
    run = f"{p}runs/long/"
    g = f"{run}groups/{world['uid']}/"
    og = f"{run}groups/{world['other_uid']}/"
    htmx = {"HTTP_HX_REQUEST": "true"}
    api = "/api/v1/"
    q = {"project": "acme"}
    qr = {"project": "acme", "run": "long"}
    judgment = {"tier-0": "T1", "tier-1": "T2", "tier-2": "T3", "tier-3": "T1", "seen_version": "0"}
    traj = next(MINI_SWE_AGENT.glob("trajs/*/*.traj.json"))
    R = "projects/<slug:project>/"
    RUN = R + "runs/<str:run>/"
    G = R + "runs/<str:run>/groups/<path:uid>/"
    L = G + "rollouts/<lane:lane>/"
    return [
        # pages
        Call("", "get", "/", ok=(302,)),
        Call("accounts/login/", "get", "/accounts/login/", client="anonymous"),
        Call("healthz", "get", "/healthz"),
        Call("api/schema/", "get", "/api/schema/"),
        Call("api/docs/", "get", "/api/docs/"),
        Call("accounts/invite/<uidb64>/<token>/", "get", invite_path, ok=(302,), client="anonymous"),
        Call("projects/", "get", "/projects/"),
        Call("projects/new/", "get", "/projects/new/"),
        Call(R, "get", p),
        Call(R + "guide/", "get", f"{p}guide/"),
        Call(R + "checks/", "get", f"{p}checks/"),
        Call(R + "health/", "get", f"{p}health/"),
        Call(R + "team/", "get", f"{p}team/"),
        Call(RUN, "get", run),
        Call(RUN + "steps/<int:step>/", "get", f"{run}steps/0/"),
        Call(RUN + "steps/<int:step>/grading/", "get", f"{run}steps/0/grading/"),
        Call(RUN + "imports/", "get", f"{run}imports/"),
        Call(
            RUN + "timeline/", "get", f"{run}timeline/?compare=other&show=desk:pass_rate&overlay=desk:pass_rate&with=desk:tokens"
        ),
        Call(RUN + "imports/jobs/", "get", f"{run}imports/jobs/", kwargs=htmx),
        Call(R + "review/", "get", f"{p}review/"),
        Call(R + "adjudication/", "get", f"{p}adjudication/"),
        Call(R + "calibration/", "get", f"{p}calibration/"),
        Call(R + "audit/", "get", f"{p}audit/"),
        Call(R + "audit/scanners/", "get", f"{p}audit/scanners/"),
        Call(
            R + "calibration/bench/",
            "get",
            f"{p}calibration/bench/",
            kwargs={"data": {"run": "long", "grader": ["heuristic@1", "jury:j@1"]}},
        ),
        Call(R + "calibration/campaigns/", "get", f"{p}calibration/campaigns/"),
        Call(R + "comparisons/", "get", f"{p}comparisons/"),
        Call(R + "comparisons/<str:name>/", "get", f"{p}comparisons/cmp/"),
        Call(R + "calibration/campaigns/", "get", f"{p}calibration/campaigns/", kwargs=htmx),
        Call(R + "search/", "get", f"{p}search/", kwargs={"data": {"q": "django"}}),
        Call(G, "get", g),
        Call(G + "compare/", "get", f"{g}compare/", kwargs={"data": {"a": "0", "b": "1"}, **htmx}),
        Call(L + "hits/", "get", f"{g}rollouts/0/hits/", kwargs={"data": {"q": "django"}}),
        Call(L + "turns/", "get", f"{g}rollouts/0/turns/", kwargs=htmx),
        Call(L + "diff/", "get", f"{g}rollouts/0/diff/", kwargs={"data": {"view": "split"}, **htmx}),
        Call(L + "extra-files/", "get", f"{g}rollouts/0/extra-files/", kwargs={"data": {"view": "split"}, **htmx}),
        Call(L + "log/", "get", f"{g}rollouts/0/log/", kwargs=htmx),
        Call(L + "files/", "get", f"{g}rollouts/0/files/", kwargs={"data": {"path": "README.md"}, **htmx}),
        # the API, read
        Call("api/v1/groups/", "get", f"{api}groups/", kwargs={"data": q}, client="token"),
        Call("api/v1/groups/<path:uid>/", "get", f"{api}groups/{world['uid']}/", kwargs={"data": qr}, client="token"),
        Call("api/v1/imports/", "get", f"{api}imports/", kwargs={"data": q}, client="token"),
        Call("api/v1/imports/<int:pk>/", "get", f"{api}imports/{world['job']}/", kwargs={"data": q}, client="token"),
        Call("api/v1/advantages/", "get", f"{api}advantages/", kwargs={"data": qr}, client="token"),
        Call("api/v1/mappings/", "get", f"{api}mappings/", kwargs={"data": q}, client="token"),
        Call("api/v1/mappings/active/", "get", f"{api}mappings/active/", kwargs={"data": qr}, client="token"),
        Call("api/v1/mappings/<int:pk>/", "get", f"{api}mappings/{mapping_id}/", kwargs={"data": q}, client="token"),
        Call("api/v1/runs/", "get", f"{api}runs/", kwargs={"data": q}, client="token"),
        Call("api/v1/juries/", "get", f"{api}juries/", kwargs={"data": q}, client="token"),
        Call("api/v1/graders/", "get", f"{api}graders/", kwargs={"data": q}, client="token"),
        Call("api/v1/runs/<str:name>/", "get", f"{api}runs/long/", kwargs={"data": q}, client="token"),
        Call("api/v1/runs/<str:name>/metrics/", "get", f"{api}runs/long/metrics/", kwargs={"data": q}, client="token"),
        Call("api/v1/steps/<int:number>/", "get", f"{api}steps/0/", kwargs={"data": qr}, client="token"),
        Call("api/v1/agreement/", "get", f"{api}agreement/", kwargs={"data": qr}, client="token"),
        Call(
            "api/v1/graders/compare/",
            "get",
            f"{api}graders/compare/",
            kwargs={"data": {**qr, "graders": "heuristic@1,jury:j@1", "n_boot": "20"}},
            client="token",
        ),
        Call("api/v1/grader-bench/", "get", f"{api}grader-bench/", kwargs={"data": qr}, client="token"),
        Call("api/v1/grader-bench/", "get", f"{api}grader-bench/", kwargs={"data": {**qr, "format": "parquet"}}, client="token"),
        Call("api/v1/campaigns/", "get", f"{api}campaigns/", kwargs={"data": q}, client="token"),
        Call("api/v1/comparisons/", "get", f"{api}comparisons/", kwargs={"data": q}, client="token"),
        Call("api/v1/comparisons/<str:name>/", "get", f"{api}comparisons/cmp/", kwargs={"data": q}, client="token"),
        Call(
            "api/v1/comparisons/<str:name>/dataset/", "get", f"{api}comparisons/cmp/dataset/", kwargs={"data": q}, client="token"
        ),
        Call("api/v1/labeled-groups/", "get", f"{api}labeled-groups/", kwargs={"data": qr}, client="token"),
        Call("api/v1/search/", "get", f"{api}search/", kwargs={"data": {**q, "q": "django"}}, client="token"),
        Call("api/v1/scanners/", "get", f"{api}scanners/", kwargs={"data": q}, client="token"),
        Call("api/v1/scan-labels/", "get", f"{api}scan-labels/", kwargs={"data": q}, client="token"),
        Call("api/v1/scanners/custom/", "get", f"{api}scanners/custom/", kwargs={"data": q}, client="token"),
        Call("api/v1/scanners/future-history/", "get", f"{api}scanners/future-history/", kwargs={"data": q}, client="token"),
        Call("api/v1/health-thresholds/", "get", f"{api}health-thresholds/", kwargs={"data": q}, client="token"),
        Call("api/v1/groups/", "get", f"{api}groups/", kwargs={"data": q}),  # a session, too
        # the API, written
        Call(
            "api/v1/groups/",
            "post",
            f"{api}groups/?project=acme",
            kwargs={"data": jsonl(small_group("t-2@1", instance_id="t-2")), "content_type": NDJSON},
            client="token",
        ),
        Call(
            "api/v1/runs/<str:name>/metrics/",
            "post",
            f"{api}runs/long/metrics/?project=acme",
            kwargs=json_body({"step": 0, "metrics": {"actor/entropy": 0.4}}),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/imports/",
            "post",
            f"{api}imports/?project=acme",
            kwargs={"data": {"run": "imported", "step": "1", "file": [SimpleUploadedFile(traj.name, traj.read_bytes())]}},
            ok=(201, 202),
            client="token",
        ),
        Call(
            "api/v1/mappings/",
            "post",
            f"{api}mappings/?project=acme",
            kwargs=json_body({"name": "steep", "bands": {"T1": 1.0, "T2": 0.5, "T3": 0.1}}),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/mappings/<int:pk>/activate/",
            "post",
            f"{api}mappings/{{steep}}/activate/?project=acme",
            kwargs=json_body({"run": "long", "reason": "steeper"}),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/runs/",
            "post",
            f"{api}runs/?project=acme",
            kwargs=json_body({"name": "fresh", "baseline": "mean"}),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/graders/",
            "post",
            f"{api}graders/?project=acme",
            kwargs=json_body({"name": "judge-b", "model": "model-b", "endpoint_env": "GRADER_BASE_URL"}),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/juries/",
            "post",
            f"{api}juries/?project=acme",
            kwargs=json_body({"name": "pair", "members": ["heuristic@1", "ext@1"], "rule": "agree_or_abstain"}),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/runs/<str:name>/",
            "patch",
            f"{api}runs/long/?project=acme",
            kwargs=json_body({"grading_deadline_seconds": 600}),
            client="token",
        ),
        Call(
            "api/v1/steps/<int:number>/grade/",
            "post",
            f"{api}steps/0/grade/?project=acme&run=long",
            kwargs=json_body({"backend": "heuristic"}),
            ok=(202,),
            client="token",
        ),
        Call(
            "api/v1/verdicts/",
            "post",
            f"{api}verdicts/?project=acme",
            kwargs=json_body(
                {
                    "run": "r1",
                    "step": 1,
                    "uid": "t-1@1",
                    "grader": "acme-fleet@1",
                    "judgments": [
                        {"rollout": r, "tier": "T1", "rank": 1, "scores": dict.fromkeys(RUBRIC, 4), "cheat": False}
                        for r in (0, 2)
                    ],
                }
            ),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/scan-labels/",
            "post",
            f"{api}scan-labels/?project=acme",
            kwargs=json_body(
                [{"group": world["uid"], "run": "long", "rollout": 0, "category": "history_search", "label": "honest"}]
            ),
            client="token",
        ),
        Call(
            "api/v1/scanners/custom/",
            "post",
            f"{api}scanners/custom/?project=acme",
            kwargs=json_body({"name": "peek", "kind": "pattern", "definition": {"scope": "commands", "all_of": ["cat /eval"]}}),
            ok=(201,),
            client="token",
        ),
        Call(
            "api/v1/scanners/future-history/",
            "put",
            f"{api}scanners/future-history/?project=acme",
            kwargs=json_body({"prefixes": ["commit0__"]}),
            client="token",
        ),
        Call(
            "api/v1/health-thresholds/",
            "put",
            f"{api}health-thresholds/?project=acme",
            kwargs=json_body({"thresholds": {"window": 12}}),
            client="token",
        ),
        Call(
            "api/v1/scanners/custom/<str:name>/runs/",
            "post",
            f"{api}scanners/custom/peek/runs/?project=acme",
            kwargs=json_body({"run": "long"}),
            ok=(202,),
            client="token",
        ),
        Call(
            "api/v1/campaigns/",
            "post",
            f"{api}campaigns/?project=acme",
            kwargs=json_body({"grader": "heuristic", "scope": {"run": "long", "step": 0}}),
            ok=(202,),
            client="token",
        ),
        Call("api/v1/campaigns/<int:pk>/", "get", f"{api}campaigns/{{campaign}}/", kwargs={"data": q}, client="token"),
        Call(
            "api/v1/comparisons/",
            "post",
            f"{api}comparisons/?project=acme",
            kwargs=json_body({"name": "cmp-api", "a": {"run": "long"}, "b": {"run": "long-b"}, "per_side": 2}),
            ok=(201,),
            client="token",
        ),
        Call(
            R + "comparisons/",
            "post",
            f"{p}comparisons/",
            kwargs={"data": {"name": "cmp-page", "a_run": "long", "b_run": "long-b"}},
            ok=(302,),
        ),
        Call(
            "api/v1/campaigns/<int:pk>/cancel/",
            "post",
            f"{api}campaigns/{{campaign}}/cancel/?project=acme",
            ok=(200, 409),
            client="token",
        ),
        # pages, written
        Call(
            R + "calibration/campaigns/",
            "post",
            f"{p}calibration/campaigns/",
            kwargs={"data": {"grader": "heuristic", "run": "long"}},
            ok=(302,),
        ),
        Call(R + "calibration/campaigns/<int:pk>/cancel/", "post", f"{p}calibration/campaigns/{{campaign}}/cancel/", ok=(302,)),
        Call("projects/new/", "post", "/projects/new/", kwargs={"data": {"name": "fresh-project"}}, ok=(302,)),
        Call(
            R + "guide/",
            "post",
            f"{p}guide/",
            kwargs={"data": {"action": "reset"}},
            ok=(302,),
        ),
        Call(R + "health/", "post", f"{p}health/", kwargs={"data": {"window": "12", "entropy_rise": "0.2"}}, ok=(302,)),
        Call(
            R + "checks/",
            "post",
            f"{p}checks/",
            kwargs={"data": {"enabled": "on", "max_checks": "3", "seconds": "20", "memory_mb": "512"}},
            ok=(302,),
        ),
        Call(
            R + "team/members/",
            "post",
            f"{p}team/members/",
            kwargs={"data": {"username": "alice", "role": "admin"}},
            ok=(200, 302, 422),
        ),
        Call(
            R + "team/invites/",
            "post",
            f"{p}team/invites/",
            kwargs={"data": {"username": "nina", "email": "", "role": "reviewer"}},
            ok=(201,),
        ),
        Call(
            R + "team/members/<int:pk>/",
            "post",
            f"{p}team/members/{world['bob_membership']}/",
            kwargs={"data": {"action": "role", "role": "auditor"}},
            ok=(302,),
        ),
        Call(
            R + "team/tokens/",
            "post",
            f"{p}team/tokens/",
            kwargs={"data": {"username": "trainer-bot", "role": "trainer", "name": "verl"}},
            ok=(200, 201),
        ),
        Call(R + "team/tokens/<int:pk>/revoke/", "post", f"{p}team/tokens/{token_id}/revoke/", ok=(302,)),
        Call(RUN + "policy/", "post", f"{run}policy/", kwargs={"data": {"baseline": "mean"}}, ok=(302,)),
        Call(
            RUN + "steps/<int:step>/grading/",
            "post",
            f"{run}steps/0/grading/",
            kwargs={"data": {"backend": "heuristic"}},
            ok=(302,),
        ),
        Call(
            RUN + "imports/",
            "post",
            f"{run}imports/",
            kwargs={"data": {"step": "2", "file": [SimpleUploadedFile(traj.name, traj.read_bytes())]}},
            ok=(200, 201, 302),
        ),
        Call(
            R + "review/policy/",
            "post",
            f"{p}review/policy/",
            kwargs={"data": {"run": "long", "overlap_percent": "50", "lease_minutes": "30"}},
            ok=(302,),
        ),
        Call(R + "review/next/", "post", f"{p}review/next/", kwargs={"data": {"run": "long"}}, ok=(302,)),
        Call(G + "judge-blind/", "post", f"{g}judge-blind/", ok=(302,)),
        Call(G + "show-verdict/", "post", f"{g}show-verdict/", ok=(302,)),
        Call(G + "draft/", "post", f"{g}draft/", kwargs={"data": judgment}, ok=(200, 204)),
        Call(G + "judgment/", "post", f"{g}judgment/", kwargs={"data": judgment}, ok=(302,)),
        Call(G + "reveal/", "post", f"{g}reveal/", ok=(302,)),
        Call(G + "judge-blind/", "post", f"{og}judge-blind/", ok=(302,)),
        Call(G + "skip/", "post", f"{og}skip/", ok=(302,)),
        Call(
            G + "adjudication/draft/",
            "post",
            f"{g}adjudication/draft/",
            kwargs={"data": {"tier-0": "T1"}},
            ok=(200, 204, 403, 409),
        ),
        Call(
            G + "adjudication/",
            "post",
            f"{g}adjudication/",
            kwargs={"data": {**judgment, "reason": "settled"}},
            ok=(302, 403, 409, 422),
        ),
        Call(
            R + "audit/rollouts/<int:rollout_id>/",
            "post",
            f"{p}audit/rollouts/{world['rollout_id']}/",
            kwargs={"data": {"verdict": "confirm", "reason": "reads the fix"}},
            ok=(200, 302),
        ),
        Call(
            R + "audit/bulk/",
            "post",
            f"{p}audit/bulk/",
            kwargs={"data": {"search": "django", "verdict": "confirm", "reason": "reads upstream"}},
            ok=(200, 302),
        ),
        Call(R + "search/signals/", "post", f"{p}search/signals/", kwargs={"data": {"q": "django"}}, ok=(200, 302)),
        Call(
            R + "calibration/minimum/",
            "post",
            f"{p}calibration/minimum/",
            kwargs={"data": {"groups": "2", "tier_pairs": "1", "run": "long"}},
            ok=(302,),
        ),
        Call(
            R + "calibration/activate/",
            "post",
            f"{p}calibration/activate/",
            kwargs={"data": {"run": "long", "reason": "enough for this project", "override": "1"}},
            ok=(302,),
        ),
        Call("accounts/logout/", "post", "/accounts/logout/", ok=(200, 302)),  # last: alice is signed out
    ]


def run_calls(planned: list[Call], clients: dict[str, Client], origins: Origins, fill: Callable[[str], str]) -> None:
    for call in planned:
        origins.route = call.route
        response = getattr(clients[call.client], call.method)(fill(call.url), **call.kwargs)
        assert response.status_code in call.ok, (call.method, call.url, response.status_code, response.content[:300])


def uncovered(planned: list[Call]) -> set[str]:
    return set(patterns()) - {call.route for call in planned}


def invite_path(client: Client) -> str:
    r = client.post("/projects/acme/team/invites/", {"username": "olga", "email": "", "role": "reviewer"})
    assert r.status_code == 201
    link = re.search(r'data-testid="invite-link">([^<]+)<', r.content.decode()).group(1)
    return link.removeprefix("http://testserver")


def offenders_report(found: dict[tuple[str, str], set[str]]) -> str:
    return "\n".join(f"  {m}.{f}  (from {', '.join(sorted(routes))})" for (m, f), routes in sorted(found.items()))


def test_no_view_or_api_module_queries_the_database(world, alice, alice_token):
    clients = {"alice": Client(), "token": Client(HTTP_AUTHORIZATION=f"Token {alice_token}"), "anonymous": Client()}
    clients["alice"].force_login(alice)
    mapping_id = default_mapping().pk
    issue_api_token(username="revocable", project_name="acme", role="trainer")
    token_id = ApiToken.objects.get(user__username="revocable").pk
    planned = calls(world, mapping_id, token_id, invite_path(clients["alice"]))
    assert not uncovered(planned), f"URL patterns with no request here: add one to calls(): {sorted(uncovered(planned))}"

    def fill(url: str) -> str:
        if "{steep}" in url:
            return url.replace("{steep}", str(FactorMapping.objects.get(name="steep", project__name="acme").pk))
        if "{campaign}" in url:
            return url.replace("{campaign}", str(Campaign.objects.filter(project__name="acme").latest("pk").pk))
        return url

    with recording() as origins:
        run_calls(planned, clients, origins, fill)
    found = origins.offenders()
    assert not found, "queries issued from a view or API module (move them to a selector, service or presenter):\n" + (
        offenders_report(found)
    )


PLANTED_VIEW = """
from django.http import HttpResponse
from grading.models import Project


def planted(request):
    return HttpResponse(str(Project.objects.count()))
"""


def test_a_query_planted_in_a_view_is_found_and_its_pattern_must_be_covered(settings, acme):
    """A view module under grading/views/ that counts projects itself: the recorder names it,
    and its URL pattern, which no request covers, is reported as not covered."""
    module = types.ModuleType("grading.views.planted")
    exec(compile(PLANTED_VIEW, str(ROOT / "grading" / "views" / "planted.py"), "exec"), module.__dict__)
    urls = types.ModuleType("planted_urls")
    urls.urlpatterns = [path("planted/", module.planted, name="planted"), *get_resolver().url_patterns]
    sys.modules["planted_urls"] = urls
    settings.ROOT_URLCONF = "planted_urls"
    clear_url_caches()
    try:
        assert "planted/" in uncovered([])
        with recording() as origins:
            origins.route = "planted/"
            assert Client().get("/planted/").content == b"1"
        assert origins.offenders() == {("grading.views.planted", "planted"): {"planted/"}}
    finally:
        del sys.modules["planted_urls"]
        clear_url_caches()
