"""Every route of the site, for the tests that walk them all (tests/hostile): `routes()` lists
(route, name) outside the admin, `doors(lane)` fills each GET-able project route in for group
g1@1 of run r1 in acme, and QUERY/DOOR_QUERY are the query strings the blind-door tests add."""

from __future__ import annotations

import re

from django.urls import URLPattern, URLResolver, get_resolver

from grading.method.services.mappings import default_mapping

PARAM = re.compile(r"<(?:(?P<conv>\w+):)?(?P<name>\w+)>")


def routes() -> list[tuple[str, str | None]]:
    """(route, name) of every URL pattern outside the admin, includes flattened."""
    out = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                out.append((prefix + str(p.pattern), p.name))

    walk(get_resolver().url_patterns, "")
    return [(route, name) for route, name in out if not route.startswith(("admin/", "static/", "media/"))]


QUERY = "?project=acme&run=r1&step=1&slices=true&n_boot=0&show=all&status=all&mode=adjudicate&a=0&b=1"


# Search (and a rollout's hits) need a query, and take `mode` as their own (the last value of a repeated parameter wins):
# a search that finds g1's rollouts, so the door is opened onto them.
# The grader bench's API needs graders to compare: the one whose verdicts are open to everyone
# (a blind judge typing the blind grader's name gets it echoed, never its figures on g1).
DOOR_QUERY = {
    "search": "&q=w.py&mode=words",
    "api-search": "&q=w.py&mode=words",
    "rollout-hits": "&q=w.py&mode=words",
    "api-graders-compare": "&graders=open-grader@1",
}


def doors(lane: str = "1", *, run: str = "r1", uid: str = "g1@1", name: str | None = None) -> list[tuple[str, str]]:
    """(name, URL) of every GET-able project route, filled in for group `uid` of `run` (g1@1 of
    r1), rollout `lane` (#1, or how a blind judge names a rollout: its label), step 1, and
    `name` (a run's or comparison's name; the run's by default)."""
    values = {
        "project": "acme",
        "run": run,
        "uid": uid,
        "lane": lane,
        "step": "1",
        "name": name or run,
        "number": "1",
        "rollout_id": "1",
    }
    out = []
    for route, route_name in routes():
        if route in (
            "",
            "accounts/login/",
            "accounts/logout/",
            "healthz",
            "api/schema/",
            "api/docs/",
            "accounts/invite/<uidb64>/<token>/",
            "projects/new/",
        ):
            continue

        def value(match: re.Match, route_name=route_name, route=route) -> str:
            if match["name"] == "pk":
                return str(default_mapping().pk) if route_name and "mapping" in route_name else "1"
            assert match["name"] in values, f"route {route!r} has a parameter the blind-door matrix does not know"
            return values[match["name"]]

        out.append((route_name or route, "/" + PARAM.sub(value, route)))
    return out
