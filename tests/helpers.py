"""Plain helpers the tests share (fixtures live in the conftest files).

- the vendored data: FIXTURES, VECTORS, MINI_SWE_AGENT, MINI_SWE_AGENT_MORE, OPENHANDS, `load_real_groups()`;
  `real_groups(folder)` reads either mini-swe-agent folder, `load_real_long_groups()` puts all 64
  real trajectories into groups of several rollouts
- a person: `member(username, project, role)`
- a group line: `small_group(uid, ...)` builds one gagar-group/1 group; `line(group)` is its
  bytes, `jsonl(*groups)` a request body (a group given as bytes is a raw line)
- ingest through the API with a token: `post_lines(client, token, body)` (the response, for
  tests of the API itself), `post_groups(client, token, *groups)` (must succeed; its report)
- ingest through the service, no HTTP: `ingest_groups(project, *groups)` (must succeed; its report)
- a judging form as a person sends it: `as_lanes(data, user, group)` names rollouts by the lane
  labels a blind judge's page shows (`tier-C`), not by index (`tier-3`)
- a multi-model group (issue 25): `multi_model_group()`, its producers' values `producer_values()`,
  and `scratch_files_group()`, the same with a shared change, scratch files and a rollout without tests
- a real Celery worker on the test database: `start_celery_worker(name, log, **env)`, then
  `stop_process(worker)`; `worker_database_url()` is the test database as another process reaches it
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import orjson
from django.contrib.auth import get_user_model

from grading.ingest.importers.mini_swe_agent import rollout_from_trajectory
from grading.ingest.service import ingest_group_lines
from grading.models import Membership

# Real third-party data and the method's test vectors, vendored with their licences: every
# test runs on a fresh clone, none may skip for want of data (see tests/conftest.py).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
VECTORS = FIXTURES / "vectors"
MINI_SWE_AGENT = FIXTURES / "mini-swe-agent-gemini-3-pro"
MINI_SWE_AGENT_MORE = FIXTURES / "mini-swe-agent-gemini-3-pro-more"  # 48 more, long: 33-157 kB of text each
OPENHANDS = FIXTURES / "openhands-multi-swe-bench"


def vector_cases(name: str) -> list[dict]:
    """The test vectors of `tests/fixtures/vectors/<name>.jsonl`, one dict a line."""
    return [json.loads(line) for line in (VECTORS / f"{name}.jsonl").read_text().splitlines() if line.strip()]


ROOT = Path(__file__).resolve().parent.parent
INGEST_URL = "/api/v1/groups/"
NDJSON = "application/x-ndjson"


def member(username: str, project, role: str):
    """A user with a password of `<username>-pass-123` and `role` in `project`."""
    user = get_user_model().objects.create_user(username=username, password=f"{username}-pass-123")
    Membership.objects.create(user=user, project=project, role=role)
    return user


def line(obj) -> bytes:
    return orjson.dumps(obj)


def jsonl(*objs, gz: bool = False) -> bytes:
    """A JSON-lines body: each object on its own line; a line given as bytes goes as it is."""
    body = b"".join((o if isinstance(o, bytes) else orjson.dumps(o)) + b"\n" for o in objs)
    return gzip.compress(body) if gz else body


def small_group(
    uid: str = "t-1@1", *, run: str = "r1", step: int = 1, rewards=(1, 0, 1), instance_id: str = "t-1", **task
) -> dict:
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
                    {
                        "role": "assistant",
                        "content": "THOUGHT: look\n\n```bash\ncat w.py\n```",
                        "action": "cat w.py",
                        "observation": "x = 1",
                    },
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


def as_lanes(data: dict, user, group) -> dict:
    """The judging fields of `data` (keyed by rollout index: `tier-3`, `score-3-scope`) as
    `user`'s page names them on `group` (a Group or its uid): by the lane label their blind
    assignment shows (`tier-C`), or unchanged when they do not judge it blind. `user` may be
    a test client, meaning the person logged in with it."""
    from grading.models import Group
    from reviews.selectors.lanes import lanes_for

    if hasattr(user, "session"):
        user = get_user_model().objects.get(pk=user.session["_auth_user_id"])
    if isinstance(group, str):
        group = Group.objects.select_related("run").get(uid=group)
    lanes = lanes_for(user=user, group=group)
    if not lanes.blind:
        return data
    out = {}
    for key, value in data.items():
        parts = key.split("-")
        if (
            len(parts) >= 2
            and parts[0] in ("tier", "rank", "cheat", "note", "score")
            and parts[1].isascii()
            and parts[1].isdigit()
        ):
            key = "-".join([parts[0], lanes.key(int(parts[1])), *parts[2:]])
        out[key] = value
    return out


def post_lines(client, token: str, body: bytes, *, project: str = "acme", **headers):
    """POST a JSON-lines body to the ingest API as `token` (`headers`: more request headers,
    e.g. HTTP_CONTENT_ENCODING="gzip"); the response, whatever it is."""
    return client.post(
        f"{INGEST_URL}?project={project}", data=body, content_type=NDJSON, HTTP_AUTHORIZATION=f"Token {token}", **headers
    )


def post_groups(client, token: str, *groups: dict | bytes, project: str = "acme") -> dict:
    """Ingest `groups` through the API as `token`; the request must succeed. Its JSON report."""
    r = post_lines(client, token, jsonl(*groups), project=project)
    assert r.status_code == 200, r.content
    return r.json()


def ingest_groups(project, *groups: dict, **options):
    """Ingest `groups` through the service (no HTTP), one line each; no line may be refused.

    `options` go to `ingest_group_lines` (e.g. allow_unknown_reward=True). Its IngestReport.
    """
    report = ingest_group_lines(project=project, lines=[(n, line(g)) for n, g in enumerate(groups, 1)], **options)
    assert not report.errors, report.errors
    return report


def load_real_groups() -> list[dict]:
    """The 16 real mini-swe-agent trajectories as gagar-group/1 groups (one rollout each)."""
    return real_groups(MINI_SWE_AGENT)


def real_groups(folder: Path = MINI_SWE_AGENT) -> list[dict]:
    """The real mini-swe-agent trajectories of `folder` (MINI_SWE_AGENT or MINI_SWE_AGENT_MORE:
    trajs/<id>/<id>.traj.json, with logs/<id>/report.json) as gagar-group/1 groups of one
    rollout each, in instance id order, read as `load_real_groups()` reads the first folder
    (for which it gives the same groups)."""
    groups = []
    for traj_path in sorted((folder / "trajs").glob("*/*.traj.json")):
        instance_id = traj_path.parent.name
        traj = json.loads(traj_path.read_text())
        report_path = folder / "logs" / instance_id / "report.json"
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        rollout = rollout_from_trajectory(traj, index=0, report=report, ref=str(traj_path.relative_to(folder)))
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


def load_real_long_groups(size: int = 4) -> list[dict]:
    """All 64 real trajectories (MINI_SWE_AGENT's 16 and MINI_SWE_AGENT_MORE's 48) as
    gagar-group/1 groups of `size` rollouts (16 groups of 4 by default; the last one smaller
    when `size` does not divide 64), in instance id order, for tests that want real lengths
    (33-157 kB of message text a rollout) in groups of several rollouts.

    One attempt per task is all the data has, so a group's rollouts are attempts at
    different tasks: the group and its task get new ids, `real-long-<n>@0` and
    `real-long-<n>` (run `gemini-3-pro-swebench-long`), the task taking the repository and
    problem statement of the group's first rollout; rollouts are indexed 0..size-1 and keep
    their own reward, patch, messages, tests and source ref. The ids differ from
    `load_real_groups()`'s, so both can be ingested into one project."""
    singles = sorted(real_groups(MINI_SWE_AGENT) + real_groups(MINI_SWE_AGENT_MORE), key=lambda g: g["task"]["instance_id"])
    groups = []
    for n, start in enumerate(range(0, len(singles), size)):
        members = singles[start : start + size]
        groups.append(
            {
                "format": "gagar-group/1",
                "run": "gemini-3-pro-swebench-long",
                "step": 0,
                "uid": f"real-long-{n:02d}@0",
                "task": {**members[0]["task"], "instance_id": f"real-long-{n:02d}"},
                "rollouts": [{**g["rollouts"][0], "index": i} for i, g in enumerate(members)],
            }
        )
    return groups


def worker_database_url() -> str:
    """The test database (PostgreSQL) as a URL another process, a worker, can connect to."""
    from django.db import connection

    db = connection.settings_dict
    auth = quote(db["USER"] or "", safe="") + (f":{quote(db['PASSWORD'], safe='')}" if db["PASSWORD"] else "")
    return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{quote(db['NAME'], safe='')}"


def start_celery_worker(name: str, log, *, queue: str | None = None, loglevel: str = "warning", **env: str) -> subprocess.Popen:
    """A real Celery worker process (solo pool) on the test database and the broker the
    environment names, its output in `log`, in a session of its own (stop_process ends it).
    `env`: more variables for it (e.g. CELERY_BROKER_URL, GAGAR_CACHE_URL)."""
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "gagar_web",
        "worker",
        "--pool=solo",
        "-n",
        f"{name}@%h",
        f"--loglevel={loglevel}",
        "--without-heartbeat",
        "--without-gossip",
        "--without-mingle",
    ]
    if queue:
        command += ["-Q", queue]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "DATABASE_URL": worker_database_url(), "DATABASE_CONN_MAX_AGE": "0", **env},
    )


@contextmanager
def worker_on_own_queue(name: str, tmp_path: Path, broker: str, **env: str):
    """A real Celery worker (start_celery_worker) on a queue of its own on `broker`, for tests
    that send it tasks with apply_async(queue=...): skips, saying why, without PostgreSQL and
    Redis; yields {"queue", "log"}; stops it and deletes the queue's keys after."""
    import uuid

    import pytest
    from django.db import connection

    if not (os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL")):
        pytest.skip("needs DATABASE_URL and CELERY_BROKER_URL (real PostgreSQL and Redis), as in CI")
    if connection.vendor != "postgresql":
        pytest.skip("the worker needs a database another process can reach (PostgreSQL)")
    queue = f"{name}-test-{uuid.uuid4().hex[:8]}"
    log_path = tmp_path / f"{name}-worker.log"
    log = log_path.open("w")
    proc = start_celery_worker(name, log, queue=queue, loglevel="INFO", CELERY_BROKER_URL=broker, **env)
    try:
        yield {"queue": queue, "log": log_path, "proc": proc}
    finally:
        stop_process(proc)
        log.close()
        import redis

        client = redis.Redis.from_url(broker)
        for key in client.scan_iter(f"*{queue}*"):  # kombu's bindings of the test's own queue
            client.delete(key)


def stop_process(process: subprocess.Popen | None, timeout: float = 20) -> None:
    """End a process started in a session of its own (and its children): TERM, then KILL."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# Producers a multi-model group's rollouts name in their source, metadata and cost (issue 25):
# a blind judge must meet none of these values anywhere (tests/hostile/test_producer_blind_doors.py).
PRODUCERS = (
    {
        "dir": "results_claude_10",
        "model": "claude-sonnet-4-5-20250929",
        "agent": "claude-code-agent@2.1",
        "llm": "anthropic/claude-sonnet-4-5",
        "checkpoint": "ckpt-claude-step-900",
        "cost": 3.98765,
    },
    {
        "dir": "results_gpt5_snowflake",
        "model": "gpt-5-2025-08-07",
        "agent": "codex-agent@0.9",
        "llm": "openai/gpt-5",
        "checkpoint": "ckpt-gpt5-step-450",
        "cost": 8.76543,
    },
)


def multi_model_group(uid: str = "g1@1", *, run: str = "r1", step: int = 1, size: int = 6) -> dict:
    """A real group (load_real_long_groups' second: long trajectories, five passing of six)
    whose first half of rollouts one model made and the second half another, as a
    multi-model SWE-bench run reads: `source.ref` under `results_claude_10/` or
    `results_gpt5_snowflake/`, the model, agent config and checkpoint in metadata, each
    model's cost in stats."""
    group = load_real_long_groups(size)[1]
    rollouts = []
    for rollout in group["rollouts"]:
        producer = PRODUCERS[0 if rollout["index"] < size // 2 else 1]
        rollouts.append(
            {
                **rollout,
                "source": {"format": rollout["source"]["format"], "ref": f"{producer['dir']}/{rollout['source']['ref']}"},
                "stats": {**rollout["stats"], "cost_usd": producer["cost"]},
                "metadata": {
                    **rollout.get("metadata", {}),
                    "model": producer["model"],
                    "agent": producer["agent"],
                    "llm_config": {"model": producer["llm"], "temperature": 0.7},
                    "checkpoint": producer["checkpoint"],
                    "run_name": f"{producer['dir']}-run",
                },
            }
        )
    return {**group, "run": run, "step": step, "uid": uid, "rollouts": rollouts}


def producer_values(group: dict) -> list[str]:
    """What of `multi_model_group` names its producers: every value a blind judge must not see."""
    values = {p[key] for p in PRODUCERS for key in ("dir", "model", "agent", "llm", "checkpoint")}
    values |= {f"{p['dir']}-run" for p in PRODUCERS}
    values |= {f"{p['cost']:.3f}" for p in PRODUCERS} | {str(p["cost"]) for p in PRODUCERS}
    values |= {r["source"]["ref"] for r in group["rollouts"]} | {r["source"]["format"] for r in group["rollouts"]}
    return sorted(values)


def new_file_diff(path: str, lines: list[str]) -> str:
    """A unified diff adding `path` with `lines`."""
    body = "".join(f"+{text}\n" for text in lines)
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n{body}"


def scratch_files_group(uid: str = "g1@1", *, run: str = "r1", step: int = 1, summary_lines: int = 1600) -> dict:
    """multi_model_group (real long trajectories, two models named in source, metadata and
    cost; rollouts 0, 1, 2, 4, 5 pass) with what agents leave behind: rollouts 0, 2 and 4
    make one change (rollout 0's real fix), 4 with three scratch files put in front of it in
    its patch — a FIX_SUMMARY.md of `summary_lines` lines taken from its own trajectory, a
    debug_issue.py and a reproduce_issue.py — and rollout 1 with no test outcomes recorded."""
    group = multi_model_group(uid, run=run, step=step)
    rollouts = {r["index"]: r for r in group["rollouts"]}
    fix = rollouts[0]["patch"]
    text = [line for m in rollouts[4]["messages"] for line in str(m.get("content") or "").splitlines() if line.strip()]
    summary = [text[n % len(text)][:200] for n in range(summary_lines)]
    scratch = (
        new_file_diff("FIX_SUMMARY.md", summary)
        + new_file_diff("debug_issue.py", ["from django.core.management import base", "print(base.__file__)"])
        + new_file_diff("reproduce_issue.py", ["import django", "django.setup()", "print('reproduced')"])
    )
    rollouts[2]["patch"] = fix
    rollouts[4]["patch"] = scratch + fix
    rollouts[1]["tests"] = {}
    return group
