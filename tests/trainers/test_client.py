"""gagar_client against a small stdlib HTTP server that speaks the issue-13 contract.

The server is a stand-in for the REST API (runs, groups, steps, advantages with `wait` and
`Gagar-Step-Final`), so the client's transport is tested for real: sockets, headers,
retries on 503 and 429, JSON error bodies, long polls. The test against the real Django
server lives with the API tests. Standard library only: runs in the normal suite.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gagar_client import Client, GagarConnectionError, GagarError, StepNotFinal, encode_groups
from gagar_client.adapters.verl import group_steps

TOKEN = "s3cret"
COLUMNS = ("run", "step", "uid", "index", "reward", "advantage", "redistributed_advantage", "status")


class FakeGagar:
    """State of the stand-in server; tests script failures through `fail_next`."""

    def __init__(self):
        self.lock = threading.Condition()
        self.runs: dict[str, dict] = {}
        self.groups: dict[tuple[str, int], list[dict]] = {}
        self.final: dict[tuple[str, int], bool] = {}
        self.versions: dict[tuple[str, int], dict[str, bytes]] = {}
        self.requests: list[tuple[str, str, dict, dict]] = []  # method, path, query, headers
        self.fail_next: list[tuple[int, dict, dict]] = []  # (status, headers, body) answered before the real one
        self.ignore_wait = False

    def rows(self, run, step):
        out = []
        for group in self.groups.get((run, step), []):
            rewards = [r["reward"] for r in group["rollouts"]]
            mean = sum(rewards) / len(rewards)
            final = self.final.get((run, step), False)
            for r in group["rollouts"]:
                a = r["reward"] - mean
                # stand-in grading: once final, a pass at an odd index gets half the credit of the others
                out.append(
                    {
                        "run": run,
                        "step": step,
                        "uid": group["uid"],
                        "index": r["index"],
                        "reward": r["reward"],
                        "advantage": a,
                        "redistributed_advantage": a,
                        "status": "graded" if final else "fallback",
                    }
                )
        if self.final.get((run, step)):
            for uid in {row["uid"] for row in out}:
                mine = [row for row in out if row["uid"] == uid]
                passes = [row for row in mine if row["reward"] == 1]
                if 0 < len(passes) < len(mine):
                    f = {row["index"]: 0.5 if row["index"] % 2 else 1.0 for row in passes}
                    lam = sum(row["advantage"] for row in passes) / sum(f[row["index"]] * row["advantage"] for row in passes)
                    for row in passes:
                        row["redistributed_advantage"] = lam * f[row["index"]] * row["advantage"]
        return out


class Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    @property
    def state(self) -> FakeGagar:
        return self.server.state  # type: ignore[attr-defined]

    def _send(self, status, body=None, headers=None, raw: bytes | None = None, content_type="application/json"):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            data = gzip.decompress(data)
        return data

    def _handle(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        body = self._body() if method in ("POST", "PATCH") else b""
        state = self.state
        with state.lock:
            state.requests.append((method, url.path, query, dict(self.headers.items())))
            scripted = state.fail_next.pop(0) if state.fail_next else None
        if scripted:
            status, headers, payload = scripted
            return self._send(status, payload, headers)
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self._send(401, {"detail": "Invalid or revoked token"})
        if query.get("project") != "acme":
            return self._send(404, {"detail": f"No project {query.get('project')!r}"})
        parts = [p for p in url.path.split("/") if p]  # api v1 <resource> ...
        resource, rest = parts[2], [urllib.parse.unquote(p) for p in parts[3:]]

        if resource == "runs":
            if method == "POST" and not rest:
                data = json.loads(body)
                if data.get("grading_deadline_seconds", 1) <= 0:
                    return self._send(
                        400,
                        {
                            "detail": "grading_deadline_seconds must be a positive number of seconds",
                            "field": "grading_deadline_seconds",
                        },
                    )
                if data["name"] in state.runs:
                    return self._send(409, {"detail": f"run {data['name']!r} exists"})
                state.runs[data["name"]] = data
                return self._send(201, data)
            run = state.runs.get(rest[0]) if rest else None
            if run is None:
                return self._send(404, {"detail": f"No run {rest[0] if rest else ''!r} in project 'acme'"})
            if method == "PATCH":
                run.update(json.loads(body))
            return self._send(200, run)

        if resource == "groups" and method == "POST":
            if self.headers.get("Content-Type") != "application/x-ndjson":
                return self._send(415, {"detail": "send application/x-ndjson"})
            lines = [json.loads(line) for line in body.decode().splitlines() if line]
            errors = [
                {"line": n, "error": "rollouts[0].reward: must be 0 or 1"}
                for n, line in enumerate(lines, 1)
                if any(r["reward"] not in (0, 1) for r in line["rollouts"])
            ]
            good = [line for n, line in enumerate(lines, 1) if n not in {e["line"] for e in errors}]
            with state.lock:
                for line in good:
                    state.groups.setdefault((line["run"], line["step"]), []).append(line)
            report = {"groups": {"created": len(good)}, "refused": len(errors), "errors": errors}
            return self._send(207 if errors and good else 422 if errors else 200, report)

        if resource == "steps" and method == "GET":
            key = (query["run"], int(rest[0]))
            if key not in state.groups:
                return self._send(404, {"detail": f"No step {rest[0]} in run {query['run']!r}"})
            final = state.final.get(key, False)
            n = len(state.groups[key])
            return self._send(
                200,
                {
                    "run": key[0],
                    "step": key[1],
                    "groups": n,
                    "mixed": n,
                    "graded": n if final else 0,
                    "invalid": 0,
                    "timeout": 0,
                    "pending": 0 if final else n,
                    "fallback": 0,
                    "final": final,
                    "inputs_version": "v2" if final else "v1",
                },
            )

        if resource == "advantages" and method == "GET":
            key = (query["run"], int(query["step"]))
            if key not in state.groups:
                return self._send(404, {"detail": f"No step {key[1]} in run {key[0]!r}"})
            wait = int(query.get("wait", 0))
            if not 0 <= wait <= 300:
                return self._send(400, {"detail": "wait must be between 0 and 300 seconds"})
            if wait and not state.ignore_wait:
                with state.lock:
                    state.lock.wait_for(lambda: state.final.get(key, False), timeout=wait)
            with state.lock:
                final = state.final.get(key, False)
                version = query.get("inputs_version") or ("v2" if final else "v1")
                stored = state.versions.setdefault(key, {})
                if version not in stored:
                    stored[version] = b"".join(json.dumps(row).encode() + b"\n" for row in state.rows(*key))
                data = stored[version]
            if query.get("format") == "parquet":
                import io

                import pyarrow as pa
                import pyarrow.parquet as pq

                sink = io.BytesIO()
                pq.write_table(pa.Table.from_pylist([json.loads(line) for line in data.splitlines()]), sink)
                data = sink.getvalue()
            return self._send(
                200,
                raw=data,
                content_type="application/x-ndjson",
                headers={"Gagar-Step-Final": "true" if final else "false", "Gagar-Inputs-Version": version},
            )
        return self._send(405, {"detail": f"{method} not allowed"})

    def do_GET(self):
        self._handle("GET")

    def do_POST(self):
        self._handle("POST")

    def do_PATCH(self):
        self._handle("PATCH")


@pytest.fixture
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    httpd.state = FakeGagar()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def sleeps():
    return []


@pytest.fixture
def client(server, sleeps):
    host, port = server.server_address
    return Client(f"http://{host}:{port}", TOKEN, project="acme", timeout=5, retries=3, sleep=sleeps.append)


def _groups():
    return group_steps(["t1@3"] * 4 + ["t2@3"] * 4, [1, 1, 0, 1, 0, 0, 0, 0], indexes=[0, 1, 2, 3] * 2)


def test_run_policy_round_trip(client, server):
    created = client.create_run("rl-1", baseline="mean", auto_grade="heuristic", grading_deadline_seconds=120)
    assert created["auto_grade"] == "heuristic"
    method, path, query, headers = server.state.requests[-1]
    assert (method, path, query) == ("POST", "/api/v1/runs/", {"project": "acme"})
    assert headers["Authorization"] == f"Bearer {TOKEN}" and headers["Content-Type"] == "application/json"
    assert client.update_run("rl-1", grading_deadline_seconds=60)["grading_deadline_seconds"] == 60
    assert client.run("rl-1")["grading_deadline_seconds"] == 60
    assert client.ensure_run("rl-1", auto_grade="llm")["auto_grade"] == "heuristic"  # existing run unchanged
    assert client.ensure_run("rl/2 é")["name"] == "rl/2 é"  # created; the name is quoted as one path segment
    assert server.state.requests[-2][1] == "/api/v1/runs/rl%2F2%20%C3%A9/"


def test_error_body_becomes_a_clear_exception(client):
    with pytest.raises(GagarError) as caught:
        client.create_run("rl-1", grading_deadline_seconds=0)
    error = caught.value
    assert error.status == 400
    assert error.detail == "grading_deadline_seconds must be a positive number of seconds"
    assert error.body["field"] == "grading_deadline_seconds"
    assert "400 from POST /api/v1/runs/: grading_deadline_seconds must be a positive number" in str(error)
    with pytest.raises(GagarError, match=r"404 .*No run 'ghost'") as caught:
        client.run("ghost")
    assert caught.value.status == 404


def test_bad_token_is_not_retried(server, sleeps):
    host, port = server.server_address
    bad = Client(f"http://{host}:{port}", "wrong", project="acme", sleep=sleeps.append)
    with pytest.raises(GagarError, match=r"401 .*Invalid or revoked token"):
        bad.run("x")
    assert sleeps == [] and len(server.state.requests) == 1


def test_post_step_retries_a_503_then_succeeds(client, server, sleeps):
    server.state.fail_next = [(503, {}, {"detail": "database went away; resend"})]
    report = client.post_step("rl-1", 3, _groups())
    assert report["groups"] == {"created": 2}
    posts = [r for r in server.state.requests if r[0] == "POST"]
    assert len(posts) == 2 and sleeps == [0.5]
    assert posts[-1][3]["Content-Type"] == "application/x-ndjson"
    stored = server.state.groups[("rl-1", 3)]
    assert [g["format"] for g in stored] == ["gagar-group/1"] * 2 and stored[0]["rollouts"][3] == {"index": 3, "reward": 1.0}


def test_429_honours_retry_after_and_gives_up_after_retries(client, server, sleeps):
    server.state.fail_next = [(429, {"Retry-After": "7"}, {"detail": "slow down"})]
    client.post_step("rl-1", 3, _groups(), compress=True)  # gzip body, decoded by the server
    assert sleeps == [7.0]
    assert server.state.requests[-1][3]["Content-Encoding"] == "gzip"
    server.state.fail_next = [(504, {}, {"detail": "gateway"})] * 4
    with pytest.raises(GagarError, match="504") as caught:
        client.step_status("rl-1", 3)
    assert caught.value.status == 504 and sleeps[1:] == [0.5, 1.0, 2.0]


def test_connection_refused_is_retried_then_raised(sleeps):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = Client(f"http://127.0.0.1:{port}", TOKEN, project="acme", retries=2, sleep=sleeps.append)
    with pytest.raises(GagarConnectionError, match=r"no answer .* after 3 attempt"):
        client.run("x")
    assert sleeps == [0.5, 1.0]


def test_partly_refused_step_raises_unless_not_strict(client):
    bad = _groups()
    bad[1]["rollouts"][0]["reward"] = 0.5
    with pytest.raises(GagarError, match=r"some lines were refused.*must be 0 or 1") as caught:
        client.post_step("rl-1", 4, bad)
    assert caught.value.status == 207 and caught.value.body["refused"] == 1
    report = client.post_step("rl-1", 5, bad, strict=False)
    assert report["refused"] == 1
    with pytest.raises(GagarError) as caught:
        client.post_step("rl-1", 6, bad[1:])
    assert caught.value.status == 422


def test_group_lines_must_match_run_and_step():
    with pytest.raises(ValueError, match="run is 'other'"):
        encode_groups("rl-1", 3, [{"uid": "u", "run": "other", "rollouts": []}])
    assert json.loads(encode_groups("rl-1", 3, [{"uid": "u", "step": 3}]))["format"] == "gagar-group/1"
    with pytest.raises(ValueError, match="at least one group"):
        encode_groups("rl-1", 3, [])


def test_wait_for_step_returns_when_the_step_becomes_final(client, server):
    client.post_step("rl-1", 3, _groups())
    assert client.step_status("rl-1", 3)["final"] is False

    def grade():
        time.sleep(0.3)
        with server.state.lock:
            server.state.final[("rl-1", 3)] = True
            server.state.lock.notify_all()

    threading.Thread(target=grade).start()
    started = time.monotonic()
    rows = client.wait_for_step("rl-1", 3, timeout=30, poll=20)
    elapsed = time.monotonic() - started
    assert rows.final is True and rows.inputs_version == "v2"
    assert 0.2 < elapsed < 5, elapsed  # the server answered when the step became final, not after 20 s
    waits = [r[2] for r in server.state.requests if r[1] == "/api/v1/advantages/"]
    assert waits == [{"project": "acme", "run": "rl-1", "step": "3", "format": "jsonl", "wait": "20"}]
    assert client.step_status("rl-1", 3) == {
        "run": "rl-1",
        "step": 3,
        "groups": 2,
        "mixed": 2,
        "graded": 2,
        "invalid": 0,
        "timeout": 0,
        "pending": 0,
        "fallback": 0,
        "final": True,
        "inputs_version": "v2",
    }

    a_star = client.advantages("rl-1", 3, inputs_version=rows.inputs_version)
    assert set(a_star) == {("t1@3", i) for i in range(4)} | {("t2@3", i) for i in range(4)}
    assert a_star[("t1@3", 2)] == -0.75 and a_star[("t2@3", 0)] == 0.0
    assert a_star[("t1@3", 1)] == pytest.approx(a_star[("t1@3", 0)] / 2)
    assert sum(v for (uid, _), v in a_star.items() if uid == "t1@3") == pytest.approx(0.0, abs=1e-12)
    assert server.state.requests[-1][2]["inputs_version"] == "v2"


def test_wait_for_step_times_out_with_the_last_rows(client, server):
    client.post_step("rl-1", 3, _groups())
    with pytest.raises(StepNotFinal, match="not final after 1 s") as caught:
        client.wait_for_step("rl-1", 3, timeout=1, poll=1)
    assert caught.value.rows.final is False and len(caught.value.rows) == 8
    assert isinstance(caught.value, TimeoutError)


def test_a_waiter_turned_away_backs_off_until_its_deadline(client, server, sleeps):
    """The server caps concurrent waiters (429 + Retry-After): the waiter retries after each
    Retry-After, more often than `retries`, while its own timeout allows, then gives up."""
    client.post_step("rl-1", 3, _groups())
    server.state.final[("rl-1", 3)] = True
    too_many = (429, {"Retry-After": "3"}, {"detail": "this token already has 8 requests waiting for a step", "field": "wait"})
    server.state.fail_next = [too_many] * 5  # more than the 3 retries of other requests
    rows = client.wait_for_step("rl-1", 3, timeout=60, poll=20)
    assert rows.final is True and sleeps == [3.0] * 5
    server.state.final[("rl-1", 3)] = False
    server.state.fail_next = [(429, {"Retry-After": "120"}, too_many[2])]
    with pytest.raises(GagarError, match=r"429 .* \(still refused when the wait.s time was up\)") as caught:
        client.wait_for_step("rl-1", 3, timeout=30, poll=20)  # the server's pause outlasts the wait: not slept
    assert caught.value.status == 429 and sleeps == [3.0] * 5


def test_server_answering_at_once_is_not_hammered(server):
    """A server that ignores `wait` (answers non-final at once) is polled with growing pauses."""
    pauses = []

    def sleep(seconds):
        pauses.append(seconds)
        time.sleep(seconds)

    host, port = server.server_address
    client = Client(f"http://{host}:{port}", TOKEN, project="acme", sleep=sleep)
    client.post_step("rl-1", 3, _groups())
    server.state.ignore_wait = True
    with pytest.raises(StepNotFinal):
        client.wait_for_step("rl-1", 3, timeout=2.5, poll=5)
    polls = [r for r in server.state.requests if r[1] == "/api/v1/advantages/"]
    assert pauses[0] == 1.0 and len(polls) <= 3, (pauses, len(polls))


def test_unknown_step_is_a_404(client):
    with pytest.raises(GagarError, match="No step 9") as caught:
        client.wait_for_step("rl-1", 9, timeout=5)
    assert caught.value.status == 404


def test_replay_of_an_inputs_version_is_byte_identical(client, server):
    client.post_step("rl-1", 3, _groups())
    first = client.advantage_rows("rl-1", 3)
    assert first.final is False and first.inputs_version == "v1"
    with server.state.lock:
        server.state.final[("rl-1", 3)] = True
    assert client.advantage_rows("rl-1", 3, inputs_version="v1") == first
    assert client.advantage_rows("rl-1", 3).inputs_version == "v2"


def test_advantages_frame(client):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    client.post_step("rl-1", 3, _groups())
    frame = client.advantages_frame("rl-1", 3)
    assert isinstance(frame, pd.DataFrame) and list(frame["uid"]) == ["t1@3"] * 4 + ["t2@3"] * 4


def test_advantages_frame_without_pandas_says_what_to_install(client, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # as on a machine without pandas: `import pandas` fails
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'gagar-client\[pandas\]'") as caught:
        client.advantages_frame("rl-1", 3)
    assert caught.value.name == "pandas"
