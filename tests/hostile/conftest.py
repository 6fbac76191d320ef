"""The hostile-input suite's summary table, and the gate that keeps load tests out of `make test`.

People (as in tests/conftest.py): alice admin of acme, bob reviewer in acme, carol admin of
"other" only, tess trainer in acme (read-only token).
"""

from __future__ import annotations

import pytest

from tests.hostile.corpus import RESULTS, summary_rows


def pytest_collection_modifyitems(config, items):
    # Load and fault tests run under `make test-load` (pytest -m load), not in `make test`.
    if "load" in (config.getoption("markexpr") or ""):
        return
    skip = pytest.mark.skip(reason="load/fault test: run with `make test-load` (pytest -m load)")
    for item in items:
        if item.get_closest_marker("load"):
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not RESULTS:
        return
    header = (
        "channel",
        "cases tried",
        "refused cleanly",
        "stored, shown inert",
        "known gaps",
        "failed",
        "lost rows",
        "partial rows",
    )
    rows = summary_rows()
    total = ("total", *(sum(r[i] for r in rows) for i in range(1, len(header))))
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, total)]
    write = terminalreporter.write_line
    terminalreporter.section("hostile input: summary")
    for row in (header, *rows, total):
        write("  ".join(str(x).rjust(w) if i else str(x).ljust(w) for i, (x, w) in enumerate(zip(row, widths))))
    gaps = [o for o in RESULTS if o.result == "known-gap"]
    for outcome in gaps:
        write(f"known gap [{outcome.channel}] {outcome.case}")


@pytest.fixture(scope="session")
def shipped_app(tmp_path_factory):
    """docker/start.sh serving a scratch SQLite database, shared by the tests of the shipped
    deployment (test_proxy.py, test_waiters.py): starting it costs ~20 s on 2 cores. Waiters
    are capped small (2 per token, 3 per project) so a handful show the caps."""
    from tests.helpers.served import App

    with App(tmp_path_factory.mktemp("shipped"), GAGAR_WAITERS_PER_TOKEN="2", GAGAR_WAITERS_PER_PROJECT="3") as app:
        yield app
