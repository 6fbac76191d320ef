"""Shared fixtures. The people in these tests:

- alice: admin of project "acme" (can ingest, sees everything in acme)
- bob: reviewer in "acme"
- carol: admin of project "other" only — acme's pages are 404 for her
- tess: trainer (read-only API token) in "acme"
"""

from __future__ import annotations

import os

import pytest
from django.test import override_settings

from grading.models import Project, Role
from grading.projects.tokens import issue_api_token
from tests.helpers.people import member

# The real data and test vectors under tests/fixtures (tests/helpers/vendored.py names them) ship with
# the repository: none may skip for want of them (see pytest_runtest_makereport).
MISSING_DATA = ("not present", "no vectors", "no test vectors", "no real data", "missing data", "fixture")


def pytest_configure(config):
    # A fast hasher for the people tests create: PBKDF2's deliberate 0.25 s per password is the
    # point in production and pure waste in a fixture that creates alice, bob and carol.
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        own_queues(worker)
    from django.db.models.signals import post_migrate

    post_migrate.connect(restore_default_mapping, dispatch_uid="tests-restore-default-mapping")


def restore_default_mapping(sender, **kwargs) -> None:
    """A transactional test (django_db(transaction=True)) ends by flushing every table, the
    default mapping that migration 0003 created included, and the flush ends with post_migrate:
    put the row back, so the tests after it find the database as migrations leave it. Run
    alone, pytest-django runs every transactional test after the others; under pytest-xdist
    a test process runs whole files, so a file's tests may follow another's transactional one
    (a page that found no default mapping would create it, with queries a pinned count does
    not expect)."""
    if sender.label == "grading":
        from grading.method.services import default_mapping

        default_mapping()


def own_queues(worker: str) -> None:
    """Under pytest-xdist (`make test` runs a process per core) each test process has a test
    database of its own (pytest-django's _gw0, _gw1 suffix) and, here, Celery queues of its own
    on the one broker: the real workers its tests start (tests.helpers.workers, which pass this
    environment on) take only its tasks, and its `app.control.purge()` empties only its queues."""
    from django.conf import settings

    from gagar_web.celery import app

    default, grading = f"celery-{worker}", f"grading-{worker}"
    os.environ["GAGAR_DEFAULT_QUEUE"], os.environ["GAGAR_GRADING_QUEUE"] = default, grading
    routes = {name: {"queue": grading} for name in settings.CELERY_TASK_ROUTES}
    settings.CELERY_TASK_DEFAULT_QUEUE, settings.GAGAR_GRADING_QUEUE, settings.CELERY_TASK_ROUTES = default, grading, routes
    app.conf.task_default_queue, app.conf.task_routes = default, routes


def pytest_collection_modifyitems(config, items):
    """Tests marked `postgres` (advisory locks, TOAST compression, COPY) skip, saying why, where
    `make test` runs on its default SQLite; CI sets DATABASE_URL and runs them."""
    from django.conf import settings

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (DATABASE_URL), as in CI")
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(skip)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A skip for missing data is a failure: it would hide that a clone lacks what it ships."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2]).lower()
        if any(word in reason for word in MISSING_DATA):
            report.outcome = "failed"
            report.longrepr = f"skipped for missing data, which the repository must ship: {report.longrepr[2]}"


@pytest.fixture(autouse=True)
def eager_celery():
    """Tasks run in-process in tests, even where CI sets a real broker; the tests about the
    worker itself switch this off and start a real worker process."""
    from gagar_web.celery import app

    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = True


@pytest.fixture(autouse=True)
def offline_repositories(tmp_path_factory):
    """Repositories come from nowhere unless a test serves one (tests.helpers.gitrepos builds
    them and points GAGAR_REPO_URL_TEMPLATE at file://): no test reaches GitHub, and mirrors
    land in a directory of the test session's, never the checkout's var/repos. Through
    override_settings, not the `settings` fixture: some tests take a parameter of that name."""
    with override_settings(
        GAGAR_REPO_URL_TEMPLATE="file:///nonexistent-gagar-repositories/{repo}",
        GAGAR_REPO_CACHE=str(tmp_path_factory.getbasetemp() / "repo-cache"),
    ):
        yield


@pytest.fixture(autouse=True)
def empty_cache():
    """Each test starts with an empty cache (local memory in tests): memoised figures and
    login counts of one test must not answer for another, whose rows may reuse its ids."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def acme(db):
    return Project.objects.create(name="acme")


@pytest.fixture
def other_project(db):
    return Project.objects.create(name="other")


@pytest.fixture
def alice(acme):
    return member("alice", acme, Role.ADMIN)


@pytest.fixture
def bob(acme):
    return member("bob", acme, Role.REVIEWER)


@pytest.fixture
def carol(other_project):
    return member("carol", other_project, Role.ADMIN)


@pytest.fixture
def alice_token(alice, acme):
    _, secret = issue_api_token(username="alice", project_name="acme", role=Role.ADMIN)
    return secret


@pytest.fixture
def trainer_token(acme):
    _, secret = issue_api_token(username="tess", project_name="acme", role=Role.TRAINER)
    return secret
