"""The hourly tidy of the repository cache (grading.tidy_repo_cache, Celery beat): worktrees
unused past their age go, fresh ones stay, and mirrors past the budget are evicted."""

from __future__ import annotations

import os
import time

import pytest

from grading.jobs.tasks import tidy_repo_cache_task
from grading.registry.workspaces import load_workspace
from tests.helpers.repo_groups import tiny_group

pytestmark = pytest.mark.django_db


def test_old_worktrees_go_fresh_ones_stay_and_the_budget_evicts_mirrors(tmp_path, settings, acme):
    group, _ = tiny_group(tmp_path, settings, acme)
    view = load_workspace(group).repo_view
    old, fresh = view.checkout(0), view.checkout(1)
    assert (old / "tiny/calc.py").exists() and (fresh / "tiny/calc.py").exists()
    day_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (day_ago, day_ago))

    assert tidy_repo_cache_task.delay().get() == {"trees": 1, "mirrors": 0}
    assert not old.exists() and (fresh / "tiny/calc.py").exists()

    settings.GAGAR_REPO_CACHE_BYTES = 1  # below any mirror
    assert tidy_repo_cache_task.delay().get()["mirrors"] == 1
    assert not fresh.exists() and not list((tmp_path / "cache" / "mirrors").glob("*.git"))
    settings.GAGAR_REPO_CACHE_BYTES = 1024**3
    assert "if values else 0.0" in load_workspace(group).repo_view.read(0, "tiny/calc.py").decode()  # fetched anew


def test_no_cache_no_tidy(settings):
    settings.GAGAR_REPO_CACHE = ""
    assert tidy_repo_cache_task.delay().get() == {"trees": 0, "mirrors": 0}
