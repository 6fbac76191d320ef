"""The differential matrix on the group page in real Chromium: a blind reviewer sees nothing of
it while judging (no sentence, no matrix, no check), and after the reveal reads which
rollout's new test fails on which patch, each sentence a link that lands on its check.

The group: tests/helpers/repo_groups.diverging_group (three fixes of mean([]) that pass the
task's test, rollout 1 returning None where 0, 2 and the gold patch return 0.0), graded by the
heuristic grader with checks on, in the bubblewrap sandbox. bob reviews acme
(tests/reviews/conftest.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from grading.jobs.grade import grade_group
from grading.models import CheckPolicy, Verdict
from reviews.selectors.lanes import lanes_for
from tests.helpers.browser import open_blind_assignment
from tests.helpers.repo_groups import diverging_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_sentences_show_after_the_reveal_and_not_before(live_server, page, bob, acme, tmp_path, settings):
    group = diverging_group(tmp_path, settings, acme)
    CheckPolicy.objects.create(project=acme, enabled=True, max_checks=16, seconds=60)
    verdict = grade_group(group_id=group.pk, backend="heuristic")
    assert verdict.status == Verdict.Status.VALID, verdict.errors
    cell = next(c for c in verdict.raw["differential"]["cells"] if (c["tests_of"], c["state"]) == (0, 1))

    open_blind_assignment(page, live_server, bob, group)
    html = page.content()
    for hidden in ("differential", "fails on", "check-1", "gagar differential", "#0", "#1"):
        assert hidden not in html, hidden  # judging blind: nothing of the grader's checks

    page.get_by_test_id("reveal-early").click()
    page.get_by_test_id("confirm-reveal-confirm").click()
    # bob still meets the rollouts by his lane labels after the reveal
    lanes = lanes_for(user=bob, group=group)
    said = f"{lanes.name(0)}'s new test fails on {lanes.name(1)}'s patch"
    sentence = page.get_by_test_id("differential-sentence").filter(has_text=said)
    expect(sentence).to_have_count(1)
    expect(sentence).to_contain_text(f"check:{cell['check']}")
    expect(page.get_by_test_id("differential-matrix")).to_contain_text("gold")
    sentence.get_by_role("link").click()
    check = page.get_by_test_id(f"check-{cell['check']}")
    expect(check).to_be_in_viewport()
    expect(check.get_by_test_id("check-cell")).to_have_text(said)
    assert "#0" not in page.content() and "rollout 0" not in page.content()  # no index beside the labels
    assert page.url.endswith(f"#check-{cell['check']}")
    assert page.console_log.errors == []
