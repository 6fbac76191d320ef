"""The vendored data (real third-party trajectories and the method's test vectors) by path:
FIXTURES, VECTORS, MINI_SWE_AGENT, MINI_SWE_AGENT_MORE, OPENHANDS; `vector_cases(name)` reads
one file of test vectors."""

from __future__ import annotations

import json
from pathlib import Path

# Real third-party data and the method's test vectors, vendored with their licences: every
# test runs on a fresh clone, none may skip for want of data (see tests/conftest.py).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
VECTORS = FIXTURES / "vectors"
MINI_SWE_AGENT = FIXTURES / "mini-swe-agent-gemini-3-pro"
MINI_SWE_AGENT_MORE = FIXTURES / "mini-swe-agent-gemini-3-pro-more"  # 48 more, long: 33-157 kB of text each
OPENHANDS = FIXTURES / "openhands-multi-swe-bench"


def vector_cases(name: str) -> list[dict]:
    """The test vectors of `tests/fixtures/vectors/<name>.jsonl`, one dict a line."""
    return [json.loads(line) for line in (VECTORS / f"{name}.jsonl").read_text().splitlines() if line.strip()]
