"""Sign-in throttling that holds (gagar_web/login.py, gagar_web/throttle.py): on the Django
admin's login too, counted before the password is checked, atomically, and shared by every
process (a table of its own, or Redis when the cache is one).

People: root, a superuser; alice, admin of acme. Limits: 5 per username, 20 per address.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection
from django.test import Client

from grading.models import ThrottleCount

REDIS_URL = os.environ.get("GAGAR_TEST_THROTTLE_REDIS_URL", "redis://127.0.0.1:6379/12")
ROOT = Path(__file__).resolve().parents[2]


def _redis_or_skip():
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except redis.RedisError as exc:
        pytest.skip(f"no Redis at {REDIS_URL}: {exc}")


@pytest.fixture(params=["table", "redis"])
def store(request, settings):
    """Where the counts live: the table (no Redis configured) or a Redis database of this test's own."""
    settings.GAGAR_LOGIN_MAX_FAILURES = 5
    settings.GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS = 20
    if request.param == "redis":
        _redis_or_skip()
        settings.CACHES = {
            "default": {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": REDIS_URL,
                "KEY_PREFIX": f"throttle-test-{uuid.uuid4().hex}",
            }
        }
    return request.param


@pytest.fixture
def root(db):
    return get_user_model().objects.create_superuser(username="root", password="root-pass-123", email="")


@pytest.mark.django_db
def test_the_admin_login_is_throttled_like_the_login_page(store, root):
    # Before: 30 wrong passwords for a superuser on /admin/login/ all answered 200, and the
    # right one then signed in. Now the 6th is refused unchecked, and so is the right one.
    client = Client()
    answers = [client.post("/admin/login/", {"username": "root", "password": f"wrong-{n}"}).status_code for n in range(30)]
    assert answers[:5] == [200] * 5 and set(answers[5:]) == {429}
    r = client.post("/admin/login/", {"username": "root", "password": "root-pass-123"})
    assert r.status_code == 429 and int(r["Retry-After"]) > 0
    assert "Too many failed sign-ins" in r.content.decode()
    assert "_auth_user_id" not in client.session
    # The login page shares the count: no second budget there.
    assert client.post("/accounts/login/", {"username": "root", "password": "root-pass-123"}).status_code == 429


@pytest.mark.django_db
def test_the_counts_are_not_in_the_process_memory(store, root):
    # Before: the counts lived in each gunicorn worker's memory, so 4 workers gave 4 budgets.
    # Emptying this process's cache (what another worker's looks like) leaves the count.
    client = Client()
    for n in range(5):
        client.post("/accounts/login/", {"username": "root", "password": f"wrong-{n}"})
    if store == "table":
        cache.clear()
        assert ThrottleCount.objects.filter(count=5).count() == 2  # the username and the address
    assert client.post("/accounts/login/", {"username": "root", "password": "root-pass-123"}).status_code == 429


@pytest.mark.django_db(transaction=True)
def test_forty_wrong_passwords_at_once_check_at_most_five(store, root):
    # Before: the count was read before it was written, so 40 attempts sent at once were all
    # checked and none got 429. Every thread is its own client with its own connection.
    if connection.vendor == "sqlite" and store == "table":
        pytest.skip("SQLite's in-memory test database is one connection; the threads need PostgreSQL")
    n = 40
    ready = threading.Barrier(n)
    answers: list[int] = []
    lock = threading.Lock()

    def attempt(i):
        client = Client()
        ready.wait()
        status = client.post(
            "/admin/login/" if i % 2 else "/accounts/login/", {"username": "root", "password": f"wrong-{i}"}
        ).status_code
        with lock:
            answers.append(status)
        connection.close()

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answers) == n
    assert answers.count(200) <= 5, answers
    assert answers.count(429) >= n - 5


_CHILD = """
import sys, django
django.setup()
from gagar_web import throttle
print("ready", flush=True)
sys.stdin.readline()  # every child is ready: go
print(" ".join(str(throttle.hit(sys.argv[1], window=600).count) for _ in range(int(sys.argv[2]))), flush=True)
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_processes_share_one_count_and_never_repeat_a_number(store):
    # Four processes (four gunicorn workers) hitting one key 25 times each at once: 100
    # different counts, 1 to 100: one budget, counted atomically across them.
    if connection.vendor != "postgresql" and store == "table":
        pytest.skip("the processes need a database they can all open: PostgreSQL")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "gagar_web.settings", "PYTHONPATH": str(ROOT)}
    if store == "redis":
        env["GAGAR_CACHE_URL"] = REDIS_URL
        env["GAGAR_CACHE_KEY_PREFIX"] = f"throttle-test-{uuid.uuid4().hex}"
    else:
        db = connection.settings_dict
        env["DATABASE_URL"] = (
            f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
        )
    key = f"test:{uuid.uuid4().hex}"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, key, "25"], cwd=ROOT, env=env, text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for _ in range(4)
    ]
    assert [child.stdout.readline().strip() for child in children] == ["ready"] * 4
    for child in children:
        child.stdin.write("go\n")
        child.stdin.flush()
    counts = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        counts += [int(c) for c in out.split()]
    assert sorted(counts) == list(range(1, 101))


@pytest.mark.django_db
def test_behind_the_shipped_proxy_one_clients_failures_do_not_pause_anyone_elses(store, root, settings):
    # Behind nginx every REMOTE_ADDR is the proxy's: 20 wrong passwords from one client (over
    # several usernames) used to pause every sign-in of the site. The proxy's X-Real-IP is the
    # client's address when the proxy is trusted (GAGAR_TRUSTED_PROXIES), and only then.
    import ipaddress

    proxy = {"REMOTE_ADDR": "172.18.0.5"}
    settings.GAGAR_TRUSTED_PROXIES = (ipaddress.ip_network("172.16.0.0/12"),)
    attacker = Client(**proxy, HTTP_X_REAL_IP="203.0.113.7")
    answers = [attacker.post("/accounts/login/", {"username": f"user{n % 10}", "password": "x"}).status_code for n in range(25)]
    assert answers.count(429) == 5  # the attacker's own address budget of 20 is spent
    someone = Client(**proxy, HTTP_X_REAL_IP="198.51.100.9")
    r = someone.post("/accounts/login/", {"username": "root", "password": "root-pass-123"})
    assert r.status_code == 302 and someone.session.get("_auth_user_id")
    # an untrusted peer cannot choose its address by the header
    settings.GAGAR_TRUSTED_PROXIES = ()
    spoofing = [
        Client(REMOTE_ADDR="192.0.2.1", HTTP_X_REAL_IP=f"10.0.0.{n}")
        .post("/accounts/login/", {"username": f"other{n}", "password": "x"})
        .status_code
        for n in range(21)
    ]
    assert spoofing[-1] == 429
