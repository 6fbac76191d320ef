"""A submit never fails on SQLite (the default `make run` mode) because a draft autosave
writes at the same moment.

The page's autosave (600 ms after the last key, and the `beforeunload` beacon) can reach the
server while the submit's transaction runs. With SQLite's default deferred transactions the
submit reads first, the draft then writes, and the submit can no longer upgrade its read
snapshot to a write: "database is locked" at once, whatever the busy timeout, and a bare 503.
The settings make every transaction BEGIN IMMEDIATE (and WAL, and a 20 s busy timeout), so the
two writers queue. This test races the real draft and submit views from two threads.

pytest-django's SQLite test database lives in memory with a shared cache, where concurrent
writers fail with "database table is locked" regardless of the settings; so the race runs on
a file copy of the test database, opened with the project's own connection settings.
"""

from __future__ import annotations

import copy
import random
import sqlite3
import threading

import pytest
from django.conf import settings
from django.db import connection, connections
from django.test import Client

from grading.models import Role
from reviews.models import Assignment, Judgment
from reviews.services.queue import assign
from tests.helpers.desk import as_lanes, group_url, judgment_post
from tests.helpers.people import member

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS_PER_GROUP = 15  # reviewers; each races a draft against a submit on both mixed groups
PASSING = (0, 1, 3)


@pytest.fixture
def sqlite_only():
    if connection.vendor != "sqlite":
        pytest.skip("these settings are SQLite's; DATABASE_URL points to PostgreSQL here")


def test_sqlite_connections_use_wal_and_immediate_transactions(sqlite_only, tmp_path):
    options = settings.DATABASES["default"]["OPTIONS"]
    assert options["transaction_mode"] == "IMMEDIATE"
    assert options["timeout"] >= 5
    db = _file_copy(tmp_path)
    wrapper = db.connect()
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
            cursor.execute("PRAGMA busy_timeout")
            assert cursor.fetchone()[0] >= 5000
        assert wrapper.transaction_mode == "IMMEDIATE"
    finally:
        wrapper.close()


def test_a_draft_autosave_racing_the_submit_never_loses_the_judgment(sqlite_only, tmp_path, acme, groups):
    reviewers = [member(f"rev{n}", acme, Role.REVIEWER) for n in range(ROUNDS_PER_GROUP)]
    rounds = []
    for uid in ("g1@1", "g2@1"):
        for person in reviewers:
            assign(group=groups[uid], reviewer=person)
            rounds.append((person, uid))
    db = _file_copy(tmp_path)

    failures = []
    for n, (person, uid) in enumerate(rounds):
        tiers = {i: ("T1", "T2", "T3")[(i + n) % 3] for i in PASSING}
        statuses = db.race(person, uid, tiers, delay=random.uniform(0, 0.03))  # noqa: S311
        if statuses["submit"] != 302 or statuses["draft"] not in (200, 409):
            failures.append((person.username, uid, statuses))
    assert failures == [], f"{len(failures)} of {len(rounds)} rounds failed: {failures[:5]}"

    stored = db.run(
        lambda: {
            (j.reviewer.username, j.group.uid): {i.rollout.index: i.tier for i in j.items.select_related("rollout")}
            for j in Judgment.objects.select_related("reviewer", "group").prefetch_related("items")
        }
    )
    assert len(stored) == len(rounds)  # every submit stored its judgment …
    for n, (person, uid) in enumerate(rounds):  # … with what was submitted
        assert stored[(person.username, uid)] == {i: ("T1", "T2", "T3")[(i + n) % 3] for i in PASSING}
    assert db.run(lambda: Assignment.objects.exclude(status=Assignment.Status.SUBMITTED).count()) == 0
    # and no draft that lost the race was written back onto a finished assignment
    assert db.run(lambda: Assignment.objects.exclude(draft={}).count()) == 0


class _FileDatabase:
    """A file copy of the test database; threads open it with the project's connection settings."""

    def __init__(self, path):
        self.settings_dict = copy.deepcopy(connection.settings_dict)
        self.settings_dict["NAME"] = str(path)

    def connect(self):
        return type(connections["default"])(copy.deepcopy(self.settings_dict), "default")

    def run(self, fn):
        """`fn()` in a fresh thread whose default connection is the file database."""
        result, errors = [], []

        def target():
            connections["default"] = self.connect()
            try:
                result.append(fn())
            except BaseException as error:  # noqa: BLE001 - re-raised in the caller
                errors.append(error)
            finally:
                connections["default"].close()

        thread = threading.Thread(target=target)
        thread.start()
        thread.join(timeout=120)
        if errors:
            raise errors[0]
        assert result, "thread did not finish"
        return result[0]

    def race(self, person, uid, tiers, *, delay: float) -> dict[str, int]:
        """POST a draft and the submit of the same assignment at the same moment."""
        client = Client()
        self.run(lambda: client.force_login(person))
        cookies = client.cookies
        barrier = threading.Barrier(2, timeout=30)
        statuses: dict[str, int] = {}
        draft_data = {f"tier-{i}": t for i, t in tiers.items()}

        def draft():
            own = Client()
            own.cookies = copy.deepcopy(cookies)
            barrier.wait()
            threading.Event().wait(delay)  # vary which of the two reaches the database first
            statuses["draft"] = own.post(group_url(uid, "draft/"), as_lanes(draft_data, own, uid)).status_code
            return True

        def submit():
            own = Client()
            own.cookies = copy.deepcopy(cookies)
            barrier.wait()
            statuses["submit"] = own.post(group_url(uid, "judgment/"), as_lanes(judgment_post(tiers), own, uid)).status_code
            return True

        threads = [threading.Thread(target=lambda f=f: self.run(f)) for f in (draft, submit)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        return statuses


def _file_copy(tmp_path) -> _FileDatabase:
    """Copy the (in-memory) test database to a file with SQLite's backup API."""
    path = tmp_path / "race.sqlite3"
    connection.ensure_connection()
    target = sqlite3.connect(path)
    try:
        connection.connection.backup(target)
    finally:
        target.close()
    return _FileDatabase(path)
