"""RepoSource: repository names, URL templates, the mirror cache (commits fetched by id, the
whole repository where the source will not send them so; reused, locked, under a budget) and its
errors, on repositories built in the tests and served as file://."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from grading.repos.source import COMMIT_REFS, RepoSource, tree_bytes
from grading.repos.types import FetchRefused, MissingCommit, OverBudget, UnknownRepo
from grading.repos.view import GitRepoView
from tests.helpers.gitrepos import (
    TinyRepo,
    commit_all,
    git,
    incomplete_copy,
    init_repo,
    refuse_fetch_by_id,
    speak_protocol_v0,
    tiny_package,
)

MISSING = "0123456789abcdef0123456789abcdef01234567"
MB = 1024**2


@pytest.mark.parametrize(
    "name",
    [
        "",
        "   ",
        "..",
        "a/..",
        "../etc",
        "-x/y",
        "a/-b",
        "owner",
        "a/b/c/d/e",
        "a b/c",
        "a/b\n",
        "a/b\x00",
        "a\\b/c",
        "o/.git",
        "x" * 300,
    ],
)
def test_url_for_refuses_what_is_not_a_repository_name(name):
    source = RepoSource(cache=Path("unused"))
    with pytest.raises(UnknownRepo):
        source.url_for(name)


def test_url_for_fills_in_the_template_of_each_kind():
    assert RepoSource(cache=Path("c")).url_for("django/django") == "https://github.com/django/django.git"
    assert RepoSource(cache=Path("c"), url_template="file:///srv/git/{repo}").url_for("o/n.x_1-2") == "file:///srv/git/o/n.x_1-2"
    local = RepoSource(cache=Path("c"), url_template="/srv/git/{repo}.git")
    assert local.url_for("o/n") == "/srv/git/o/n.git"
    assert local.local and not RepoSource(cache=Path("c")).local
    with pytest.raises(ValueError, match="no \\{repo\\}"):
        RepoSource(cache=Path("c"), url_template="https://example.com/fixed.git")


def test_safe_names_keep_look_alike_repositories_apart():
    source = RepoSource(cache=Path("c"))
    assert source.safe_name("a_b/c") != source.safe_name("a/b_c")
    assert "/" not in source.safe_name("a/b")


def test_the_mirror_is_fetched_once_then_reused(source, tiny: TinyRepo):
    first = source.mirror(tiny.repo, tiny.base)
    assert (first / "HEAD").exists() and source.fetches(tiny.repo) == 1
    assert source.mirror(tiny.repo, tiny.base) == first
    # A second group on the same mirror: states and reads, and still no fetch.
    GitRepoView(source, tiny.repo, tiny.base, {0: ""}).read("base", "README.md")
    assert source.fetches(tiny.repo) == 1
    assert not list(first.glob("hooks/*")), "the mirror is made without git's sample hooks"
    # Another commit of the same repository goes into the same mirror, by id.
    assert source.mirror(tiny.repo, tiny.commits[-1]) == first and source.fetches(tiny.repo) == 2


def test_a_base_commit_is_fetched_by_id_without_the_history(source, tiny: TinyRepo):
    mirror = source.mirror(tiny.repo, tiny.commits[1])
    assert git(mirror, "rev-list", "--all").split() == [tiny.commits[1]], "the commit, not its parent or later ones"
    assert source.is_shallow(mirror) and not source.holds_history(mirror)
    assert git(mirror, "for-each-ref", "--format=%(refname)").split() == [f"{COMMIT_REFS}{tiny.commits[1]}"]
    assert git(mirror, "show", f"{tiny.commits[1]}:README.md") == "# tiny\n\nAdds and averages numbers.\n"


def test_several_commits_come_in_one_fetch(source, tiny: TinyRepo):
    mirror = source.mirror_commits(tiny.repo, [tiny.commits[0], tiny.commits[2], tiny.commits[0]])
    assert source.fetches(tiny.repo) == 1
    assert all(source.has_commit(mirror, c) for c in (tiny.commits[0], tiny.commits[2]))
    assert not source.has_commit(mirror, tiny.commits[1]), "nothing in between"
    # One the source lacks among them: the others are fetched all the same, the missing one is named.
    other = tiny_package(source.cache.parent / "more", repo="acme/more")
    more = RepoSource(cache=source.cache, url_template=other.template)
    with pytest.raises(MissingCommit, match=MISSING):
        more.mirror_commits(other.repo, [other.commits[1], MISSING, other.commits[2]])
    assert more.has_commit(more.mirror_path(other.repo), other.commits[1])
    assert more.has_commit(more.mirror_path(other.repo), other.commits[2])


def test_a_source_that_refuses_commits_by_id_is_fetched_whole(tmp_path, monkeypatch, tiny: TinyRepo):
    origin = tiny_package(tmp_path / "origin")
    refuse_fetch_by_id(origin.path)
    for key, value in speak_protocol_v0(tmp_path / "home").items():
        monkeypatch.setenv(key, value)
    source = RepoSource(cache=tmp_path / "cache", url_template=origin.template)
    mirror = source.mirror(origin.repo, origin.base)
    assert source.fetches(origin.repo) == 1, "the refusal and the whole fetch are one fetch"
    assert source.holds_history(mirror) and set(git(mirror, "rev-list", "--all").split()) == set(origin.commits)
    # A commit it does not have: fetched whole once more, then said so.
    with pytest.raises(MissingCommit) as missing:
        source.mirror(origin.repo, MISSING)
    assert "did not send it when asked for it by id" in str(missing.value)
    assert "none of its branches and tags holds it" in str(missing.value)


def test_a_source_missing_its_old_history_serves_the_base_commit(tmp_path, monkeypatch, tiny: TinyRepo):
    for kind in ("pruned", "shallow"):
        copy = incomplete_copy(tiny, tmp_path / kind, tiny.commits[1], kind)
        scratch = tmp_path / f"{kind}-whole"
        scratch.mkdir()
        git(scratch, "init", "-q", "--bare")
        git(scratch, "fetch", f"file://{copy.path}", "+refs/heads/*:refs/heads/*", check=False)
        assert not git(scratch, "for-each-ref"), f"a whole fetch of the {kind} copy brings no branch"
        source = RepoSource(cache=tmp_path / f"{kind}-cache", url_template=copy.template)
        view = GitRepoView(source, copy.repo, copy.base, {0: ""})
        assert view.read("base", "README.md") == b"# tiny\n\nAdds and averages numbers.\n", kind
    # The whole fetch, as before (a source that will not send a commit by id), fails on the pruned copy.
    refuse_fetch_by_id(tmp_path / "pruned" / tiny.repo)
    for key, value in speak_protocol_v0(tmp_path / "home").items():
        monkeypatch.setenv(key, value)
    refused = RepoSource(cache=tmp_path / "refused-cache", url_template=f"file://{tmp_path / 'pruned'}/{{repo}}")
    with pytest.raises(FetchRefused, match="corruption"):
        refused.mirror(tiny.repo, tiny.commits[1])  # not a branch's tip: the source will not send it by id


def test_a_commit_missing_from_the_mirror_is_fetched_again_once(tmp_path):
    origin = tiny_package(tmp_path / "origin")
    source = RepoSource(cache=tmp_path / "cache", url_template=origin.template)
    source.mirror(origin.repo, origin.base)
    (origin.path / "NEW").write_text("new\n")
    newer = commit_all(origin.path, "a commit made after the mirror")
    assert source.mirror(origin.repo, newer).is_dir()
    assert source.fetches(origin.repo) == 2
    with pytest.raises(MissingCommit, match="fetched again") as missing:
        source.mirror(origin.repo, MISSING)
    assert f"acme/tiny has no commit {MISSING}" in str(missing.value)
    assert source.fetches(origin.repo) == 3
    with pytest.raises(MissingCommit, match="not a commit id"):
        source.mirror(origin.repo, "HEAD; rm -rf /")


def test_a_fetch_the_source_refuses_says_what_git_said(tmp_path):
    source = RepoSource(cache=tmp_path / "cache", url_template=f"file://{tmp_path}/nowhere/{{repo}}")
    with pytest.raises(FetchRefused) as caught:
        source.mirror("acme/tiny", "0" * 40)
    assert "nowhere/acme/tiny" in str(caught.value) and "failed" in str(caught.value)
    assert not list((tmp_path / "cache" / "mirrors").glob("*.git*")), "no half-made mirror is left behind"


def test_credentials_in_the_url_never_reach_the_message(tmp_path):
    source = RepoSource(
        cache=tmp_path / "cache", url_template="https://bot:s3cret-token@127.0.0.1:9/{repo}.git", fetch_timeout=20
    )
    with pytest.raises(FetchRefused) as caught:
        source.mirror("acme/tiny", "0" * 40)
    assert "s3cret-token" not in str(caught.value) and "***@127.0.0.1" in str(caught.value)


def test_a_repository_bigger_than_the_whole_budget_is_refused(tmp_path, tiny: TinyRepo):
    source = RepoSource(cache=tmp_path / "cache", url_template=tiny.template, budget_bytes=4096)
    with pytest.raises(FetchRefused, match=r"(more|bigger) than the whole cache budget"):
        source.mirror(tiny.repo, tiny.base)
    assert not source.mirror_path(tiny.repo).exists()


def test_the_budget_counts_the_commit_fetched_not_the_whole_repository(tmp_path, monkeypatch):
    origin = init_repo(tmp_path / "origins" / "acme" / "big")
    (origin / "old.bin").write_bytes(os.urandom(3 * MB))  # 3 MB of history, gone by the base
    commit_all(origin, "an old blob")
    (origin / "old.bin").unlink()
    (origin / "README.md").write_text("# big\n")
    base = commit_all(origin, "the base: the blob deleted")
    commit_all(origin, "a later commit (the base is no branch's tip)")
    template = f"file://{tmp_path / 'origins'}/{{repo}}"
    source = RepoSource(cache=tmp_path / "cache", url_template=template, budget_bytes=2 * MB)
    mirror = source.mirror("acme/big", base)
    assert source.used_bytes() < MB and tree_bytes(mirror) < MB
    assert not list((source.cache / "reserved").iterdir()), "every reservation was given back"
    # Fetched whole (the source refusing a commit by id) the same repository is over the budget.
    refuse_fetch_by_id(origin)
    for key, value in speak_protocol_v0(tmp_path / "home").items():
        monkeypatch.setenv(key, value)
    whole = RepoSource(cache=tmp_path / "whole", url_template=template, budget_bytes=2 * MB)
    with pytest.raises(OverBudget, match="more than the whole cache budget of 2 MB"):
        whole.mirror("acme/big", base)
    assert not whole.mirror_path("acme/big").exists()


def test_the_least_recently_used_mirror_and_its_worktrees_are_evicted(tmp_path):
    one, two = tiny_package(tmp_path / "origins"), tiny_package(tmp_path / "origins", repo="acme/other")
    probe = RepoSource(cache=tmp_path / "probe", url_template=one.template)
    # One mirror with its worktree fits the budget; a second mirror does not.
    size = tree_bytes(probe.mirror(one.repo, one.base))
    size += tree_bytes(GitRepoView(probe, one.repo, one.base, {0: ""}).checkout("base").parent)
    source = RepoSource(cache=tmp_path / "cache", url_template=one.template, budget_bytes=int(size * 1.3))
    tree = GitRepoView(source, one.repo, one.base, {0: ""}).checkout("base")
    assert source.evict() == [], "one mirror (with its worktree) is under the budget"
    source.mirror(two.repo, two.base)  # the second one passes the budget: the older goes, with its worktree
    assert not source.mirror_path(one.repo).exists() and not tree.exists()
    assert source.mirror_path(two.repo).exists()
    # Gone, then made again on demand, with the same state commits (fixed author and dates).
    patch = "diff --git a/NEW b/NEW\nnew file mode 100644\n--- /dev/null\n+++ b/NEW\n@@ -0,0 +1 @@\n+new\n"
    before = GitRepoView(probe, one.repo, one.base, {0: patch}).applied()[0]
    after = GitRepoView(source, one.repo, one.base, {0: patch}).applied()[0]
    assert before.how == after.how == "clean" and before.commit == after.commit
    assert source.fetches(one.repo) == 2


def test_two_threads_asking_for_one_mirror_make_one_clone(tmp_path, tiny: TinyRepo):
    source = RepoSource(cache=tmp_path / "cache", url_template=tiny.template)
    paths: list[Path] = []
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def ask() -> None:
        start.wait()
        try:
            paths.append(source.mirror(tiny.repo, tiny.base))
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(set(paths)) == 1
    assert source.fetches(tiny.repo) == 1


def test_a_local_path_template_works_too(tmp_path, tiny: TinyRepo):
    source = RepoSource(cache=tmp_path / "cache", url_template=f"{tiny.root}/{{repo}}")
    mirror = source.mirror(tiny.repo, tiny.base)
    assert git(mirror, "cat-file", "-t", tiny.base).strip() == "commit"


def test_a_half_made_mirror_left_by_a_killed_worker_is_made_again(source, tiny: TinyRepo):
    leftover = source.mirror_path(tiny.repo)
    (leftover / "objects").mkdir(parents=True)  # no HEAD: a rename cut short
    assert (source.mirror(tiny.repo, tiny.base) / "HEAD").exists()
    assert source.fetches(tiny.repo) == 1
