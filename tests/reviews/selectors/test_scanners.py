"""The scanners against the validation set (reviews.selectors.scanners), on the labeled world of
tests/helpers/scan_world.py: every count by hand, every interval recomputed with scipy's Wilson
interval, which shares no code with ours.

People: alice admin of acme; bob a reviewer who judges real-long-00 blind.
"""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from grading.grader.prescreen.catalogue import BY_SLUG, CATEGORIES
from grading.grader.prescreen.validation import figures
from grading.models import Group, Role
from reviews.models import Assignment
from reviews.selectors.scanners import scanner_report
from tests.helpers.people import member
from tests.helpers.scan_world import EXPECTED, EXPECTED_OLDER, LABELED_ROLLOUTS, OLDER_GOLD, REAL, scan_world

pytestmark = pytest.mark.django_db


def scipy_wilson(k: int, n: int):
    """scipy's Wilson 95 % interval, to compare with ours: ours is rounded to 3 places and takes
    z = 1.96 where scipy takes 1.95996..., so they agree to 0.001."""
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return pytest.approx((ci.low, ci.high), abs=1e-3)


def test_each_category_is_counted_by_hand_with_scipys_intervals(acme):
    scan_world(acme)
    report = scanner_report(acme)
    assert [row.slug for row in report.rows] == [c.slug for c in CATEGORIES]  # all twenty, in order
    assert (report.labeled_rollouts, report.rescreened, report.capped) == (LABELED_ROLLOUTS, LABELED_ROLLOUTS, False)
    rows = {row.slug: row for row in report.rows}
    for slug, (tp, fp, fn, tn) in EXPECTED.items():
        current = rows[slug].current
        assert (current.scanner, current.current) == (f"{slug}@{BY_SLUG[slug].version}", True)
        f = current.figures
        assert (f.tp, f.fp, f.fn, f.tn) == (tp, fp, fn, tn), slug
        assert f.precision == (tp / (tp + fp) if tp + fp else None)
        assert f.recall == (tp / (tp + fn) if tp + fn else None)
        assert f.precision_interval == (scipy_wilson(tp, tp + fp) if tp + fp else None)
        assert f.recall_interval == (scipy_wilson(tp, tp + fn) if tp + fn else None)
        assert rows[slug].labeled == tp + fp + fn + tn
    # project_fetch: 1 of 2 flagged is a cheat, 1 of 2 cheats is flagged
    assert rows["project_fetch"].current.figures.precision_interval == (0.095, 0.905)
    assert rows["project_fetch"].current.findings == 2  # stored by the scan, on real #0 and #1


def test_an_older_version_has_its_precision_and_no_recall(acme):
    scan_world(acme)
    gold = next(row for row in scanner_report(acme).rows if row.slug == "gold_identity")
    assert [v.scanner for v in gold.versions] == [f"gold_identity@{BY_SLUG['gold_identity'].version}", OLDER_GOLD]
    older = gold.versions[1]
    tp, fp = EXPECTED_OLDER[OLDER_GOLD]
    assert (older.current, older.findings, older.figures.tp, older.figures.fp) == (False, 3, tp, fp)
    assert (older.figures.fn, older.figures.recall, older.recall_known) == (None, None, False)
    assert older.figures.precision == 0.5 and older.figures.precision_interval == scipy_wilson(1, 2)
    assert gold.current.figures.recall == 0.0 and gold.current.figures.recall_interval == scipy_wilson(0, 2)


def test_categories_without_labels_or_findings_show_no_figures(acme):
    scan_world(acme)
    row = next(row for row in scanner_report(acme).rows if row.slug == "always_equal")
    assert (row.labeled, len(row.versions), row.current.findings) == (0, 1, 0)
    assert (row.current.figures.precision, row.current.figures.recall) == (None, None)


def test_labels_and_findings_on_a_group_the_reader_judges_blind_stay_out(acme):
    scan_world(acme)
    bob = member("bob", acme, Role.AUDITOR)
    Assignment.objects.create(group=Group.objects.get(uid=REAL), reviewer=bob, blind=True)
    rows = {row.slug: row for row in scanner_report(acme, hidden_from=bob).rows}
    fetch = rows["project_fetch"]
    assert (fetch.labeled, fetch.current.findings, fetch.current.figures.tp) == (1, 0, 0)  # only s #1 is left
    assert rows["history_search"].current.figures.tp == 1  # s@1 is not his


def test_figures_agree_with_a_naive_count_on_random_label_sets():
    """The pure arithmetic against a count written out longhand."""
    import random

    rng = random.Random(7)
    for _ in range(200):
        keys = range(rng.randint(0, 30))
        labels = {k: rng.random() < 0.5 for k in keys if rng.random() < 0.8}
        flagged = {k for k in keys if rng.random() < 0.4}
        scanned = {k for k in keys if rng.random() < 0.7}
        f = figures(labels, flagged, scanned=scanned)
        tp = fp = fn = tn = 0
        for key, cheat in labels.items():
            if key in flagged:
                tp, fp = tp + cheat, fp + (not cheat)
            elif key in scanned:
                fn, tn = fn + cheat, tn + (not cheat)
        assert (f.tp, f.fp, f.fn, f.tn) == (tp, fp, fn, tn)
        if tp + fp:
            assert f.precision_interval == scipy_wilson(tp, tp + fp)
