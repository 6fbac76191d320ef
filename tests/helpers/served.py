"""The shipped deployment, started for real: docker/start.sh (gunicorn) and, in front of it,
Debian's nginx with docker/nginx.conf.template — the file docker-compose.yml mounts into the
nginx image, filled in the way that image does it (envsubst of the variables it names).

`App` is one web container without Docker (a scratch SQLite file unless DATABASE_URL is given,
DJANGO_DEBUG=false): the site (`docker/start.sh`) or the waits (`docker/start.sh waits`);
`Nginx` is nginx as a child process with a scratch prefix; `Deployment` is the three as
docker-compose.yml puts them together. Readiness is a port answering /healthz, never a sleep.
The benchmarks (benchmarks/waiters.py, slow_clients.py) start them from here too.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "docker" / "nginx.conf.template"
NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str = "/healthz", *, timeout: float = 5, headers: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, answer.read()
    finally:
        conn.close()


def wait_for_healthz(port: int, process: subprocess.Popen, log: Path, what: str) -> None:
    for _ in range(1200):  # bounded by attempts, each a real request (migrate runs first)
        if process.poll() is not None:
            pytest.fail(f"{what} exited: {log.read_text()[-3000:]}")
        try:
            if get(port, timeout=1)[0] == 200:
                return
        except OSError:
            time.sleep(0.05)
    pytest.fail(f"{what} never answered /healthz: {log.read_text()[-3000:]}")


def stop(process: subprocess.Popen) -> None:
    # INT is a quick shutdown to gunicorn and nginx alike; gunicorn's TERM waits up to 30 s for
    # the requests still open (a waiter, a slow client) to finish, and nothing here needs them to
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class App:
    """docker/start.sh on a free port: for the site (role "site"), migrate, then gunicorn with the
    image's workers and threads; for role "waits", gunicorn with uvicorn workers."""

    def __init__(self, folder: Path, role: str = "site", **env: str):
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.role, self.port, self.db = folder, role, free_port(), folder / "db.sqlite3"
        keep = {
            k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "GUNICORN_", "GAGAR_"))
        }
        self.env = {
            **keep,
            "PYTHON": sys.executable,
            "GUNICORN_BIND": f"127.0.0.1:{self.port}",
            "DATABASE_URL": f"sqlite:///{self.db}",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
            "DJANGO_SECURE_SSL_REDIRECT": "false",
            "GAGAR_MEDIA_ROOT": str(folder / "media"),
            **env,
        }
        self.log = folder / "server.log"

    def __enter__(self) -> App:
        self.out = self.log.open("w")
        self.process = subprocess.Popen(
            ["sh", str(ROOT / "docker" / "start.sh"), self.role],
            cwd=ROOT,
            env=self.env,
            stdout=self.out,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for_healthz(self.port, self.process, self.log, f"docker/start.sh {self.role}")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        stop(self.process)
        self.out.close()

    def django(self, code: str) -> str:
        """Run Python with Django set up against this app's database (`manage.py shell -c`); its stdout."""
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", code],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if done.returncode:
            pytest.fail(f"manage.py shell failed: {done.stderr[-3000:]}")
        return done.stdout

    def tokens(self, **roles: str) -> dict[str, str]:
        """Project acme with one token per `username=role`; {username: secret}."""
        code = (
            "import json; from grading.models import Project; from grading.projects.tokens import issue_api_token\n"
            "Project.objects.get_or_create(name='acme')\n"
            f"print(json.dumps({{u: issue_api_token(username=u, project_name='acme', role=r)[1] for u, r in {roles!r}.items()}}))"
        )
        return json.loads(self.django(code).strip().splitlines()[-1])


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    return found or next((p for p in NGINX_CANDIDATES if os.access(p, os.X_OK)), None)


def require_nginx() -> str:
    """Debian's nginx, or a skip saying how to install it; a failure where GAGAR_REQUIRE_NGINX=1 (CI)."""
    binary = nginx_binary()
    if binary is None:
        reason = "nginx is not installed (apt-get install -y nginx-light; .ci/run installs it)"
        if os.environ.get("GAGAR_REQUIRE_NGINX") == "1":
            pytest.fail(f"GAGAR_REQUIRE_NGINX=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return binary


def render_template(text: str, values: dict[str, str]) -> str:
    """What the nginx image's entrypoint does with /etc/nginx/templates/*.template: envsubst of
    `${NAME}` for the variables it is given; nginx's own `$variables` are left alone."""
    missing = sorted(set(re.findall(r"\$\{([A-Z_]+)\}", text)) - set(values))
    if missing:
        raise KeyError(f"the template needs {', '.join(missing)}")
    return re.sub(r"\$\{([A-Z_]+)\}", lambda m: values[m.group(1)], text)


class Nginx:
    """nginx in front of `upstream_port`, with docker/nginx.conf.template as the image includes it
    (inside `http {}`); the surrounding main file is the image's own defaults, with scratch paths."""

    def __init__(self, folder: Path, upstream_port: int, *, waits_port: int | None = None):
        """`upstream_port` is the site's; waits go to `waits_port`, or to the site when None."""
        self.binary, self.folder, self.port = require_nginx(), folder, free_port()
        folder.mkdir(parents=True, exist_ok=True)
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (folder / sub).mkdir(exist_ok=True)
            (folder / sub).chmod(0o777)  # the worker runs as nobody when the master is root
        site = render_template(
            TEMPLATE.read_text(),
            {
                "GAGAR_UPSTREAM": f"127.0.0.1:{upstream_port}",
                "GAGAR_WAIT_UPSTREAM": f"127.0.0.1:{waits_port or upstream_port}",
                "GAGAR_LISTEN": f"127.0.0.1:{self.port}",
            },
        )
        (folder / "gagar.conf").write_text(site)
        main = f"""
worker_processes 2;
pid {folder}/nginx.pid;
error_log {folder}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log off;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    include {folder}/gagar.conf;
}}
"""
        (folder / "nginx.conf").write_text(main)
        self.log = folder / "error.log"

    def __enter__(self) -> Nginx:
        check = subprocess.run(
            [self.binary, "-t", "-p", str(self.folder), "-c", str(self.folder / "nginx.conf")], capture_output=True, text=True
        )
        if check.returncode:
            pytest.fail(f"nginx -t refused the configuration: {check.stderr}")
        self.log.touch()
        self.process = subprocess.Popen(
            [self.binary, "-p", str(self.folder), "-c", str(self.folder / "nginx.conf"), "-g", "daemon off;"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        wait_for_healthz(self.port, self.process, self.log, "nginx")
        return self

    def __exit__(self, *exc) -> None:
        stop(self.process)


class Deployment:
    """docker-compose.yml's web, waits and proxy services: the site and the waits on one database
    (`env` is given to both, then `site_env` / `waits_env` to each), nginx in front; `port` is nginx's."""

    def __init__(self, folder: Path, *, env: dict | None = None, site_env: dict | None = None, waits_env: dict | None = None):
        self.site = App(folder / "site", **(env or {}), **(site_env or {}))
        shared = {k: self.site.env[k] for k in ("DATABASE_URL", "DJANGO_SECRET_KEY", "GAGAR_MEDIA_ROOT")}
        self.waits = App(folder / "waits", "waits", **{**(env or {}), **shared, **(waits_env or {})})
        self.nginx = Nginx(folder / "nginx", self.site.port, waits_port=self.waits.port)
        self.port = self.nginx.port

    def __enter__(self) -> Deployment:
        self._stack = contextlib.ExitStack()
        with self._stack:
            for part in (self.site, self.waits, self.nginx):
                self._stack.enter_context(part)
            self._stack = self._stack.pop_all()
        return self

    def __exit__(self, *exc) -> None:
        self._stack.close()
