"""Patches highlighted ahead (grading.rollouts.diffs.highlight_patch, grading.highlights) on
real-size groups: tests/helpers/real_groups.real_size_group, 15 real mini-swe-agent rollouts
whose fixes carry the scratch files agents leave (up to 29 files and +1,600 lines a patch).

What is read ahead must be exactly what a page would have lexed, never lexed again, and
only for the text it was made from."""

from __future__ import annotations

import pytest
from django.test import override_settings

from grading.highlights.service import highlight_rollouts
from grading.models import PatchHighlight, Rollout
from grading.rollouts import diffs
from grading.rollouts.diffs import highlight_patch, parse_patch, patch_digest
from tests.helpers.ingest import ingest_groups
from tests.helpers.real_groups import real_size_group

PATCHES = [r["patch"] for r in real_size_group(0)["rollouts"]]


def _rows(parsed) -> list:
    return [
        (f.path, h.header, h.note, [(r.kind, r.old_no, r.new_no, r.html) for r in h.unified], h.split)
        for f in parsed.files
        for h in f.hunks
    ]


@pytest.fixture
def no_lexing(monkeypatch):
    """Any call into the highlighter processes fails the test; the in-process cache starts empty."""
    diffs.highlight_cache.clear()

    def refuse(*args, **kwargs):
        raise AssertionError("the highlighter was called")

    monkeypatch.setattr(diffs.highlighter, "highlight", refuse)
    yield
    diffs.highlight_cache.clear()


@pytest.mark.parametrize("n", range(len(PATCHES)))
def test_a_patch_read_ahead_is_row_for_row_what_lexing_it_gives(n, monkeypatch):
    diffs.highlight_cache.clear()
    live = parse_patch(PATCHES[n])
    ahead = highlight_patch(PATCHES[n])
    assert ahead is not None and len(ahead) == sum(len(f.hunks) for f in live.files)
    calls = []
    monkeypatch.setattr(diffs.highlighter, "highlight", lambda *a, **k: calls.append(a) or "")
    diffs.highlight_cache.clear()
    read = parse_patch(PATCHES[n], ahead=ahead)
    assert calls == [] and _rows(read) == _rows(live)
    assert any("hl-" in row[3] for h in _rows(read) for row in h[3])  # highlighted, not plain


def test_a_cut_patch_reads_the_prefix_of_its_hunks(no_lexing):
    patch = max(PATCHES, key=len)
    ahead = _highlighted(patch)
    whole = parse_patch(patch, ahead=ahead)
    cut = parse_patch(patch, ahead=ahead, max_rows=700)
    assert cut.cut and cut.shown_lines == 700
    rows = [row for f in cut.files for h in f.hunks for row in h.unified]
    assert rows == [row for f in whole.files for h in f.hunks for row in h.unified][:700]


def _highlighted(patch):
    """highlight_patch with the real highlighter even under `no_lexing` (its original)."""
    from grading.rollouts.highlighter import HighlightPool

    pool = HighlightPool(size=1)
    saved, diffs.highlighter = diffs.highlighter, pool
    try:
        return highlight_patch(patch)
    finally:
        diffs.highlighter = saved
        pool.close()
        diffs.highlight_cache.clear()


def test_a_hunk_that_does_not_match_what_was_stored_is_lexed_as_usual(monkeypatch):
    patch = PATCHES[2]
    ahead = highlight_patch(patch)
    assert ahead is not None
    wrong = [(old[:-1], note, new, note2) for old, note, new, note2 in ahead]  # one line short each
    diffs.highlight_cache.clear()
    calls = []
    real = diffs.highlighter.highlight
    monkeypatch.setattr(diffs.highlighter, "highlight", lambda *a: calls.append(a) or real(*a))
    assert _rows(parse_patch(patch, ahead=wrong)) == _rows(parse_patch(patch, ahead=None))
    assert calls  # lexed, not read


def test_render_file_leaves_a_file_out_but_counted():
    patch = PATCHES[3]  # 25 debug scripts in front of the fix
    whole = parse_patch(patch, render=False)
    parsed = parse_patch(patch, ahead=highlight_patch(patch), render_file=lambda path, status: "debug_step" not in path)
    assert [(f.path, f.status, f.added, f.removed) for f in parsed.files] == [
        (f.path, f.status, f.added, f.removed) for f in whole.files
    ]
    for f in parsed.files:
        assert (f.hunks == []) if "debug_step" in f.path else any(r.html for h in f.hunks for r in h.unified)


def test_a_patch_that_does_not_parse_is_not_highlighted_ahead():
    assert highlight_patch("not a diff\n+x\n") is None


@pytest.mark.django_db
def test_ingest_highlights_every_patch_after_its_commit(acme, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ingest_groups(acme, real_size_group(1, run="r1"))
    rollouts = list(Rollout.objects.filter(group__uid="real-size-1@1").select_related("content"))
    rows = {h.rollout_id: h for h in PatchHighlight.objects.all()}
    assert len(rollouts) == 15 and set(rows) == {r.pk for r in rollouts}
    for r in rollouts:
        assert rows[r.pk].digest == patch_digest(r.content.patch)
        assert len(rows[r.pk].hunks) == sum(len(f.hunks) for f in parse_patch(r.content.patch, render=False).files)
    assert highlight_rollouts([r.pk for r in rollouts]) == 0  # already done for this text


@pytest.mark.django_db
@override_settings(GAGAR_HIGHLIGHT_AHEAD=False)
def test_highlighting_ahead_can_be_turned_off(acme, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ingest_groups(acme, real_size_group(2, run="r1"))
    assert not PatchHighlight.objects.exists()


@pytest.mark.django_db
def test_a_changed_patch_is_highlighted_again(acme, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        ingest_groups(acme, real_size_group(0, run="r1"))
    rollout = Rollout.objects.select_related("content").get(group__uid="real-size-0@1", index=2)
    content = rollout.content
    content.patch = PATCHES[1]
    content.save(update_fields=["patch"])
    assert highlight_rollouts([rollout.pk]) == 1
    assert PatchHighlight.objects.get(rollout=rollout).digest == patch_digest(PATCHES[1])


BROKER = "redis://127.0.0.1:6379/11"


@pytest.fixture
def worker(tmp_path):
    from tests.helpers.workers import worker_on_own_queue

    with worker_on_own_queue("highlight", tmp_path, BROKER) as w:
        yield w


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_real_worker_highlights_what_ingest_queued(acme, alice, client, worker, monkeypatch, no_lexing):
    """Ingest commits, its task goes to a real Celery worker (subprocess, PostgreSQL, Redis),
    which stores the highlights; the page then reads them without lexing (no_lexing: in
    this process the highlighter may not be called)."""
    import time

    import grading.highlights.tasks
    from gagar_web.celery import app as current_app

    current_app.conf.task_always_eager = False  # tests/conftest.py makes tasks eager (and resets it after)
    task, sent = grading.highlights.tasks.highlight_rollouts_task, []

    class ToTestBroker:
        @staticmethod
        def delay(**kwargs):
            with current_app.connection_for_write(BROKER) as conn:
                sent.append(task.apply_async(kwargs=kwargs, connection=conn, queue=worker["queue"]))

    monkeypatch.setattr(task, "delay", ToTestBroker.delay)
    ingest_groups(acme, real_size_group(3, run="r1"))
    assert len(sent) == 1
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and PatchHighlight.objects.count() < 15:  # the rows are the readiness marker
        assert worker["proc"].poll() is None, worker["log"].read_text()[-3000:]
        time.sleep(0.2)
    assert PatchHighlight.objects.count() == 15, worker["log"].read_text()[-3000:]
    assert "grading.highlight_rollouts" in worker["log"].read_text()
    client.force_login(alice)
    r = client.get("/projects/acme/runs/r1/groups/real-size-3@1/")
    assert r.status_code == 200 and 'class="hl-' in r.content.decode()
