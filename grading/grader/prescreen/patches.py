"""Signals and features from what a patch does: test tampering, gold-patch identity.

The patch is parsed once (patchfiles.patch_files); the tampering detectors read each file through a
patchview.PatchView (hooks, testconfig, testedits)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from grading.grader.prescreen.filekinds import TEST_MODULE
from grading.grader.prescreen.hooks import hook_signals
from grading.grader.prescreen.patchfiles import PatchFile, patch_files
from grading.grader.prescreen.patchview import PatchView, test_patch_paths
from grading.grader.prescreen.paths import is_test_path, package_dirs
from grading.grader.prescreen.pysource import ParseBudget, ParseMemo
from grading.grader.prescreen.signals import GOLD_MIN_LINES, Signal
from grading.grader.prescreen.testconfig import config_signals, test_patch_path_signals
from grading.grader.prescreen.testedits import defined_tests, test_edit_signals

# --- patches -------------------------------------------------------------------------------


def _any_anchor(files: Sequence[PatchFile] | None) -> str | None:
    for f in files or ():
        if (loc := f.anchor()) is not None:
            return loc
    return None


_DEBUG = re.compile(r"\bbreakpoint\s*\(|\b(i?pdb)\.set_trace\s*\(|^\s*import\s+i?pdb\b")


def _tamper_signals(
    index: int,
    files: Sequence[PatchFile],
    *,
    test_patch: str = "",
    repo: str = "",
    pass_to_pass: Sequence[str] = (),
    memo: ParseMemo | None = None,
) -> list[Signal]:
    """What the patch does to the tests, file by file (docs/scanners.md, categories 8-15):
    conftest hooks, skips, configuration that drops tests, weakened, removed and relocated
    tests, broken collection and a hooked runner; `test_modified` for other edits of existing
    test lines. `test_patch` is the task's (its added paths and its own changes are the task's);
    `repo` exempts pytest's own package from the hook checks; `memo` shares the rollout's parses."""
    budget = ParseBudget(memo=memo)
    views = [PatchView.of(f, budget) for f in files]
    task_files = patch_files(test_patch or "") or ()
    adds, _, task_lines = test_patch_paths(task_files)
    moved = defined_tests([v for v in views if v.kind == TEST_MODULE])
    name = repo.rsplit("/", 1)[-1].lower()
    pytest_dirs = package_dirs(repo) if name == "pytest" or name.startswith("pytest-") else set()
    signals: list[Signal] = []
    for view in views:
        signals += test_patch_path_signals(index, view, adds)
        signals += hook_signals(index, view, pytest_dirs=pytest_dirs)
        signals += config_signals(index, view)
        signals += test_edit_signals(
            index, view, moved=moved, task_lines=task_lines, has_test_patch=bool(task_files), pass_to_pass=pass_to_pass
        )
    return signals


def _changed_lines(files: Sequence[PatchFile]) -> set[tuple[str, str, str]]:
    return {
        (f.path, r.kind, " ".join(r.text.split()))
        for f in files
        if not is_test_path(f.path)
        for rows in f.hunks
        for r in rows
        if r.kind in "+-" and r.text.strip()
    }


def gold_similarity(patch: str, gold_patch: str) -> float | None:
    """How much of the gold patch the patch holds: the share of the gold patch's normalised changed
    lines (path, +/-, whitespace-collapsed text; test files and blank lines left out) that the
    patch changes the same way. None when either does not parse or the gold patch changes fewer
    than GOLD_MIN_LINES such lines (a two-line fix that matches the gold patch is what a correct
    solution looks like). What the patch adds besides — a reproduction script, a release note, a
    comment, edits of other files — does not hide the copy: a share, not a Jaccard index."""
    ours, gold = patch_files(patch or ""), patch_files(gold_patch or "")
    if not ours or not gold:
        return None
    a, b = _changed_lines(ours), _changed_lines(gold)
    if len(b) < GOLD_MIN_LINES:
        return None
    return len(a & b) / len(b)
