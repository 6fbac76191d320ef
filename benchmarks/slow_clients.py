#!/usr/bin/env python
"""Slow clients against the deployed server: does /healthz still answer?

    .venv/bin/python benchmarks/slow_clients.py            # 4, 32 and 96 slow clients, sync vs gthread vs nginx
    .venv/bin/python benchmarks/slow_clients.py --clients 100 300 --hold 40

For each server configuration -- gunicorn with 4 sync workers (the old docker-compose
command), the image's docker/start.sh settings (4 gthread workers x 16 threads), and those
behind Debian's nginx with docker/nginx.conf.template (docker-compose.yml's proxy; left out
with a note where nginx is not installed) -- and each number of slow clients: open that many
connections that send half a request's headers and then nothing, then time --probes GET
/healthz one after another (5 s timeout each) while they stay open, the last after --hold
seconds. SQLite scratch database, DJANGO_DEBUG=false, all on loopback.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _support import cpu_model, free_port, load_average, memory_gib, stop_server, usable_cores

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
sys.path.insert(0, str(ROOT))

from tests.helpers.served import Nginx, nginx_binary  # noqa: E402  (the same nginx set-up as the hostile tests)

NGINX = "the same behind nginx (docker/nginx.conf.template)"


def configs(workers: int) -> dict[str, list[str]]:
    """The old docker-compose command, docker/start.sh's, and the same behind nginx (4 workers each as deployed)."""
    gthread = ["--workers", str(workers), "--worker-class", "gthread", "--threads", "16"]
    return {
        f"{workers} sync workers (before)": ["--workers", str(workers)],
        f"{workers} gthread workers x 16 threads (docker/start.sh)": gthread,
        NGINX: gthread,
    }


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clients", type=int, nargs="+", default=[4, 32, 96])
    p.add_argument("--probes", type=int, default=10)
    p.add_argument("--hold", type=float, default=0, help="seconds the slow clients stay open before the last probe")
    p.add_argument("--workers", type=int, default=4, help="gunicorn workers in each configuration (4 as deployed)")
    return p.parse_args()


def healthz(port: int) -> float | None:
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/healthz")
        ok = conn.getresponse().status == 200
    except OSError:
        return None
    finally:
        conn.close()
    return (time.perf_counter() - started) * 1000 if ok else None


def main() -> None:
    args = parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gagar-slow-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_"))}
    env.update(
        DATABASE_URL=f"sqlite:///{scratch / 'db.sqlite3'}",
        DJANGO_DEBUG="false",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(64),
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DJANGO_SECURE_SSL_REDIRECT="false",
        GAGAR_MEDIA_ROOT=str(scratch / "media"),
    )
    subprocess.run([PYTHON, "manage.py", "migrate", "--no-input", "-v0"], cwd=ROOT, env=env, check=True)
    rows = []
    notes = []
    for name, options in configs(args.workers).items():
        port = free_port()
        server = subprocess.Popen(
            [PYTHON, "-m", "gunicorn", "gagar_web.wsgi", "--bind", f"127.0.0.1:{port}", "--timeout", "600", *options],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        proxy = None
        try:
            if name == NGINX and nginx_binary() is None:
                notes.append(f"{NGINX}: left out, nginx is not installed (apt-get install -y nginx-light)")
                continue
            for _ in range(300):
                if healthz(port) is not None:
                    break
                time.sleep(0.1)
            if name == NGINX:  # tests/helpers/served.py's, as test_proxy.py runs it
                proxy = Nginx(scratch / f"nginx-{port}", port).__enter__()
                port = proxy.port
            for _ in range(40):  # warm every worker (its first request loads the URLconf)
                healthz(port)
            for n in args.clients:
                slow = []
                for _ in range(n):
                    s = socket.create_connection(("127.0.0.1", port), timeout=5)
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
                    slow.append(s)
                time.sleep(0.5)  # let the server take them
                times = [healthz(port) for _ in range(args.probes - 1)]
                time.sleep(args.hold)
                times.append(healthz(port))
                for s in slow:
                    s.close()
                answered = [t for t in times if t is not None]
                rows.append(
                    (
                        name,
                        n,
                        len(answered),
                        statistics.median(answered) if answered else None,
                        max(answered) if answered else None,
                    )
                )
        finally:
            if proxy is not None:
                proxy.__exit__()
            stop_server(server)
    print(
        f"Machine: {usable_cores()} cores, {cpu_model()}, {memory_gib()} RAM, load {load_average():.2f}; "
        f"Python {platform.python_version()}; SQLite, DJANGO_DEBUG=false, loopback"
    )
    print()
    print(f"| Server | slow clients | /healthz answered (of {args.probes}, 5 s timeout) | p50 ms | max ms |")
    print("|---|---:|---:|---:|---:|")
    for name, n, ok, p50, worst in rows:
        print(f"| {name} | {n} | {ok} | {f'{p50:.1f}' if p50 else '–'} | {f'{worst:.1f}' if worst else '–'} |")
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
