"""Gagar client for trainers: post a step, wait until it is graded, pull its advantages.

Standard library only (pandas/pyarrow optional, for `Client.advantages_frame`)::

    from gagar_client import Client

    gagar = Client("http://127.0.0.1:8000", token, project="acme")
    gagar.ensure_run("flash-code-rl", auto_grade="heuristic", grading_deadline_seconds=600)
    gagar.post_step("flash-code-rl", 28, groups)          # gagar-group/1 dicts
    rows = gagar.wait_for_step("flash-code-rl", 28)       # until Gagar-Step-Final: true
    a_star = gagar.advantages("flash-code-rl", 28, inputs_version=rows.inputs_version)
    a_star[("astropy__astropy-12907@28", 3)]              # -> float

Adapters for trainer libraries live in `gagar_client.adapters` (verl, TRL, SkyRL, OpenRLHF, AReaL,
ART, rLLM, slime, prime-rl).
"""

from gagar_client.client import (
    GROUP_FORMAT,
    Client,
    GagarConnectionError,
    GagarError,
    Rows,
    StepNotFinal,
    advantage_map,
    encode_groups,
    parse_jsonl,
)

__version__ = "0.1.0"
__all__ = [
    "GROUP_FORMAT",
    "Client",
    "GagarConnectionError",
    "GagarError",
    "Rows",
    "StepNotFinal",
    "__version__",
    "advantage_map",
    "encode_groups",
    "parse_jsonl",
]
