"""Settings for the Gagar review desk — every value comes from the environment.

Unset variables fall back to development defaults (SQLite file, eager Celery) so
`make run` works on a fresh machine; a value that is set but malformed stops the
process at start with the variable's name, instead of surfacing later as a 500.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"Unexpected value {name}={raw!r}: use true or false")


def _env_price(name: str) -> float | None:
    """A price in US dollars (e.g. per million tokens), or None when unset: unknown, never 0."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"Unexpected value {name}={raw!r}: not a number") from None
    if not value >= 0 or value == float("inf"):
        raise ImproperlyConfigured(f"Unexpected value {name}={raw!r}: must be a finite number >= 0")
    return value


def _env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"Unexpected value {name}={raw!r}: not an integer") from None
    if value < minimum:
        raise ImproperlyConfigured(f"Unexpected value {name}={raw!r}: must be >= {minimum}")
    return value


# The deployment's own configuration, which a grader definition may never name (GRADER_ENDPOINT_ENVS).
_OWN_CONFIGURATION = ("DJANGO_", "DATABASE_", "CELERY_", "GAGAR_", "POSTGRES", "PG", "REDIS", "AWS_", "SECRET")
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,99}")


def _env_endpoint_pairs(name: str, default: str) -> dict[str, str]:
    """`URL_VAR:KEY_VAR` or `URL_VAR` items, comma-separated, as {URL_VAR: KEY_VAR or ""}: the
    environment variables a project's defined grader may name for its endpoint, each with the
    one key that may be sent to it. Names only; a name of the deployment's own configuration
    (DJANGO_SECRET_KEY, DATABASE_URL, ...) is refused, so no definition can point at it."""
    raw = os.environ.get(name)
    raw = default if raw is None else raw
    pairs: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        url, _, key = item.partition(":")
        for variable in filter(None, (url, key)):
            if not _ENV_NAME.fullmatch(variable):
                raise ImproperlyConfigured(f"Unexpected value {name}: {variable[:100]!r} is not a variable name (A-Z, 0-9, _)")
            if variable.startswith(_OWN_CONFIGURATION):
                raise ImproperlyConfigured(f"Unexpected value {name}: {variable} is the deployment's own configuration")
        if not url or url in pairs:
            raise ImproperlyConfigured(f"Unexpected value {name}: {item!r} names no endpoint variable, or one twice")
        pairs[url] = key
    return pairs


def _database_from_url(url: str) -> dict:
    """Parse postgres://user:pass@host:port/name?opt=v or sqlite:///path into DATABASES['default']."""
    parsed = urlparse(url)
    if parsed.scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parsed.path.lstrip("/"))
        if not name:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no database")
        try:
            port = parsed.port
        except ValueError:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r} has a bad port") from None
        options: dict = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        # A pool of at most this many connections per process, shared by its threads
        # (DATABASE_POOL_SIZE; `docker/start.sh waits` sets 4): an ASGI server gives every
        # request a thread of its own, so per-thread persistent connections would be one per
        # request. Pooled connections are not persistent (CONN_MAX_AGE 0 is what Django needs).
        pool_size = _env_int("DATABASE_POOL_SIZE", 0)
        if pool_size:
            options["pool"] = {"min_size": 0, "max_size": pool_size, "timeout": 30}
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(port or ""),
            "CONN_MAX_AGE": 0 if pool_size else _env_int("DATABASE_CONN_MAX_AGE", 60),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": options,
            "TEST": {"NAME": os.environ.get("DATABASE_TEST_NAME") or f"test_{name}"},
        }
    if parsed.scheme == "sqlite":
        path = unquote(parsed.path)
        if path.startswith("//"):  # sqlite:////abs/path
            path = path[1:]
        elif path.startswith("/"):  # sqlite:///rel/path
            path = path[1:]
        if not path:
            raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no file")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": path if path.startswith("/") else BASE_DIR / path}
    raise ImproperlyConfigured(f"Unexpected value DATABASE_URL={url!r}: use postgres://… or sqlite:///…")


DEBUG = _env_bool("DJANGO_DEBUG", default=True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=false")
    SECRET_KEY = "dev-only-insecure-key-never-used-with-debug-off"  # noqa: S105  # nosec B105: DEBUG only; production refuses to start without one
elif not DEBUG and len(SECRET_KEY) < 50:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be at least 50 characters when DJANGO_DEBUG=false")

_hosts = os.environ.get("DJANGO_ALLOWED_HOSTS", "")
ALLOWED_HOSTS = [h.strip() for h in _hosts.split(",") if h.strip()] or (["127.0.0.1", "localhost", "testserver"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when DJANGO_DEBUG=false")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "grading",
    "reviews",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "gagar_web.middleware.ContentSecurityPolicyMiddleware",
    # Before any view or query: a NUL in a path or query is a 404/400, not a database 500.
    "gagar_web.middleware.NulRefusalMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "gagar_web.middleware.PrivateCacheMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, so it is the first to see a view's exception: a lost database is a 503.
    "gagar_web.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "gagar_web.urls"
WSGI_APPLICATION = "gagar_web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "grading.context_processors.capabilities",
            ],
        },
    }
]

_database_url = os.environ.get("DATABASE_URL", "")
DATABASES = {
    "default": _database_from_url(_database_url)
    if _database_url
    else {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # WAL lets the dev server read while an import writes. Writers queue instead of failing:
    # every transaction takes the write lock at BEGIN (IMMEDIATE), so a draft autosave landing
    # between a submit's reads and its writes makes the submit wait (up to `timeout` seconds)
    # rather than fail with "database is locked" (a deferred transaction cannot wait to
    # upgrade its read snapshot to a write). tests/reviews/views/test_judge_sqlite.py races the two.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        }
    )

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "projects"
LOGOUT_REDIRECT_URL = "login"

# Mail: invitations to a project (the team page) go out by SMTP when EMAIL_HOST is set; otherwise
# they are written to the console (the link is shown to the admin either way).
EMAIL_HOST = os.environ.get("EMAIL_HOST", "")
EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_SSL = _env_bool("EMAIL_USE_SSL", False)
EMAIL_USE_TLS = _env_bool("EMAIL_USE_TLS", not EMAIL_USE_SSL)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL exclude each other: set one")
EMAIL_PORT = _env_int("EMAIL_PORT", 465 if EMAIL_USE_SSL else 587, minimum=1)
EMAIL_TIMEOUT = _env_int("EMAIL_TIMEOUT", 20, minimum=1)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "gagar@localhost")
PASSWORD_RESET_TIMEOUT = _env_int("GAGAR_INVITE_TIMEOUT", 7 * 24 * 3600, minimum=60)  # an invitation link's life, seconds

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Uploaded agent runs for imports (media/imports/<upload>/); web and workers must share it.
MEDIA_ROOT = Path(os.environ.get("GAGAR_MEDIA_ROOT") or BASE_DIR / "media")
# What one project's imports may keep there at once (uploads waiting, files being unpacked and
# imported; a finished job keeps nothing). Above one upload's own 50 GiB limit, so by default it
# bounds imports running side by side, not any single one.
GAGAR_IMPORT_QUOTA_BYTES = _env_int("GAGAR_IMPORT_QUOTA_BYTES", 64 * 1024**3, minimum=1024 * 1024)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- Security -----------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
CSRF_FAILURE_VIEW = "gagar_web.errors.csrf_failure"  # the styled 403 (JSON under /api/)
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    SESSION_COOKIE_SECURE = _env_bool("DJANGO_SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    SECURE_SSL_REDIRECT = _env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = _env_int("DJANGO_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CSRF_TRUSTED_ORIGINS = [o.strip() for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()]

# --- Cache ----------------------------------------------------------------------
# Login failures (below) and the calibration figures (reviews/selectors/calibration.py) are
# kept in Django's cache: local memory per process unless GAGAR_CACHE_URL names a Redis
# database that every web process shares (redis://host:6379/N).
_CACHE_URL = os.environ.get("GAGAR_CACHE_URL", "").strip()
if _CACHE_URL:
    if not _CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured("GAGAR_CACHE_URL must be a redis://, rediss:// or unix:// URL")
    # GAGAR_CACHE_KEY_PREFIX: for two deployments (or a test and its worker) on one Redis database
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _CACHE_URL,
            "KEY_PREFIX": os.environ.get("GAGAR_CACHE_KEY_PREFIX", "").strip() or "gagar",
        }
    }

# Login throttling (gagar_web/login.py): failed sign-ins per username and per address
# within the window, counted in Django's cache (local memory unless CACHES says otherwise).
GAGAR_LOGIN_MAX_FAILURES = _env_int("GAGAR_LOGIN_MAX_FAILURES", 5, minimum=1)
GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS = _env_int("GAGAR_LOGIN_MAX_FAILURES_PER_ADDRESS", 20, minimum=1)
GAGAR_LOGIN_WINDOW_SECONDS = _env_int("GAGAR_LOGIN_WINDOW_SECONDS", 15 * 60, minimum=1)


# Peers whose X-Real-IP names the client (the shipped nginx, docker/nginx.conf.template): the
# per-address count is then the client's, not the proxy's. Comma-separated addresses or
# networks; none by default (REMOTE_ADDR is the client).
def _networks(raw: str) -> tuple:
    import ipaddress

    try:
        return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in raw.split(",") if part.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"GAGAR_TRUSTED_PROXIES: {exc}") from None


GAGAR_TRUSTED_PROXIES = _networks(os.environ.get("GAGAR_TRUSTED_PROXIES", ""))

# --- Ingest limits --------------------------------------------------------------
# Whole steps are streamed line by line; only one line is ever held in memory.
GAGAR_MAX_LINE_BYTES = _env_int("GAGAR_MAX_LINE_BYTES", 64 * 1024 * 1024, minimum=1024)
# Trainers waiting for a step (GET /api/v1/advantages/?wait=) each hold a server thread: at most
# this many at once per token, per project and in all (grading.waits.waiters); keep the total
# well below the server's threads (docker/start.sh: 4 workers x 16) so pages keep theirs.
GAGAR_WAITERS_PER_TOKEN = _env_int("GAGAR_WAITERS_PER_TOKEN", 8, minimum=1)
GAGAR_WAITERS_PER_PROJECT = _env_int("GAGAR_WAITERS_PER_PROJECT", 24, minimum=1)
GAGAR_WAITERS_TOTAL = _env_int("GAGAR_WAITERS_TOTAL", 32, minimum=1)
# Ordinary (non-streaming) request bodies stay at Django's default 2.5 MB.
DATA_UPLOAD_MAX_MEMORY_SIZE = _env_int("DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440, minimum=1024)

# --- REST framework -------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "grading.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies refuse a key sent twice instead of keeping the last (no silent data loss).
    "DEFAULT_PARSER_CLASSES": [
        "grading.api.parsers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "grading.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # `format` is a query parameter of the exports (jsonl|csv|parquet), not DRF content negotiation.
    "URL_FORMAT_OVERRIDE": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Gagar review desk API",
    "DESCRIPTION": "Rollout groups in, redistributed advantages and labeled groups out.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Celery -------------------------------------------------------------------
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
if CELERY_BROKER_URL and urlparse(CELERY_BROKER_URL).scheme not in {"redis", "rediss", "amqp", "memory"}:
    raise ImproperlyConfigured(f"Unexpected value CELERY_BROKER_URL={CELERY_BROKER_URL!r}: use redis://…")
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", "") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Grading tasks go to a queue of their own, taken by the grading worker: Celery's gevent pool,
# hundreds of model conversations in one process, its database connections from a pool
# (`docker/start.sh grader`, grading.grader.pool). Every other task (imports, exports, beat's)
# stays on the default queue and the prefork worker. Eager Celery (`make run`) routes nothing.
# GAGAR_DEFAULT_QUEUE / GAGAR_GRADING_QUEUE: for two deployments (or two test processes and
# their workers, tests/conftest.py) sharing one Redis database.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("GAGAR_DEFAULT_QUEUE", "").strip() or "celery"
GAGAR_GRADING_QUEUE = os.environ.get("GAGAR_GRADING_QUEUE", "").strip() or "grading"
CELERY_TASK_ROUTES = {name: {"queue": GAGAR_GRADING_QUEUE} for name in ("grading.grade_group", "grading.grade_campaign_chunk")}
# Task time limits must stay below the visibility timeout so a slow task is never
# handed to a second worker while the first still runs it.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=5),
    # How often a worker puts back messages a dead worker took and never acknowledged
    # (kombu's Redis transport; its default sweep is ~100 s whatever the timeout).
    "unacked_restore_interval": _env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10, minimum=1),
    "unacked_restore_throttle": 1,
}
CELERY_TASK_TIME_LIMIT = _env_int("CELERY_TASK_TIME_LIMIT", 1800, minimum=2)
# The soft limit fires first so a task can record a fallback before the hard kill.
CELERY_TASK_SOFT_TIME_LIMIT = (
    CELERY_TASK_TIME_LIMIT - 30 if CELERY_TASK_TIME_LIMIT > 60 else max(1, CELERY_TASK_TIME_LIMIT * 3 // 4)
)
if CELERY_TASK_TIME_LIMIT >= CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]:
    raise ImproperlyConfigured("CELERY_TASK_TIME_LIMIT must be below CELERY_VISIBILITY_TIMEOUT")

# A grading task that meets a database or broker error before or after the model call is
# retried this many times, after GAGAR_GRADING_RETRY_BACKOFF * 2**n seconds (capped, jittered);
# then its job fails. The sweep (every minute) sends a job again when it sat queued past
# GAGAR_GRADING_QUEUED_LIMIT while no worker started any grading, or running past the task's
# hard time limit + GAGAR_GRADING_SWEEP_MARGIN; after GAGAR_GRADING_SWEEP_RESENDS it fails.
GAGAR_GRADING_RETRIES = _env_int("GAGAR_GRADING_RETRIES", 5, minimum=0)
GAGAR_GRADING_RETRY_BACKOFF = _env_int("GAGAR_GRADING_RETRY_BACKOFF", 2, minimum=1)
GAGAR_GRADING_RETRY_BACKOFF_MAX = _env_int("GAGAR_GRADING_RETRY_BACKOFF_MAX", 300, minimum=1)
GAGAR_GRADING_SWEEP_MARGIN = _env_int("GAGAR_GRADING_SWEEP_MARGIN", 60, minimum=0)
GAGAR_GRADING_QUEUED_LIMIT = _env_int(
    "GAGAR_GRADING_QUEUED_LIMIT", CELERY_TASK_TIME_LIMIT + GAGAR_GRADING_SWEEP_MARGIN, minimum=10
)
GAGAR_GRADING_SWEEP_RESENDS = _env_int("GAGAR_GRADING_SWEEP_RESENDS", 3, minimum=0)

# --- Grader ---------------------------------------------------------------------
# Any OpenAI-compatible server. Loopback, link-local and private addresses are refused
# unless GRADER_ALLOW_PRIVATE_NETWORK is set (a local model server, or the tests).
GRADER_BASE_URL = os.environ.get("GRADER_BASE_URL", "")
if GRADER_BASE_URL and urlparse(GRADER_BASE_URL).scheme not in {"http", "https"}:
    raise ImproperlyConfigured(f"Unexpected value GRADER_BASE_URL={GRADER_BASE_URL!r}: use http(s)://host/v1")
GRADER_MODEL = os.environ.get("GRADER_MODEL", "")
GRADER_API_KEY = os.environ.get("GRADER_API_KEY", "")
GRADER_ALLOW_PRIVATE_NETWORK = _env_bool("GRADER_ALLOW_PRIVATE_NETWORK", False)
# The environment variables a project admin's grader definition may name (grading.registry.defined):
# each endpoint variable with the one key variable that may be sent to it. The secrets stay
# in the workers' environment; a definition naming anything else is refused.
GRADER_ENDPOINT_ENVS = _env_endpoint_pairs("GRADER_ENDPOINT_ENVS", "GRADER_BASE_URL:GRADER_API_KEY")
GRADER_MAX_TURNS = _env_int("GRADER_MAX_TURNS", 24, minimum=2)
GRADER_REQUEST_TIMEOUT = _env_int("GRADER_REQUEST_TIMEOUT", 120, minimum=1)
# "tools": the server's native tool calls; "json": one JSON object per reply under a schema, for
# servers or models without tool calling (grading.grader.llm; docs/deployment.md).
GRADER_TOOL_MODE = os.environ.get("GRADER_TOOL_MODE", "tools")
if GRADER_TOOL_MODE not in {"tools", "json"}:
    raise ImproperlyConfigured(f"Unexpected value GRADER_TOOL_MODE={GRADER_TOOL_MODE!r}: use tools or json")
# What the LLM grader's model costs, US dollars per million prompt (in) and completion (out)
# tokens. With both set, each verdict's usage carries cost_usd; unset, cost stays unknown.
# A project's own scanners (grading.jobs.project_scanners): rollouts one run of a scanner reads
# at most (the rest are left for the next run), and characters of a rollout an LLM scanner sends.
PROJECT_SCANNER_MAX_ROLLOUTS = _env_int("PROJECT_SCANNER_MAX_ROLLOUTS", 500, minimum=1)
PROJECT_SCANNER_PROMPT_CHARS = _env_int("PROJECT_SCANNER_PROMPT_CHARS", 60_000, minimum=1_000)
GRADER_PRICE_PER_MTOK_IN = _env_price("GRADER_PRICE_PER_MTOK_IN")
GRADER_PRICE_PER_MTOK_OUT = _env_price("GRADER_PRICE_PER_MTOK_OUT")
# What one project's LLM campaigns may spend in a rolling 24 hours (grading.jobs.campaigns):
# model tokens, and US dollars where the prices above are set; 0 is no cap. A project admin
# starts campaigns; the operator pays for the model.
GAGAR_CAMPAIGN_TOKENS_PER_DAY = _env_int("GAGAR_CAMPAIGN_TOKENS_PER_DAY", 200_000_000)
GAGAR_CAMPAIGN_USD_PER_DAY = _env_price("GAGAR_CAMPAIGN_USD_PER_DAY") or 0.0
# The grader's workspace (grading.repos, docs/workspace.md): a task's repo + base_commit resolve
# through the URL template ({repo} is the task's "owner/name"; https://, file:// or a local path)
# into bare mirrors under the cache, with every rollout's patch applied as a commit there. An
# empty GAGAR_REPO_CACHE turns the repository tools off.
GAGAR_REPO_URL_TEMPLATE = os.environ.get("GAGAR_REPO_URL_TEMPLATE", "").strip() or "https://github.com/{repo}.git"
if "{repo}" not in GAGAR_REPO_URL_TEMPLATE:
    # the value is not shown: a template may carry credentials (user:token@, ?token=)
    raise ImproperlyConfigured("Unexpected value GAGAR_REPO_URL_TEMPLATE: it must contain {repo}")
_REPO_CACHE = os.environ.get("GAGAR_REPO_CACHE")
GAGAR_REPO_CACHE = (
    str(BASE_DIR / "var" / "repos") if _REPO_CACHE is None else (_REPO_CACHE.strip() and str(Path(_REPO_CACHE.strip()).resolve()))
)
GAGAR_REPO_CACHE_BYTES = _env_int("GAGAR_REPO_CACHE_BYTES", 20 * 1024**3, minimum=1024 * 1024)
GAGAR_REPO_FETCH_TIMEOUT = _env_int("GAGAR_REPO_FETCH_TIMEOUT", 600, minimum=1)
# Worktrees (made for checks) unused this long are removed by the hourly tidy (Celery beat).
GAGAR_REPO_TREE_MAX_AGE = _env_int("GAGAR_REPO_TREE_MAX_AGE", 24 * 3600, minimum=60)
# Where the grader's checks run: "bubblewrap" (this machine, no network, a non-root uid) or
# "swe-rex" (a SWE-ReX remote server in the task's environment image); "none" offers no checks.
GAGAR_SANDBOX = os.environ.get("GAGAR_SANDBOX", "").strip() or "bubblewrap"
if GAGAR_SANDBOX not in ("bubblewrap", "swe-rex", "none"):
    raise ImproperlyConfigured(f"Unexpected value GAGAR_SANDBOX={GAGAR_SANDBOX!r}: use bubblewrap, swe-rex or none")
# The non-root uid a root worker runs bubblewrap checks as, or a range "61000-61007": one uid per
# check running at once on this host (grading.repos.sandbox).
GAGAR_SANDBOX_UID = os.environ.get("GAGAR_SANDBOX_UID", "").strip() or "65534"
# The most memory a project admin may give each process of a check, MiB (the check policy page;
# RLIMIT_AS per process, so a check's total is bounded by this × its processes). 4 GiB by default.
GAGAR_CHECK_MEMORY_MB_MAX = _env_int("GAGAR_CHECK_MEMORY_MB_MAX", 4096, minimum=64)
# How many checks one project may run at once on a worker host (grading.repos.shares), so one
# project's long checks never hold every sandbox slot; give a host more GAGAR_SANDBOX_UID uids
# than this.
GAGAR_CHECKS_PER_PROJECT = _env_int("GAGAR_CHECKS_PER_PROJECT", 2, minimum=1)
GAGAR_SWEREX_URL = os.environ.get("GAGAR_SWEREX_URL", "").strip()
GAGAR_SWEREX_TOKEN = os.environ.get("GAGAR_SWEREX_TOKEN", "")
if GAGAR_SANDBOX == "swe-rex" and not (GAGAR_SWEREX_URL and GAGAR_SWEREX_TOKEN):
    raise ImproperlyConfigured("GAGAR_SANDBOX=swe-rex needs GAGAR_SWEREX_URL and GAGAR_SWEREX_TOKEN")
# When ingest's rollouts become searchable: "inline" indexes them in the ingest transaction
# (searchable the moment they are stored; the default with eager Celery, so `make run` and the
# tests), "task" queues them for a worker right after it (ingest stays fast; a search says how
# many of its scope still wait). Unset: "inline" when Celery runs tasks eagerly, else "task"
# (grading.search.index).
GAGAR_SEARCH_INDEX = os.environ.get("GAGAR_SEARCH_INDEX", "").strip()
if GAGAR_SEARCH_INDEX not in ("", "inline", "task"):
    raise ImproperlyConfigured(f"Unexpected value GAGAR_SEARCH_INDEX={GAGAR_SEARCH_INDEX!r}: use inline or task")
# "task": one worker at a time builds the index (PostgreSQL), and while trainers are posting it
# takes at most this share of its time, in percent, so that ingest keeps the database's cores;
# between posts it runs flat out (grading.search.index.index_backlog). 100: never paced.
GAGAR_SEARCH_INDEX_SHARE = _env_int("GAGAR_SEARCH_INDEX_SHARE", 25, minimum=1)
if GAGAR_SEARCH_INDEX_SHARE > 100:
    raise ImproperlyConfigured(f"Unexpected value GAGAR_SEARCH_INDEX_SHARE={GAGAR_SEARCH_INDEX_SHARE}: a percent, 1 to 100")

# Each new rollout's patch highlighted by a Celery task after ingest (grading.highlights), so
# a group's first view reads it; false: group pages highlight patches when shown.
GAGAR_HIGHLIGHT_AHEAD = _env_bool("GAGAR_HIGHLIGHT_AHEAD", True)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}
