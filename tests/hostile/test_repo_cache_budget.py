"""The repository cache's budget is a cap, not a wish: fetches made at the same moment, a
fetch next to a mirror another worker holds, and a patch that writes thousands of objects all
leave the cache (its mirrors and worktrees, measured on disk afterwards) within the budget; what
cannot fit is refused with a message saying so. Real git repositories built here, budgets of a
few MB."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from grading.repos.source import RepoSource, flocked
from grading.repos.types import FetchRefused
from grading.repos.view import GitRepoView
from tests.helpers.gitrepos import commit_all, git, init_repo

MB = 1024**2


def on_disk(cache: Path) -> int:
    """Bytes the cache's mirrors and worktrees take on disk, counted here independently of the code."""
    total = 0
    for part in ("mirrors", "trees"):
        for root, dirs, files in os.walk(cache / part):
            for name in files + dirs:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def origin(root: Path, repo: str, payload: int = 0) -> tuple[Path, str]:
    """A repository under `root/<repo>` with a README and `payload` bytes of incompressible data; its head."""
    path = root / repo
    if not path.exists():
        init_repo(path)
        (path / "README.md").write_text(f"# {repo}\n")
    if payload:
        (path / f"blob-{payload}.bin").write_bytes(os.urandom(payload))
    return path, commit_all(path, f"{payload} bytes")


def test_fetches_released_together_stay_within_the_budget(tmp_path):
    root = tmp_path / "origins"
    repos = [f"acme/r{i}" for i in range(4)]
    source = RepoSource(cache=tmp_path / "cache", url_template=f"file://{root}/{{repo}}", budget_bytes=3 * MB)
    for repo in repos:  # four small mirrors, well within the budget
        source.mirror(repo, origin(root, repo)[1])
    # Each source grows by 0.9 MB: the four fetched again hold 3.8 MB, more than the 3 MB budget.
    heads = {repo: origin(root, repo, payload=900 * 1024)[1] for repo in repos}
    start = threading.Barrier(len(repos))
    answers: dict[str, Path | BaseException] = {}

    def fetch(repo: str) -> None:
        start.wait()
        try:
            answers[repo] = source.mirror(repo, heads[repo])
        except BaseException as exc:  # noqa: BLE001 (asserted below)
            answers[repo] = exc

    threads = [threading.Thread(target=fetch, args=(repo,)) for repo in repos]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert on_disk(source.cache) <= source.budget_bytes
    kept = [r for r in repos if source.mirror_path(r).exists() and source.has_commit(source.mirror_path(r), heads[r])]
    assert 1 <= len(kept) < len(repos), "what fits is kept; the rest was refused or evicted"
    for answer in answers.values():
        if isinstance(answer, BaseException):
            assert isinstance(answer, FetchRefused) and "budget" in str(answer), answer
            assert "try again" in str(answer)
    assert not list((source.cache / "reserved").iterdir()), "every reservation was given back"


def test_a_fetch_next_to_a_mirror_in_use_is_refused_and_says_why(tmp_path):
    root = tmp_path / "origins"
    busy, busy_head = origin(root, "acme/busy", payload=2 * MB)
    _, wanted = origin(root, "acme/wanted", payload=1536 * 1024)
    source = RepoSource(cache=tmp_path / "cache", url_template=f"file://{root}/{{repo}}", budget_bytes=3 * MB)
    source.mirror("acme/busy", busy_head)
    assert busy.exists()
    # Another worker holds the busy mirror (fetching or reading it): it cannot be evicted.
    with flocked(source.mirrors_dir / f"{source.safe_name('acme/busy')}.lock"):
        with pytest.raises(FetchRefused) as refused:
            source.mirror("acme/wanted", wanted)
        assert on_disk(source.cache) <= source.budget_bytes
    said = str(refused.value)
    assert "cache" in said and "budget of 3 MB" in said and "try again" in said
    assert not source.mirror_path("acme/wanted").exists() and source.mirror_path("acme/busy").exists()
    # Once the other worker is done, the same fetch evicts the older mirror and fits.
    assert source.has_commit(source.mirror("acme/wanted", wanted), wanted)
    assert on_disk(source.cache) <= source.budget_bytes and not source.mirror_path("acme/busy").exists()


def many_files_patch(count: int) -> str:
    return "".join(
        f"diff --git a/gen/{i:05d}.txt b/gen/{i:05d}.txt\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/gen/{i:05d}.txt\n@@ -0,0 +1 @@\n+generated file {i}\n"
        for i in range(count)
    )


def test_the_objects_a_patch_writes_count_against_the_budget_and_are_packed(tmp_path):
    root = tmp_path / "origins"
    _, head = origin(root, "acme/tiny")
    patch = many_files_patch(2_000)  # 2,000 new blobs and their trees: about 8 MB as loose objects

    small = RepoSource(cache=tmp_path / "small", url_template=f"file://{root}/{{repo}}", budget_bytes=2 * MB)
    view = GitRepoView(small, "acme/tiny", head, {0: patch})
    with pytest.raises(FetchRefused) as refused:
        view.applied()
    assert "budget of 2 MB" in str(refused.value) and "rollout 0" in str(refused.value)
    assert on_disk(small.cache) <= small.budget_bytes
    assert not list((small.mirror_path("acme/tiny") / "gagar-states").glob("*.json")), "a refusal is not remembered"

    roomy = RepoSource(cache=tmp_path / "roomy", url_template=f"file://{root}/{{repo}}", budget_bytes=64 * MB)
    mirror = roomy.mirror("acme/tiny", head)
    before = on_disk(roomy.cache)
    state = GitRepoView(roomy, "acme/tiny", head, {0: patch})
    assert state.applied()[0].how == "clean"
    assert state.read(0, "gen/01999.txt") == b"generated file 1999\n"
    loose = git(mirror, "count-objects", "-v")
    assert "count: 0\n" in loose, f"the state's objects are packed, not left loose: {loose}"
    assert on_disk(roomy.cache) - before < MB, "2,000 small files cost a pack, not a block each"
    # Applied again (its mirror evicted and fetched anew): the same commit.
    again = GitRepoView(
        RepoSource(cache=tmp_path / "again", url_template=f"file://{root}/{{repo}}"), "acme/tiny", head, {0: patch}
    )
    assert again.applied()[0].commit == state.applied()[0].commit
