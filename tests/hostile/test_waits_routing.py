"""Only a trainer's wait reaches the waits process, whatever the path says.

nginx sends `GET /api/v1/advantages/?wait=N` to the waits process (`docker/start.sh waits`).
It matches locations on the normalised path but, with `proxy_pass` and no URI, passes the path
as the client wrote it: `/api/v1/runs/../advantages/?wait=5` matched the waits location and
reached the waits process as written, where Django routes it to whatever `runs/..` resolves
to — any view, served from the process that holds the trainers' waits and a pool of four
connections. Now nginx passes the canonical path, and the waits process answers only the
advantages endpoint and /healthz (404 for anything else, however it got there).

Debian's nginx runs the shipped template in front of two recording upstreams standing in for
the site and the waits process; the second test calls the waits process's ASGI application.
"""

from __future__ import annotations

import asyncio
import http.client
import http.server
import json
import threading

import pytest

from tests.helpers.served import Nginx


class Recorder(http.server.ThreadingHTTPServer):
    """An upstream that answers 200 to everything and keeps each request's path as it arrived."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        recorder = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
                if self.path != "/healthz":
                    recorder.paths.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    def __enter__(self) -> Recorder:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()


def raw_get(port: int, path: str) -> int:
    """GET with the path exactly as written (http.client does not normalise it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_accept_encoding=True)
        conn.endheaders()
        answer = conn.getresponse()
        answer.read()
        return answer.status
    finally:
        conn.close()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/advantages/?wait=5",
        "/api/v1/runs/../advantages/?wait=5",
        "/api/v1/runs/%2E%2E/advantages/?wait=5",
        "/projects/acme/runs/r1/../../../../api/v1/advantages/?wait=5",
        "/api/v1//advantages/?wait=5",
        "/api/v1/./advantages/?wait=5",
    ],
)
def test_a_wait_reaches_the_waits_process_by_its_canonical_path_only(tmp_path, path):
    with Recorder() as site, Recorder() as waits:
        with Nginx(tmp_path / "nginx", site.server_port, waits_port=waits.server_port) as nginx:
            assert raw_get(nginx.port, path) == 200
    assert waits.paths == ["/api/v1/advantages/?wait=5"] and site.paths == [], (waits.paths, site.paths)


def test_what_is_not_a_wait_still_goes_to_the_site(tmp_path):
    with Recorder() as site, Recorder() as waits:
        with Nginx(tmp_path / "nginx", site.server_port, waits_port=waits.server_port) as nginx:
            for path in ("/api/v1/advantages/?wait=0", "/api/v1/advantages/", "/api/v1/advantages/../runs/r1/?wait=5"):
                assert raw_get(nginx.port, path) == 200
    assert waits.paths == []
    assert site.paths == ["/api/v1/advantages/?wait=0", "/api/v1/advantages/", "/api/v1/advantages/../runs/r1/?wait=5"]


def call_asgi(path: str) -> tuple[int, bytes]:
    from gagar_web.asgi import application

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict] = []

    async def run() -> None:
        answered = asyncio.Event()
        requests = iter([{"type": "http.request", "body": b"", "more_body": False}])

        async def receive() -> dict:
            request = next(requests, None)
            if request is not None:
                return request
            await answered.wait()  # the client hangs up once it has the whole answer
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                answered.set()

        await application(scope, receive, send)

    asyncio.run(run())
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@pytest.mark.parametrize(
    "path", ["/projects/", "/api/v1/runs/../groups/", "/api/v1/runs/r1/", "/admin/", "/api/v1/advantages/extra"]
)
def test_the_waits_process_answers_nothing_but_waits(path):
    status, body = call_asgi(path)
    assert status == 404 and json.loads(body)["detail"].startswith("the waits process serves"), body


@pytest.mark.django_db(transaction=True)
def test_the_waits_process_still_answers_healthz():
    assert call_asgi("/healthz")[0] == 200
