"""A real local HTTP server speaking the chat completions API, driven by a script.

Used by tests/grading/grader/test_llm.py and the benchmarks (grading.py, training_loop.py); no Django here.

Each POST /v1/chat/completions takes the next step of the SCRIPT, or asks `responder`
when there is none. A step is a `Reply` (status, JSON body, headers, delay) or a
callable receiving the request JSON and returning one. Helpers build the usual steps:

    server = FakeOpenAI([call("get_task"), submit([...]), status(429), hang(5)])
    server.start(); ...; server.requests  # every request body, in order; server.stop()

A request after the script ran out gets a 500 saying so (and is recorded).
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict (sent as JSON) or bytes (sent as is)
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering


Step = Reply | Callable[[dict], Reply]


def completion(
    message: dict, *, prompt_tokens: int = 100, completion_tokens: int = 20, finish_reason: str = "tool_calls"
) -> Reply:
    return Reply(
        body={
            "id": f"chatcmpl-{next(_ids)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def call(name: str, arguments: dict | str | None = None, **more: Any) -> Reply:
    """One tool call; `arguments` as a string is sent verbatim (malformed JSON, say)."""
    return calls((name, arguments), **more)


def calls(*pairs: tuple[str, dict | str | None], content: str | None = None, **more: Any) -> Reply:
    tool_calls = [
        {
            "id": f"call_{next(_ids)}",
            "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args or {})},
        }
        for name, args in pairs
    ]
    return completion({"content": content, "tool_calls": tool_calls}, **more)


def submit(judgments: list[dict], **more: Any) -> Reply:
    return call("submit_verdict", {"judgments": judgments}, **more)


def text(content: str, **more: Any) -> Reply:
    return completion({"content": content}, finish_reason="stop", **more)


def status(code: int, *, retry_after_ms: int | None = 10) -> Reply:
    """An error status; retry-after-ms keeps the client's backoff short in tests."""
    headers = {"retry-after-ms": str(retry_after_ms)} if retry_after_ms is not None else {}
    return Reply(status=code, body={"error": {"message": f"fake {code}", "type": "server_error", "code": None}}, headers=headers)


def hang(seconds: float) -> Reply:
    """Answer only after `seconds` (past the client's timeout); stop() cuts the wait short."""
    return Reply(status=500, body={"error": {"message": "too late"}}, delay=seconds)


class FakeOpenAI:
    def __init__(
        self,
        script: list[Step] | None = None,
        *,
        responder: Callable[[dict], Reply] | None = None,
        delay: float = 0.0,
        record: bool = True,
    ) -> None:
        self.script = list(script or [])
        self.responder = responder
        self.delay = delay  # added to every answer
        self.record = record
        self.requests: list[dict] = []
        self.headers: list[dict] = []  # lower-cased names
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def remaining(self) -> int:
        return len(self.script)

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
            # Headers and body go out in separate writes; with Nagle on, each answer would
            # wait ~40 ms for the client's delayed ACK.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                try:
                    request = json.loads(body)
                except ValueError:
                    return self._send(Reply(400, {"error": {"message": "request body is not JSON"}}))
                self._send(fake._answer(request, {k.lower(): v for k, v in self.headers.items()}))

            def _send(self, reply: Reply):
                wait = reply.delay + fake.delay
                if wait and fake._stopping.wait(wait):
                    return  # stopping: drop the answer
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (its timeout); nothing to answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _answer(self, request: dict, headers: dict) -> Reply:
        with self._lock:
            if self.record:
                self.requests.append(request)
                self.headers.append(headers)
            step = self.script.pop(0) if self.script else self.responder
        if step is None:
            return Reply(500, {"error": {"message": "fake server: the script ran out"}}, {"x-should-retry": "false"})
        return step(request) if callable(step) else step

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


RUBRIC_SCORES = {
    "solution_fit": 4,
    "implementation_precision": 4,
    "minimality": 4,
    "side_effect_avoidance": 4,
    "codebase_consistency": 4,
}


def scripted_model(turns: int):
    """A stateless grader model for benchmarks: `turns` tool calls cycling over the rollouts
    (get_task first), then a verdict that validates (every pass T1 rank 1 but the last, T2
    with a turn citation). What it does next depends only on the conversation so far."""

    def respond(request: dict):
        messages = request["messages"]
        done = sum(1 for m in messages if m["role"] == "assistant")
        if done == 0:
            return call("get_task")
        task = json.loads(next(m for m in messages if m["role"] == "tool")["content"])
        passing, everyone = task["passing_rollouts"], task["passing_rollouts"] + task["failing_rollouts"]
        if done < turns:
            r = everyone[done % len(everyone)]
            step = [
                ("list_rollouts", {}),
                ("summarize_turns", {"rollout": r}),
                ("read_turns", {"rollout": r, "start": 0, "count": 5}),
                ("read_patch", {"rollout": r}),
                ("test_outcomes", {"rollout": r}),
                ("read_test_log", {"rollout": r, "count": 50}),
            ][done % 6]
            return call(*step)
        judgments = [
            {"rollout": r, "tier": "T1", "rank": 1, "scores": RUBRIC_SCORES, "cheat": False, "evidence": []} for r in passing
        ]
        if len(passing) > 1:
            judgments[-1] |= {
                "tier": "T2",
                "rank": 2,
                "evidence": [{"kind": "turn", "rollout": passing[-1], "locator": "1", "note": "slow start"}],
            }
        return submit(judgments)

    return respond
