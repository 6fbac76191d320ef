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
from tests.helpers.parallel import own_queues, restore_default_mapping, slow_files_first
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


def pytest_collection_modifyitems(config, items):
    """Tests marked `postgres` (advisory locks, TOAST compression, COPY) skip, saying why, where
    `make test` runs on its default SQLite; CI sets DATABASE_URL and runs them."""
    from django.conf import settings

    if os.environ.get("PYTEST_XDIST_WORKER"):
        slow_files_first(items)

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
