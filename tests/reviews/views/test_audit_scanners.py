"""The scanners page under the cheat audit: each category's versions against the labeled rollouts.

People: alice admin; bob, dan reviewers; erin auditor (tests/reviews/conftest.py); carol an
admin of another project only. World: tests/helpers/scan_world.py.
"""

from __future__ import annotations

import re

import pytest

from grading.grader.prescreen.catalogue import BY_SLUG, CATEGORIES
from grading.models import Rollout, ScanLabel
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.scan_world import OLDER_GOLD, scan_world

pytestmark = pytest.mark.django_db
URL = "/projects/acme/audit/scanners/"


def row(page: str, scanner: str) -> dict[str, str]:
    """The cells of one version's row, by data-testid, as text."""
    start = page.index(f'data-testid="scanner-{scanner}"')
    tr = page[start : page.index("</tr>", start)]
    return {
        name: re.sub(r"<[^>]+>", "", value).strip()
        for name, value in re.findall(r'<td data-testid="(\w+)">(.*?)</td>', tr, flags=re.S)
    }


def test_an_auditor_sees_every_category_with_its_version_and_figures(client, acme, erin):
    scan_world(acme)
    client.force_login(erin)
    page = client.get(URL).content.decode()
    for category in CATEGORIES:
        assert f'data-testid="scanner-{category.slug}@{category.version}"' in page
    fetch = row(page, f"project_fetch@{BY_SLUG['project_fetch'].version}")
    assert fetch == {
        "findings": "2",
        "labeled": "5 (2)",
        "tp": "1",
        "fp": "1",
        "fn": "1",
        "precision": "0.50 [0.10, 0.91]",
        "recall": "0.50 [0.10, 0.91]",
    }
    older = row(page, OLDER_GOLD)
    assert (older["findings"], older["tp"], older["fp"], older["fn"]) == ("3", "1", "1", "unknown")
    assert older["precision"] == "0.50 [0.10, 0.91]" and older["recall"] == "—"
    assert "7 labeled rollouts; the current versions read 7 of them." in page


def test_the_audit_page_links_to_it(client, acme, erin):
    client.force_login(erin)
    assert f'href="{URL}"' in client.get("/projects/acme/audit/").content.decode()


def test_reviewers_are_refused_outsiders_get_404_and_anonymous_goes_to_login(client, acme, bob, carol, erin):
    client.force_login(bob)  # bob reviews in acme but does not audit
    assert client.get(URL).status_code == 403
    client.force_login(carol)  # carol is not in acme
    assert client.get(URL).status_code == 404
    client.logout()
    r = client.get(URL)
    assert r.status_code == 302 and "/accounts/login/" in r["Location"]
    client.force_login(erin)
    assert client.post(URL).status_code == 405  # a page to read, nothing to post


def test_the_page_takes_the_same_queries_however_many_labels(client, acme, erin, django_assert_num_queries):
    scan_world(acme)
    client.force_login(erin)
    # session, user, project, membership; the labels, the findings per version, the stored
    # versions' findings on labeled rollouts, the labeled rollouts with bodies and tasks; the
    # project's own scanners
    with django_assert_num_queries(9):
        assert client.get(URL).status_code == 200
    ingest_groups(acme, *(small_group(f"more{i}@1", instance_id=f"m-{i}") for i in range(4)))
    ScanLabel.objects.bulk_create(
        ScanLabel(project=acme, rollout=r, category="test_skip", label="honest", source="upload")
        for r in Rollout.objects.filter(group__uid__startswith="more")
    )
    with django_assert_num_queries(9):
        page = client.get(URL).content.decode()
    assert "19 labeled rollouts; the current versions read 19 of them." in page
