"""Shared fixtures. The people in these tests:

- alice: admin of project "acme" (can ingest, sees everything in acme)
- bob: reviewer in "acme"
- carol: admin of project "other" only — acme's pages are 404 for her
- tess: trainer (read-only API token) in "acme"
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pytest
from django.contrib.auth import get_user_model

from grading.models import Membership, Project, Role
from grading.projects.tokens import issue_api_token

# Real third-party data and the method's test vectors, vendored with their licences: every
# test runs on a fresh clone, none may skip for want of data (see pytest_runtest_makereport).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
VECTORS = FIXTURES / "vectors"
MINI_SWE_AGENT = FIXTURES / "mini-swe-agent-gemini-3-pro"
OPENHANDS = FIXTURES / "openhands-multi-swe-bench"
MISSING_DATA = ("not present", "no vectors", "no test vectors", "no real data", "missing data", "fixture")


def pytest_configure(config):
    # A fast hasher for the people tests create: PBKDF2's deliberate 0.25 s per password is the
    # point in production and pure waste in a fixture that creates alice, bob and carol.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip for missing data is a failure: it would hide that a clone lacks what it ships."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).lower()
        if any(word in reason for word in MISSING_DATA):
            report.outcome = "failed"
            report.longrepr = f"skipped for missing data, which the repository must ship: {report.longrepr[2]}"


@pytest.fixture(autouse=True)
def eager_celery():
    """Tasks run in-process in tests, even where CI sets a real broker; the tests about the
    worker itself switch this off and start a real worker process."""
    from gagar_web.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = True


@pytest.fixture
def acme(db):
    return Project.objects.create(name="acme")


@pytest.fixture
def other_project(db):
    return Project.objects.create(name="other")


def _member(username: str, project: Project, role: str):
    user = get_user_model().objects.create_user(username=username, password=f"{username}-pass-123")
    Membership.objects.create(user=user, project=project, role=role)
    return user


@pytest.fixture
def alice(acme):
    return _member("alice", acme, Role.ADMIN)


@pytest.fixture
def bob(acme):
    return _member("bob", acme, Role.REVIEWER)


@pytest.fixture
def carol(other_project):
    return _member("carol", other_project, Role.ADMIN)


@pytest.fixture
def alice_token(alice, acme):
    _, secret = issue_api_token(username="alice", project_name="acme", role=Role.ADMIN)
    return secret


@pytest.fixture
def trainer_token(acme):
    _, secret = issue_api_token(username="tess", project_name="acme", role=Role.TRAINER)
    return secret


def line(obj) -> bytes:
    return orjson.dumps(obj)


def jsonl(*objs, gz: bool = False) -> bytes:
    body = b"".join(orjson.dumps(o) + b"\n" for o in objs)
    return gzip.compress(body) if gz else body


def small_group(uid: str = "t-1@1", *, run: str = "r1", step: int = 1, rewards=(1, 0, 1), instance_id: str = "t-1", **task) -> dict:
    return {
        "format": "gagar-group/1",
        "run": run,
        "step": step,
        "uid": uid,
        "task": {"instance_id": instance_id, "repo": "octo/widgets", "problem_statement": "Fix the widget.", **task},
        "rollouts": [
            {
                "index": i,
                "reward": r,
                "patch": f"diff --git a/w.py b/w.py\n--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = {i}\n+y = {i + 1}\n",
                "messages": [
                    {"role": "user", "content": "Fix the widget."},
                    {"role": "assistant", "content": "THOUGHT: look\n\n```bash\ncat w.py\n```", "action": "cat w.py", "observation": "x = 1"},
                ],
                "tests": {"FAIL_TO_PASS": {"success": ["t::a"] if r else [], "failure": [] if r else ["t::a"]}},
                "test_log": "t::a PASSED" if r else "t::a FAILED",
                "exit_status": "Submitted",
                "stats": {"tokens": 1000 + i, "turns": 1, "cost_usd": 0.01},
                "source": {"format": "test", "ref": f"fixture/{uid}/{i}"},
            }
            for i, r in enumerate(rewards)
        ],
    }


def load_real_groups() -> list[dict]:
    """The 16 real mini-swe-agent trajectories as gagar-group/1 groups (one rollout each)."""
    from grading.ingest.importers.mini_swe_agent import rollout_from_trajectory

    groups = []
    for traj_path in sorted((MINI_SWE_AGENT / "trajs").glob("*/*.traj.json")):
        instance_id = traj_path.parent.name
        traj = json.loads(traj_path.read_text())
        report_path = MINI_SWE_AGENT / "logs" / instance_id / "report.json"
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        rollout = rollout_from_trajectory(traj, index=0, report=report, ref=str(traj_path.relative_to(MINI_SWE_AGENT)))
        repo = instance_id.split("__")[0] + "/" + instance_id.split("__")[1].rsplit("-", 1)[0]
        problem = next((m["content"] for m in rollout["messages"] if m["role"] == "user"), "")
        groups.append(
            {
                "format": "gagar-group/1",
                "run": "gemini-3-pro-swebench",
                "step": 0,
                "uid": f"{instance_id}@0",
                "task": {"instance_id": instance_id, "repo": repo, "problem_statement": problem},
                "rollouts": [rollout],
            }
        )
    return groups
