"""Repositories built once per test module (offline, from this venv's files) and a fresh cache per test."""

from __future__ import annotations

import pytest

from grading.repos.source import RepoSource
from tests.helpers.gitrepos import TinyRepo, history_repo, tiny_package


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyRepo:
    return tiny_package(tmp_path_factory.mktemp("origin"))


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> TinyRepo:
    return history_repo(tmp_path_factory.mktemp("origin-history"))


@pytest.fixture
def source(tmp_path, tiny: TinyRepo) -> RepoSource:
    return RepoSource(cache=tmp_path / "cache", url_template=tiny.template)
