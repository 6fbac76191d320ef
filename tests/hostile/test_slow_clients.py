"""Slow clients cannot take the site down.

The container's own start command (docker/start.sh: gunicorn with gthread workers) serves
the app; connections that send their headers a byte at a time, and never finish, hold a
thread each, not a worker process, so /healthz still answers. Before, four such clients on
gunicorn's four sync workers left it unanswered until they gave up. The figures (and the
same attack on sync workers, for comparison) are in benchmarks/slow_clients.py.
"""

from __future__ import annotations

import socket

import pytest

from tests.helpers.served import App, get

pytestmark = pytest.mark.slow

SLOW_CLIENTS = 4


@pytest.fixture
def deployed(tmp_path):
    """docker/start.sh on a free port with a scratch SQLite database, as the image runs it."""
    with App(tmp_path) as app:
        yield app.port


def test_four_slow_clients_leave_healthz_answering(deployed):
    slow = []
    try:
        for _ in range(SLOW_CLIENTS):
            s = socket.create_connection(("127.0.0.1", deployed), timeout=5)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
            slow.append(s)
        for _ in range(5):
            assert get(deployed, timeout=10)[0] == 200  # before: no answer while the four stayed open
    finally:
        for s in slow:
            s.close()
