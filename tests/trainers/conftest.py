"""Shared pieces of the trainer tests: the client package on the path, the `trainers`
marker, and A* of a few synthetic groups computed by the project's own method module.

The trainer tests (`-m trainers`) need the `trainers` extra (`pip install -e '.[trainers]'`).
They skip when verl or TRL cannot be imported, unless GAGAR_REQUIRE_TRAINERS=1 (what
`make test-trainers` in CI should set), where a missing library is a failure.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

CLIENT_DIR = Path(__file__).resolve().parents[2] / "client"
if str(CLIENT_DIR) not in sys.path:  # the repository's client, installed or not
    sys.path.insert(0, str(CLIENT_DIR))

INSTALL_HINT = "pip install -e '.[trainers]'"

# Nothing is downloaded at run time: the tests build their model and tokenizer themselves.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "trainers: runs real trainer libraries (verl, TRL) on CPU; needs pip install -e '.[trainers]'")


def require(module: str):
    """Import `module` or skip the calling test module (fail under GAGAR_REQUIRE_TRAINERS=1)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        message = f"{module} is not importable ({exc}); install the trainer libraries with: {INSTALL_HINT}"
        if os.environ.get("GAGAR_REQUIRE_TRAINERS") == "1":
            pytest.fail(message, pytrace=False)
        pytest.skip(message, allow_module_level=True)


@dataclass(frozen=True)
class SyntheticGroup:
    uid: str
    rewards: list
    tiers: list | None = None
    ranks: list | None = None
    cheats: list | None = None
    graded: bool = True
    baseline: str = "mean"


# Groups of four (TRL's num_generations must be the same for every prompt).
GROUPS_OF_FOUR = [
    SyntheticGroup("mixed-tiers@1", [1, 1, 0, 1], ["T1", "T2", None, "T3"], [1, 2, None, 3]),
    SyntheticGroup("one-pass@1", [0, 1, 0, 0], [None, "T2", None, None], [None, 1, None, None]),
    SyntheticGroup("all-fail@1", [0, 0, 0, 0]),
    SyntheticGroup("all-pass@1", [1, 1, 1, 1], ["T1", "T2", "T3", "T3"], [1, 2, 3, 3]),
    SyntheticGroup("fallback@1", [1, 0, 1, 0], graded=False),
    SyntheticGroup("cheat@1", [1, 1, 1, 0], ["T3", "T1", "T2", None], [3, 1, 2, None], cheats=[False, True, False, False]),
]

# Other sizes and baselines, for verl (its groups may differ in size).
MORE_GROUPS = [
    # METHOD.md section 4, the worked example.
    SyntheticGroup("worked-example@1", [1, 1, 1, 0, 0, 0], ["T1", "T2", "T3", None, None, None], [1, 2, 3, None, None, None]),
    SyntheticGroup(  # 16 rollouts, a T2 band of three distinct ranks with a tie
        "ties-16@1", [1, 0] * 8,
        ["T2", None, "T2", None, "T1", None, "T3", None, "T2", None, "T2", None, "T1", None, "T3", None],
        [3, None, 4, None, 1, None, 7, None, 4, None, 5, None, 1, None, 7, None],
    ),
    SyntheticGroup("loo@1", [1, 1, 0, 0, 0], ["T1", "T3", None, None, None], [1, 2, None, None, None], baseline="loo"),
    SyntheticGroup("grpo@1", [0, 1, 1, 1, 0, 0, 1], [None, "T2", "T2", "T1", None, None, "T3"], [None, 2, 3, 1, None, None, 4], baseline="grpo"),
    SyntheticGroup("single@1", [1], ["T1"], [1]),
]


def a_star_of(groups) -> dict[tuple[str, int], float]:
    """{(uid, index): A*} from grading.method.advantage, the project's implementation."""
    from grading.method.advantage import redistribute_group

    out = {}
    for group in groups:
        result = redistribute_group(group.rewards, cheats=group.cheats, tiers=group.tiers, ranks=group.ranks,
                                    graded=group.graded, baseline=group.baseline)
        for index, value in enumerate(result.redistributed_advantage.tolist()):
            out[(group.uid, index)] = value
    return out


@pytest.fixture
def a_star_four():
    return a_star_of(GROUPS_OF_FOUR)


@pytest.fixture
def a_star_all():
    return a_star_of(GROUPS_OF_FOUR + MORE_GROUPS)
