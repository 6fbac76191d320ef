"""Slow clients cannot take the site down (security review, item 2).

The container's own start command (docker/start.sh: gunicorn with gthread workers) serves
the app; connections that send their headers a byte at a time, and never finish, hold a
thread each, not a worker process, so /healthz still answers. Before, four such clients on
gunicorn's four sync workers left it unanswered until they gave up. The figures (and the
same attack on sync workers, for comparison) are in benchmarks/slow_clients.py.
"""

from __future__ import annotations

import http.client
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SLOW_CLIENTS = 4


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthz(port: int, timeout: float) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.fixture
def deployed(tmp_path):
    """docker/start.sh on a free port with a scratch SQLite database, as the image runs it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "GUNICORN_"))}
    env.update(PYTHON=sys.executable, GUNICORN_BIND=f"127.0.0.1:{port}", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               DJANGO_DEBUG="false", DJANGO_SECRET_KEY=secrets.token_urlsafe(64), DJANGO_ALLOWED_HOSTS="127.0.0.1",
               DJANGO_SECURE_SSL_REDIRECT="false", GAGAR_MEDIA_ROOT=str(tmp_path / "media"))
    log = open(tmp_path / "server.log", "w")
    server = subprocess.Popen(["sh", str(ROOT / "docker" / "start.sh")], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(600):  # readiness: /healthz answers (migrate runs first); bounded, not timed
            if server.poll() is not None:
                pytest.fail(f"the server exited: {(tmp_path / 'server.log').read_text()[-2000:]}")
            try:
                if healthz(port, 1) == 200:
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the server never answered /healthz")
        yield port
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_four_slow_clients_leave_healthz_answering(deployed):
    slow = []
    try:
        for _ in range(SLOW_CLIENTS):
            s = socket.create_connection(("127.0.0.1", deployed), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
            slow.append(s)
        for _ in range(5):
            assert healthz(deployed, timeout=10) == 200  # before: no answer while the four stayed open
    finally:
        for s in slow:
            s.close()
