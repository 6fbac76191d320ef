"""A verdict an external grader posts (POST /api/v1/verdicts/), as the verdict tests build and send it."""

from __future__ import annotations

import json

from grading.method.guide import RUBRIC

URL = "/api/v1/verdicts/?project=acme"
SCORES = dict.fromkeys(RUBRIC, 4)


def verdict_body(*, second: str = "T2", **changes) -> dict:
    """acme-fleet@3's verdict on group t-1@1 of r1 step 1: rollout 0 T1, rollout 2 `second` with a
    cited test log line; `changes` replace top-level fields."""
    out = {
        "run": "r1",
        "step": 1,
        "uid": "t-1@1",
        "grader": "acme-fleet@3",
        "judgments": [
            {"rollout": 0, "tier": "T1", "rank": 1, "scores": dict(SCORES), "cheat": False},
            {
                "rollout": 2,
                "tier": second,
                "rank": 2,
                "scores": dict(SCORES),
                "cheat": False,
                "evidence": [{"kind": "test", "rollout": 2, "locator": "log:1", "note": "slower"}],
            },
        ],
    }
    out.update(changes)
    return out


def post_verdict(client, token: str, data) -> tuple[int, dict]:
    r = client.post(URL, json.dumps(data), content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")
    return r.status_code, r.json()
