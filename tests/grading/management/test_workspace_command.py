"""`manage.py workspace`: the grader's workspace by hand, as a person or a script checks it."""

from __future__ import annotations

import socket
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.helpers.repo_groups import tiny_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path, settings, acme):
    return tiny_group(tmp_path, settings, acme)[0]


def run(group, *args) -> str:
    out = StringIO()
    call_command(
        "workspace", "--project", "acme", "--run", group.run.name, "--uid", group.uid, *args, stdout=out, stderr=StringIO()
    )
    return out.getvalue()


def test_cat_prints_the_file_as_each_state_holds_it(world):
    assert "if values else 0.0" in run(world, "--rollout", "0", "--cat", "tiny/calc.py")
    assert "if values else 0.0" not in run(world, "--base", "--cat", "tiny/calc.py")
    assert run(world, "--cat", "tiny").split() == ["__init__.py", "calc.py"]


def test_grep_prints_path_line_text(world):
    lines = run(world, "--rollout", "1", "--grep", "int\\(a").splitlines()
    assert lines == ["tiny/calc.py:2:    return int(a + b)"]


def _reachable(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


def test_exec_runs_in_the_sandbox_with_no_network_and_ends_with_the_exit_status(world):
    # A port this test listens on (so a refusal cannot be "nothing listens"), and PostgreSQL's
    # where it runs (CI): both answer the host, neither the sandbox.
    with socket.create_server(("127.0.0.1", 0)) as server:
        ports = [server.getsockname()[1]] + ([5432] if _reachable(5432) else [])
        assert all(_reachable(port) for port in ports)
        probe = "; ".join(
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)\" "
            f"2>/dev/null && echo port {port} open || echo port {port} closed"
            for port in ports
        )
        out = run(
            world,
            "--rollout",
            "1",
            "--exec",
            f"{probe}; python3 -c 'from tiny import add; print(add(0.5, 0.25))'; "
            "touch /work-outside 2>/dev/null || echo read-only; exit 3",
        )
    lines = out.splitlines()
    assert lines[-1] == "exit=3"
    assert [line for line in lines if line.startswith("port ")] == [f"port {port} closed" for port in ports]
    assert "0" in lines and "read-only" in lines  # rollout 1's add() truncates; / is read-only


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--rollout", "7", "--cat", "x"), "has no rollout 7"),
        (("--rollout", "3", "--cat", "tiny/calc.py"), "did not apply"),
        (("--cat", "../etc/passwd"), ".."),
    ],
)
def test_what_it_cannot_do_is_a_message(world, args, message):
    with pytest.raises(CommandError, match=message):
        run(world, *args)


def test_an_unknown_group_or_no_repository_is_a_message(world, settings):
    with pytest.raises(CommandError, match="no group 'nope'"):
        call_command("workspace", "--project", "acme", "--run", world.run.name, "--uid", "nope", "--cat", "x")
    settings.GAGAR_REPO_CACHE = ""
    with pytest.raises(CommandError, match="has no repository"):
        run(world, "--cat", "x")
