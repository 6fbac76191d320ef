"""20 reviewers at once on 50 groups, over HTTP on a live server with real PostgreSQL
(`make test-load`; CI runs it). Each group wants two reviewers (overlap 100 %).

Every reviewer works through the queue as fast as it can: asks for the next group,
submits a judgment made on a page loaded before anyone else submitted (seen_version 0,
so the second of each pair must be told of the conflict), and every fifth submit is sent
twice, as a double click would. Afterwards: no judgment lost (each 302 is a stored row),
none duplicated (one per person per group), every group judged exactly twice, every
double submit answered 409, and every second judgment of a group reported as a conflict.
"""

from __future__ import annotations

import os
import threading
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count
from django.test import Client

from grading.models import Group, Membership, Role
from reviews.models import Assignment, Judgment, JudgmentItem
from reviews.services.queue import update_policy
from tests.helpers.desk import as_lanes
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups

pytestmark = [
    pytest.mark.load,
    pytest.mark.postgres,
    pytest.mark.skipif(
        not os.environ.get("DATABASE_URL", "").startswith("postgres"), reason="needs DATABASE_URL (PostgreSQL), as in CI"
    ),
    pytest.mark.django_db(transaction=True),
]

N_REVIEWERS, N_GROUPS = 20, 50


def reviewer_loop(username: str, outcomes: Counter, lock: threading.Lock, errors: list) -> None:
    client = Client()
    user = get_user_model().objects.get(username=username)
    client.force_login(user)
    n = 0
    try:
        for _ in range(4 * N_GROUPS):  # bounded: a submit that never stores fails the test instead of hanging it
            r = client.post("/projects/acme/review/next/")
            if "/groups/" not in r.url:
                break
            uid = r.url.rstrip("/").split("/groups/")[1]
            # named as the reviewer's blind page names the lanes (A, B, ...), not by rollout index
            body = as_lanes({"tier-0": "T1", "tier-1": "T2", "tier-3": "T2", "seen_version": "0"}, user, uid)
            url = f"/projects/acme/runs/r1/groups/{uid}/judgment/"
            r = client.post(url, body, follow=True)
            seen = [r.status_code]
            double = n % 5 == 0
            if double:
                seen.append(client.post(url, body).status_code)
            with lock:
                outcomes["double submits"] += double
                for code in seen:
                    outcomes[code] += 1
                html = r.content.decode()
                outcomes["conflict reported"] += "while you were judging" in html
                outcomes["stored"] += "Judgment stored" in html
            n += 1
    except Exception as exc:  # noqa: BLE001 — surfaced by the test, not swallowed
        errors.append(f"{username}: {exc!r}")
    finally:
        connection.close()


def test_twenty_reviewers_on_fifty_groups_lose_nothing_and_duplicate_nothing(acme, alice):
    ingest_groups(acme, *(small_group(f"g{i}@1", instance_id=f"t-{i}", rewards=(1, 1, 0, 1)) for i in range(N_GROUPS)))
    update_policy(project=acme, overlap=1.0, blind=True, lease_minutes=60)
    names = [f"reviewer{i:02d}" for i in range(N_REVIEWERS)]
    for name in names:
        user = get_user_model().objects.create_user(username=name, password="x")
        Membership.objects.create(user=user, project=acme, role=Role.REVIEWER)
    outcomes: Counter = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    threads = [threading.Thread(target=reviewer_loop, args=(name, outcomes, lock, errors)) for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert not errors, errors

    stored = Judgment.objects.count()
    assert stored == 2 * N_GROUPS == outcomes["stored"]  # 0 lost: every stored-message is a row and vice versa
    assert outcomes[200] == stored  # each submit followed its redirect to the group page
    assert not Judgment.objects.values("group", "reviewer").annotate(n=Count("id")).filter(n__gt=1).exists()
    per_group = Counter(Judgment.objects.values_list("group_id", flat=True))
    assert set(per_group.values()) == {2} and len(per_group) == Group.objects.filter(is_mixed=True).count()
    assert JudgmentItem.objects.count() == 3 * stored  # all items of every judgment, none partial
    assert outcomes[409] == outcomes["double submits"] > 0
    assert Assignment.objects.filter(status="submitted").count() == stored
    assert outcomes["conflict reported"] == N_GROUPS  # the second judgment of each group was told
    print(
        f"\n20 reviewers x 50 groups: {stored} judgments stored, 0 lost, 0 duplicated, "
        f"{outcomes[409]} double submits refused with 409, {outcomes['conflict reported']} conflicts reported"
    )
