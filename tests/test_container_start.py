"""The Docker image's start command, run the way the image runs it, without Docker.

The image copies the app into a root-owned /app, collects static files there as root at
build time (docker/collect-static.sh) and runs docker/start.sh (migrate, then gunicorn) as a
non-root user who owns only /data (uploads in /data/media, the compose volume). This test
rebuilds that layout in a temporary directory:

- <tmp>/app: the files the Dockerfile's COPY lines name (taken from `git ls-files`), owned by
  root and not writable by others; the build step runs there as root;
- <tmp>/data and <tmp>/data/media: owned by the unprivileged user (``nobody``), with the
  SQLite database in <tmp>/data;

then runs docker/start.sh as that user through ``setpriv`` and checks that migrations ran,
gunicorn answers /healthz, the collected static files are served, the media directory takes
an upload, and nothing was written into the app directory; then ``docker/start.sh waits`` (the
waits service: gunicorn with uvicorn workers on gagar_web.asgi) answers /healthz as that user too.

Needs root (to own the copy, switch users and bind mounts); CI runs as root. The interpreter
is this venv's (sys.executable) when the unprivileged user can run it. When it cannot (here the
venv's python is a symlink into root's 0700 home), the same-version system interpreter runs
instead, with this venv's site-packages on PYTHONPATH, so the packages are the same. The user
reaches site-packages through bind mounts under <tmp>/site in a mount namespace of the start
command's own, since the checkout may sit in a folder only root can enter.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STEP_TIMEOUT = 60  # seconds for any one command (build step, probes)
READY_TRIES = 150  # polls of /healthz, 0.1 s apart at most: gunicorn must answer within ~20 s
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0,
        reason="needs root: the test makes a root-owned copy of the app and runs the start script "
        "as an unprivileged user (CI runs as root)",
    ),
]


# --- helpers ----------------------------------------------------------------------------


def _dockerfile_copies() -> list[tuple[str, str]]:
    """(source, destination relative to WORKDIR /app) for each COPY line of the Dockerfile."""
    copies = []
    for line in (REPO / "Dockerfile").read_text().splitlines():
        if line.split()[:1] != ["COPY"]:
            continue
        words = shlex.split(line, comments=True)
        args = [w for w in words[1:] if not w.startswith("--")]
        assert len(args) >= 2 and not any(w.startswith("--from") for w in words), line
        *sources, dest = args
        for source in sources:
            source = source.rstrip("/")
            if dest in {".", "./"} or dest.endswith("/"):
                target = (dest.rstrip("/") + "/" if dest not in {".", "./"} else "") + Path(source).name
            else:
                target = dest
            copies.append((source, target))
    return copies


def _repo_files() -> list[str]:
    """Tracked files plus new ones not yet committed (but not ignored), that exist now."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=STEP_TIMEOUT,
    ).stdout.decode()
    return sorted({f for f in out.split("\0") if f and (REPO / f).is_file()})


def _copy_app(app: Path) -> None:
    """What the image's COPY lines put in /app, root-owned, 0755 dirs and 0644/0755 files."""
    files = _repo_files()
    copied = 0
    for source, target in _dockerfile_copies():
        for f in files:
            if f == source:
                rel = Path(target)
            elif f.startswith(source + "/"):
                rel = Path(target) / f[len(source) + 1 :]
            else:
                continue
            dst = app / rel
            for parent in reversed(dst.relative_to(app).parents[:-1]):
                (app / parent).mkdir(exist_ok=True)
                os.chmod(app / parent, 0o755)
            shutil.copyfile(REPO / f, dst)
            os.chmod(dst, 0o755 if os.access(REPO / f, os.X_OK) else 0o644)
            copied += 1
    assert copied and (app / "manage.py").is_file() and (app / "docker" / "start.sh").is_file()


def _snapshot(root: Path) -> dict[str, tuple]:
    entries = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            entries[os.path.relpath(path, root)] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    st = os.lstat(root)
    entries["."] = (st.st_mode, st.st_uid, st.st_size, st.st_mtime_ns)
    return entries


def _unprivileged_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "gagar-nobody"],
            check=True,
            timeout=STEP_TIMEOUT,
        )
        return pwd.getpwnam("gagar-nobody")


def _as_user(user: pwd.struct_passwd, argv: list[str], mounts: list[tuple[str, Path]] = ()) -> list[str]:
    """`argv` as `user`; with `mounts`, in a private mount namespace where each (source, target)
    is bound first, so the user reaches the venv's packages through a path of the test's own
    even when the checkout sits in a folder only root may enter (`mktemp -d` makes it 0700)."""
    setpriv = shutil.which("setpriv", path=SYSTEM_PATH)
    assert setpriv, "setpriv (util-linux) is needed to run the start script as another user"
    command = [setpriv, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", *argv]
    if not mounts:
        return command
    unshare = shutil.which("unshare", path=SYSTEM_PATH)
    assert unshare, "unshare (util-linux) is needed to show the venv's packages to another user"
    binds = " && ".join(f"mount --bind {shlex.quote(source)} {shlex.quote(str(target))}" for source, target in mounts)
    return [unshare, "--mount", "--propagation", "private", "/bin/sh", "-c", f'{binds} && exec "$0" "$@"', *command]


def _site_packages() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def _python_for(user: pwd.struct_passwd, env: dict, app: Path, mounts: list[tuple[str, Path]]) -> str:
    """This venv's python if `user` can run it (through sh, as the start script does), else a
    same-version interpreter the user can run; either must import the app from the copy."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    candidates = [sys.executable]
    for directory in ("/usr/local/bin", "/usr/bin"):
        candidates.append(f"{directory}/python{version}")
    probe = "import sys, django, gunicorn, whitenoise, gagar_web; print('%d.%d' % sys.version_info[:2], gagar_web.__file__)"
    failures = []
    for python in dict.fromkeys(candidates):
        if python != sys.executable and not os.path.exists(python):
            continue
        result = subprocess.run(
            _as_user(user, ["/bin/sh", "-c", '"$0" -c "$1"', python, probe], mounts),
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
        words = result.stdout.split()
        if result.returncode == 0 and words[:1] == [version] and words[1].startswith(f"{app}/"):
            return python
        failures.append(f"{python}: rc={result.returncode} {result.stdout.strip()} {result.stderr.strip()[-500:]}")
    pytest.fail(f"no Python {version} that user {user.pw_name} can run with this venv's packages:\n" + "\n".join(failures))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, dict, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _uid_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid in /proc/{pid}/status")


def _stop_group(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


# --- the test -------------------------------------------------------------------------------


@pytest.fixture
def image_root():
    """<tmp>/app (root-owned copy, like /app) and <tmp>/data/media (the user's, like /data)."""
    base = Path(tempfile.mkdtemp(prefix="gagar-image-"))
    try:
        os.chmod(base, 0o755)
        app = base / "app"
        app.mkdir()
        os.chmod(app, 0o755)
        yield base, app
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_start_script_runs_as_unprivileged_user_in_root_owned_app(image_root):
    base, app = image_root
    _copy_app(app)
    user = _unprivileged_user()
    data = base / "data"
    media = data / "media"
    for directory in (data, media):
        directory.mkdir()
        os.chown(directory, user.pw_uid, user.pw_gid)
        os.chmod(directory, 0o750)

    # The image's ENV (Dockerfile), with this layout's paths, and nothing from this shell
    # (CI's DATABASE_URL and broker must not leak in).
    # The venv's packages as the user will see them: bound under <tmp>/site (see _as_user).
    mounts = [(source, base / "site" / str(n)) for n, source in enumerate(_site_packages())]
    for _, target in mounts:
        target.mkdir(parents=True)
        os.chmod(target.parent, 0o755)
    site = [str(target) for _, target in mounts]
    image_env = {
        "PATH": SYSTEM_PATH,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([str(app), *site]),
        "GAGAR_MEDIA_ROOT": str(media),
    }

    # Build step, as root, with this venv's python.
    build = subprocess.run(
        [str(app / "docker" / "collect-static.sh")],
        cwd=app,
        env={**image_env, "HOME": str(base), "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    manifest = app / "staticfiles" / "staticfiles.json"
    assert manifest.is_file(), "collectstatic did not use the deployed (manifest) storage"
    assert not (app / "db.sqlite3").exists(), "the build step must not touch a database"

    before = _snapshot(app)
    assert all(uid == 0 for _, uid, _, _ in before.values())
    assert all(not mode & 0o002 for mode, _, _, _ in before.values())

    port = _free_port()
    db_file = data / "db.sqlite3"
    run_env = {
        **image_env,
        "HOME": str(data),
        "DATABASE_URL": f"sqlite:///{db_file}",
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        "DJANGO_SECURE_COOKIES": "false",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": "1",
        "GUNICORN_TIMEOUT": "30",
    }
    run_env["PYTHON"] = _python_for(user, run_env, app, mounts)

    log_path = base / "start.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(
            _as_user(user, [str(app / "docker" / "start.sh")], mounts),
            cwd=app,
            env=run_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        status = None
        for _ in range(READY_TRIES):
            if server.poll() is not None:
                pytest.fail(f"start script exited with {server.returncode}:\n{log_path.read_text()}")
            try:
                status, _, body = _get(f"{url}/healthz")
                break
            except (TimeoutError, urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert status == 200, f"/healthz: {status}\n{log_path.read_text()}"
        assert b'"ok"' in body

        # gunicorn runs as the user; migrations ran into the user's database.
        assert _uid_of(server.pid) == user.pw_uid
        assert db_file.stat().st_uid == user.pw_uid
        with sqlite3.connect(db_file) as connection:
            applied = connection.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
        assert applied > 0, log_path.read_text()

        # Static files collected at build time are served (hashed name from the manifest).
        paths = json.loads(manifest.read_text())["paths"]
        htmx = next(name for name in paths if name.startswith("vendor/htmx-") and name.endswith(".min.js"))
        status, headers, body = _get(f"{url}/static/{paths[htmx]}")
        assert status == 200, f"/static/{paths[htmx]}: {status}"
        assert body == (app / "static" / htmx).read_bytes()
        assert "immutable" in headers.get("Cache-Control", ""), headers

        # Uploads: the media directory the settings resolve to takes a file from the user.
        probe = (
            "import django; django.setup(); "
            "from django.conf import settings; "
            "from django.core.files.base import ContentFile; "
            "from django.core.files.storage import default_storage; "
            "name = default_storage.save('imports/container-probe/run.jsonl', ContentFile(b'{}')); "
            "print(settings.MEDIA_ROOT, default_storage.path(name))"
        )
        upload = subprocess.run(
            _as_user(user, [run_env["PYTHON"], "-c", probe], mounts),
            cwd=app,
            env={**run_env, "DJANGO_SETTINGS_MODULE": "gagar_web.settings"},
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT,
        )
        assert upload.returncode == 0, upload.stdout + upload.stderr
        media_root, saved = upload.stdout.split()
        assert Path(media_root) == media
        assert Path(saved).is_relative_to(media) and Path(saved).stat().st_uid == user.pw_uid
    finally:
        _stop_group(server)

    # The waits role on the same database (migrated above): ASGI, as the same user.
    waits_port = _free_port()
    with open(base / "waits.log", "wb") as log:
        waits = subprocess.Popen(
            _as_user(user, [str(app / "docker" / "start.sh"), "waits"], mounts),
            cwd=app,
            env={**run_env, "GUNICORN_BIND": f"127.0.0.1:{waits_port}"},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        status = None
        for _ in range(READY_TRIES * 2):  # `migrate --check` runs first
            if waits.poll() is not None:
                pytest.fail(f"start.sh waits exited with {waits.returncode}:\n{(base / 'waits.log').read_text()}")
            try:
                status, _, body = _get(f"http://127.0.0.1:{waits_port}/healthz")
                break
            except (TimeoutError, urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert status == 200 and b'"ok"' in body, (base / "waits.log").read_text()
        assert _uid_of(waits.pid) == user.pw_uid
        command = Path(f"/proc/{waits.pid}/cmdline").read_bytes().split(b"\0")
        assert b"gagar_web.asgi" in command and b"gagar_web.waits_worker.WaitsWorker" in command, command
    finally:
        _stop_group(waits)

    # Nothing was written into (or changed in) the root-owned app directory at run time.
    after = _snapshot(app)
    added = sorted(set(after) - set(before))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    assert not added and not changed, f"written into the app dir: added={added[:10]} changed={changed[:10]}"
