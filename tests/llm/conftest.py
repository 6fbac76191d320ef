"""The tests marked `llm`: the grader, campaigns and LLM scanners against a real model server
(tests/helpers/llama_server.py). `make test-llm` builds the server once (scripts/llm-server)
and runs them with GAGAR_REQUIRE_LLM=1, where a missing build is a failure; elsewhere they
skip, saying how to run them. `make test` leaves them out: a conversation takes seconds.

One server per test process, one slot: the tests run one conversation at a time, and the
grader's system prompt stays in the slot's cache from one conversation to the next."""

from __future__ import annotations

import os

import pytest
from django.test import override_settings

from grading.registry.defined import define_grader
from tests.helpers.llama_server import LlamaServer, NotBuilt

ENDPOINT = "LLAMA_URL"


@pytest.fixture(scope="session")
def llama():
    try:
        server = LlamaServer.from_environment(slots=1, context=12_288)
    except NotBuilt as exc:
        if os.environ.get("GAGAR_REQUIRE_LLM") == "1":
            pytest.fail(f"GAGAR_REQUIRE_LLM=1 but no model server: {exc}")
        pytest.skip(f"no model server built ({exc}); `make test-llm` builds one and runs these")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def smol(llama, acme, monkeypatch):
    """define(name, **fields) -> the name of a version of the project's grader on the real
    server (SmolLM2 through $LLAMA_URL), whose request fields, tool mode and budgets the test sets."""
    monkeypatch.setenv(ENDPOINT, llama.base_url)
    with override_settings(GRADER_ENDPOINT_ENVS={ENDPOINT: ""}, GRADER_ALLOW_PRIVATE_NETWORK=True):

        def define(name: str = "smol", *, max_turns: int = 3, timeout_s: int = 120, **fields) -> str:
            data = {
                "name": name,
                "model": "smollm2-135m",
                "endpoint_env": ENDPOINT,
                "budgets": {"max_turns": max_turns, "request_timeout_s": timeout_s},
                **fields,
            }
            version, _ = define_grader(project=acme, data=data)
            return version.name

        yield define
