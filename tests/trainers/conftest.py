"""Shared pieces of the trainer tests: the client package on the path, the `trainers`
marker, and A* of a few synthetic groups computed by the project's own method module.

The trainer tests (`-m trainers`) need the trainer libraries (`make install-trainers`: the
`trainers` extra, then requirements/trainers-frameworks.txt without dependencies). They skip
when a library cannot be imported, unless GAGAR_REQUIRE_TRAINERS=1 (what `make test-trainers`
sets), where a missing library is a failure.

The `gagar` fixture is a client of a live server; the step it plays, the synthetic groups and
`require` are in tests/helpers/trainers.py.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.helpers.trainers import GROUPS_OF_FOUR, MORE_GROUPS, a_star_of

CLIENT_DIR = Path(__file__).resolve().parents[2] / "client"
if str(CLIENT_DIR) not in sys.path:  # the repository's client, installed or not
    sys.path.insert(0, str(CLIENT_DIR))

# Nothing is downloaded at run time: the tests build their model and tokenizer themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # ART imports litellm, which would fetch a price list


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "trainers: runs real trainer libraries (verl, TRL, SkyRL, AReaL, ART) on CPU; needs make install-trainers"
    )


@pytest.fixture
def a_star_four():
    return a_star_of(GROUPS_OF_FOUR)


@pytest.fixture
def a_star_all():
    return a_star_of(GROUPS_OF_FOUR + MORE_GROUPS)


@pytest.fixture
def gagar(live_server):
    """A client of a live Gagar server, admin of project `acme`."""
    from gagar_client import Client
    from grading.models import Project, Role
    from grading.projects.tokens import issue_api_token

    Project.objects.create(name="acme")
    _, token = issue_api_token(username="trainer", project_name="acme", role=Role.ADMIN)
    return Client(live_server.url, token, project="acme", retries=0)
