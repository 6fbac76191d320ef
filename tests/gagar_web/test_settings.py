"""Bad environment values stop the process at start, naming the variable."""

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def start(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_"))}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER)",
        ],
        cwd=ROOT,
        env={**clean, "DJANGO_SETTINGS_MODULE": "gagar_web.settings", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_defaults_are_sqlite_and_eager_celery():
    r = start()
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["django.db.backends.sqlite3", "True"]


def test_postgres_url_and_broker_are_read():
    r = start(DATABASE_URL="postgres://u:p@db.example:5433/gagar", CELERY_BROKER_URL="redis://localhost:6379/0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["django.db.backends.postgresql", "False"]


@pytest.mark.slow
def test_a_database_pool_replaces_persistent_connections_where_sized():
    """The waits process (docker/start.sh waits) shares a few pooled connections among its threads."""
    code = (
        "import django; django.setup(); from django.conf import settings; d = settings.DATABASES['default']; "
        "print(d['CONN_MAX_AGE'], d['OPTIONS'].get('pool'))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_"))}
    env = {**clean, "DJANGO_SETTINGS_MODULE": "gagar_web.settings", "DATABASE_URL": "postgres://u:p@db.example:5433/gagar"}
    persistent = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    pooled = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**env, "DATABASE_POOL_SIZE": "4"}, capture_output=True, text=True, timeout=60
    )
    assert persistent.stdout.split() == ["60", "None"], persistent.stderr
    assert pooled.stdout.strip() == "0 {'min_size': 0, 'max_size': 4, 'timeout': 30}", pooled.stderr


def test_the_grader_variables_a_definition_may_name_are_read_as_pairs():
    code = "import django; django.setup(); from django.conf import settings; print(settings.GRADER_ENDPOINT_ENVS)"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "GRADER_"))}
    env = {**clean, "DJANGO_SETTINGS_MODULE": "gagar_web.settings"}
    run = functools.partial(subprocess.run, [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run(env=env).stdout.strip() == "{'GRADER_BASE_URL': 'GRADER_API_KEY'}"
    both = run(env={**env, "GRADER_ENDPOINT_ENVS": "OPENAI_BASE_URL:OPENAI_API_KEY, LOCAL_LLM_URL"})
    assert both.stdout.strip() == "{'OPENAI_BASE_URL': 'OPENAI_API_KEY', 'LOCAL_LLM_URL': ''}", both.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"DJANGO_DEBUG": "maybe"}, "DJANGO_DEBUG"),
        ({"DATABASE_URL": "mysql://x/y"}, "DATABASE_URL"),
        ({"DATABASE_URL": "postgres://host/"}, "DATABASE_URL"),
        ({"CELERY_BROKER_URL": "http://nope"}, "CELERY_BROKER_URL"),
        ({"DJANGO_DEBUG": "false"}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "short"}, "DJANGO_SECRET_KEY"),
        ({"DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "k" * 60}, "DJANGO_ALLOWED_HOSTS"),
        ({"GAGAR_MAX_LINE_BYTES": "lots"}, "GAGAR_MAX_LINE_BYTES"),
        ({"DATABASE_URL": "postgres://h/db", "DATABASE_POOL_SIZE": "some"}, "DATABASE_POOL_SIZE"),
        ({"GAGAR_CACHE_URL": "memcached://x:11211"}, "GAGAR_CACHE_URL"),
        ({"EMAIL_PORT": "smtp"}, "EMAIL_PORT"),
        ({"EMAIL_USE_TLS": "true", "EMAIL_USE_SSL": "true"}, "EMAIL_USE_SSL"),
        ({"GRADER_ENDPOINT_ENVS": "JUDGE_URL:DJANGO_SECRET_KEY"}, "GRADER_ENDPOINT_ENVS"),
        ({"GRADER_ENDPOINT_ENVS": "DATABASE_URL"}, "GRADER_ENDPOINT_ENVS"),
        ({"GRADER_ENDPOINT_ENVS": "judge-url"}, "GRADER_ENDPOINT_ENVS"),
        ({"GRADER_ENDPOINT_ENVS": "A_URL,A_URL:A_KEY"}, "GRADER_ENDPOINT_ENVS"),
    ],
)
def test_bad_values_fail_loudly_at_start(env, named):
    r = start(**env)
    assert r.returncode != 0
    assert "ImproperlyConfigured" in r.stderr and named in r.stderr


@pytest.mark.skipif(
    not os.environ.get("CELERY_BROKER_URL", "").startswith("redis://"), reason="needs CELERY_BROKER_URL (real Redis), as in CI"
)
def test_a_shared_cache_is_used_and_works_when_named():
    """GAGAR_CACHE_URL: every web process shares login counts and calibration figures (real Redis)."""
    code = (
        "import django; django.setup(); from django.conf import settings; from django.core.cache import cache; "
        "print(settings.CACHES['default']['BACKEND']); cache.set('probe', 41); print(cache.get('probe') + 1)"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "GAGAR_CACHE"))}
    r = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, "DJANGO_SETTINGS_MODULE": "gagar_web.settings", "GAGAR_CACHE_URL": os.environ["CELERY_BROKER_URL"]},
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["django.core.cache.backends.redis.RedisCache", "42"]


@pytest.mark.slow
def test_invitations_are_mailed_by_smtp_only_where_email_host_is_set():
    show = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.EMAIL_BACKEND, s.EMAIL_PORT, s.EMAIL_USE_TLS)"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "EMAIL_"))}
    env = {**clean, "DJANGO_SETTINGS_MODULE": "gagar_web.settings"}

    def run(**extra):
        return subprocess.run(
            [sys.executable, "-c", show], cwd=ROOT, env={**env, **extra}, capture_output=True, text=True, timeout=60
        )

    assert run().stdout.split() == ["django.core.mail.backends.console.EmailBackend", "587", "True"]
    assert run(EMAIL_HOST="smtp.example.org", EMAIL_USE_SSL="true").stdout.split() == [
        "django.core.mail.backends.smtp.EmailBackend",
        "465",
        "False",
    ]
