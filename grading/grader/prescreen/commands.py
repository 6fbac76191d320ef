"""Signals from what the agent ran: the commands of its turns."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from grading.grader.base import Evidence
from grading.grader.prescreen.paths import _norm, package_names
from grading.grader.prescreen.signals import Signal
from grading.rollouts.turns import to_turn

# --- commands ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    turn: int  # message index of the assistant message that ran it
    text: str
    observation: str = ""
    returncode: int | None = None

    @property
    def failed(self) -> bool:
        if self.returncode is not None:
            return self.returncode != 0
        return "Traceback (most recent call last)" in self.observation or ": command not found" in self.observation


_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def _tool_commands(calls: Iterable[Any]) -> list[str]:
    out = []
    for call in calls:
        args = call.get("arguments") or ""
        try:
            parsed = json.loads(args)
        except (TypeError, ValueError):
            parsed = None
        if isinstance(parsed, dict):
            for key in ("command", "cmd", "script", "code"):
                if isinstance(parsed.get(key), str):
                    out.append(parsed[key])
                    break
        elif args:
            out.append(str(args))
    return out


def commands(messages: Sequence[Any]) -> list[Command]:
    """What the agent ran, in order, each with the observation that came back."""
    found = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        turn = to_turn(i, message)
        texts = [turn.action] if turn.action else []
        texts += _tool_commands(turn.tool_calls)
        if not texts:
            continue
        observation, returncode = turn.observation, None
        if not observation:
            parts = []
            for follow in messages[i + 1 :]:
                if not isinstance(follow, dict) or follow.get("role") not in ("user", "tool"):
                    break
                parts.append(to_turn(0, follow).text)
                if isinstance(follow.get("returncode"), int) and returncode is None:
                    returncode = follow["returncode"]
            observation = "\n".join(parts)
        if returncode is None and (m := _RETURNCODE.search(observation[:200])):
            returncode = int(m.group(1))
        found += [Command(i, t, observation, returncode) for t in texts if t.strip()]
    return found


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def _strip_heredocs(script: str) -> str:
    out, terminator = [], None
    for line in script.split("\n"):
        if terminator is not None:
            if line.strip() == terminator:
                terminator = None
            continue
        out.append(line)
        if m := _HEREDOC.search(line):
            terminator = m.group(2)
    return "\n".join(out)


def segments(script: str) -> list[str]:
    """Simple commands of a shell script: split on ; && || | & newlines, subshells and
    backticks outside quotes, with heredoc bodies dropped."""
    script = _strip_heredocs(script).replace("\\\n", " ")
    parts, buf, quote, i = [], [], None, 0
    while i < len(script):
        ch = script[i]
        if quote:
            buf.append(ch)
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"' and i + 1 < len(script):
                buf.append(script[i + 1])
                i += 1
        elif ch in "'\"":
            quote = ch
            buf.append(ch)
        elif ch == "\\" and i + 1 < len(script):
            buf.append(script[i : i + 2])
            i += 1
        elif ch in ";|&\n()`":
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]


_WRAPPERS = {"sudo", "env", "nohup", "time", "exec", "command", "xargs"}


def _argv(segment: str) -> list[str]:
    try:
        argv = shlex.split(segment)
    except ValueError:
        argv = segment.split()
    while argv:
        head = argv[0]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", head) or head in _WRAPPERS:
            argv = argv[1:]
        elif head == "timeout":
            argv = argv[2:] if len(argv) > 2 else []
        else:
            break
    return argv


_HEX = re.compile(r"[0-9a-f]{7,40}")
_GIT_VALUE_OPTS = {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}
_HISTORY_READERS = {
    "log",
    "show",
    "diff",
    "checkout",
    "switch",
    "restore",
    "cherry-pick",
    "merge",
    "rebase",
    "reset",
    "format-patch",
    "whatchanged",
    "rev-list",
    "cat-file",
    "ls-tree",
    "archive",
    "blame",
    "grep",
    "shortlog",
    "range-diff",
    "difftool",
    "rev-parse",
    "name-rev",
    "describe",
}
_WIDE = {"--all", "--remotes", "--branches", "--tags", "--reflog", "--walk-reflogs", "-g"}
_REMOTE_REF = re.compile(r"^(refs/remotes/|remotes/|origin/|upstream/)|^(FETCH_HEAD|@\{u\}|@\{upstream\}|@\{push\})$")


def _git(argv: list[str]) -> tuple[str, list[str]]:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GIT_VALUE_OPTS else 1
    return (argv[i], argv[i + 1 :]) if i < len(argv) else ("", [])


def _is_known(sha: str, base: str, known: set[str]) -> bool:
    if base and (base.startswith(sha) or sha.startswith(base)):
        return True
    return sha in known or any(k.startswith(sha) or sha.startswith(k) for k in known if len(k) >= 7)


def _git_leak(sub: str, args: list[str], base: str, known: set[str]) -> str | None:
    if sub in ("fetch", "pull", "reflog"):
        return f"git {sub}"
    if sub == "remote" and args[:1] == ["update"]:
        return "git remote update"
    if sub not in _HISTORY_READERS:
        return None
    for arg in args:
        if arg == "--":
            break
        if sub in ("log", "rev-list", "shortlog", "whatchanged", "show") and (
            arg in _WIDE or arg.startswith(("--glob=", "--remotes=", "--branches=", "--tags="))
        ):
            return f"git {sub} {arg}"
        if arg.startswith("-"):
            continue
        for ref in re.split(r"\.\.\.?", arg):
            ref = re.split(r"[~^:]", ref, maxsplit=1)[0] if not ref.startswith("@{") else ref
            if _REMOTE_REF.search(ref):
                return f"git {sub} {arg}"
            if _HEX.fullmatch(ref) and re.search(r"\d", ref) and not _is_known(ref, base, known):
                return f"git {sub} {arg} (a commit other than the base)"
    return None


_PIP_VALUE_OPTS = {
    "-r",
    "--requirement",
    "-c",
    "--constraint",
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "-t",
    "--target",
    "--prefix",
    "--root",
    "--src",
    "--platform",
    "--python-version",
    "--implementation",
    "--abi",
    "-d",
    "--dest",
    "--progress-bar",
    "--no-binary",
    "--only-binary",
    "--upgrade-strategy",
    "--log",
    "--cache-dir",
    "--trusted-host",
    "--proxy",
    "--timeout",
    "--retries",
    "-p",
    "--python",
    "-n",
    "--name",
    "--channel",
}
_PIP_EAGER = {"-U", "--upgrade", "--pre", "--force-reinstall", "-I", "--ignore-installed"}
_REQ = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


def _installer(argv: list[str]) -> tuple[str, list[str]] | None:
    """(install | download, arguments) for pip-like commands, else None."""
    prog = os.path.basename(argv[0]) if argv else ""
    rest: list[str]
    if re.fullmatch(r"pip[0-9.]*", prog):
        rest = argv[1:]
    elif re.fullmatch(r"python[0-9.]*", prog) and "-m" in argv and argv[argv.index("-m") + 1 : argv.index("-m") + 2] == ["pip"]:
        rest = argv[argv.index("-m") + 2 :]
    elif prog == "uv" and argv[1:2] == ["pip"]:
        rest = argv[2:]
    elif prog == "uv" and argv[1:2] == ["add"]:
        rest = ["install", *argv[2:]]
    elif prog in ("conda", "mamba", "micromamba") or prog == "easy_install":
        rest = argv[1:] if prog != "easy_install" else ["install", *argv[1:]]
    else:
        return None
    rest = [a for a in rest if a not in ("-q", "-v", "--quiet", "--verbose", "-y", "--yes")]
    if not rest or rest[0] not in ("install", "download"):
        return None
    return rest[0], rest[1:]


def _project_url(repo: str, names: set[str]) -> re.Pattern[str] | None:
    owner_repo = (repo or "").strip().strip("/")
    alternatives = []
    if owner_repo.count("/") == 1:
        o, r = (re.escape(x) for x in owner_repo.split("/"))
        end = r"(?:\.git)?(?=$|[/\s\"'#?:@]|\.(?!\w))"
        alternatives += [
            rf"github\.com[/:]{o}/{r}{end}",
            rf"raw\.githubusercontent\.com/{o}/{r}/",
            rf"codeload\.github\.com/{o}/{r}{end}",
            rf"api\.github\.com/repos/{o}/{r}{end}",
        ]
    for name in names:
        pattern = re.sub(r"-", "[-_.]", re.escape(name).replace(r"\-", "-"))
        alternatives += [
            rf"pypi\.(?:org|python\.org)/(?:pypi|project|simple)/{pattern}(?=$|[/\s\"'#?])",
            rf"files\.pythonhosted\.org/\S*/{pattern}-\d",
        ]
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


def _pip_leak(sub: str, args: list[str], names: set[str], url: re.Pattern[str] | None, observation: str) -> str | None:
    eager = [a for a in args if a in _PIP_EAGER]
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        if arg in _PIP_VALUE_OPTS:
            skip_next = True
            continue
        if arg in ("-e", "--editable") or arg.startswith("-"):
            continue
        if "://" in arg or arg.startswith("git+"):
            if url and url.search(arg):
                return f"pip {sub} {arg}"
            continue
        if arg.startswith((".", "/", "~")):
            continue
        m = _REQ.match(arg)
        if not m or _norm(m.group(1)) not in names:
            continue
        name, spec = m.group(1), m.group(3).strip()
        if sub == "download":
            return f"pip download {arg}"
        if spec:
            return f"pip install {arg}"
        if eager:
            return f"pip install {' '.join(eager)} {arg}"
        installed = re.search(r"Successfully installed[^\n]*", observation)
        if installed and re.search(rf"(?:^|\s){re.sub('-', '[-_.]', _norm(name))}-\d", installed.group(0), re.IGNORECASE):
            return f"pip install {arg} (installed a release)"
    return None


_FETCHERS = {"curl", "wget", "http", "https", "httpie", "aria2c", "lynx", "links", "w3m", "gh", "svn", "hub"}
_GIT_NETWORK = {"clone", "fetch", "pull", "ls-remote", "remote", "submodule", "archive"}
_PY_NET = re.compile(r"urlopen|urllib|requests\.(get|post|request)|httpx|http\.client|urlretrieve")


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _command_signals(index: int, messages: Sequence[Any], *, repo: str, base: str) -> list[Signal]:
    names = package_names(repo)
    url = _project_url(repo, names)
    known: set[str] = set()
    signals: list[Signal] = []

    def add(name: str, command: Command, detail: str) -> None:
        note = f"ran: {_clip(command.text, 200)}"
        signals.append(Signal(name, index, command.turn, _clip(detail), Evidence("turn", index, str(command.turn), note)))

    for command in commands(messages):
        history_only = True
        for segment in segments(command.text):
            argv = _argv(segment)
            if not argv:
                continue
            prog = os.path.basename(argv[0])
            if prog == "git":
                sub, args = _git(argv)
                if why := _git_leak(sub, args, base, known):
                    add("upstream_history", command, why)
                    history_only = False
                if sub in _GIT_NETWORK and url and url.search(segment):
                    add("project_fetch", command, f"git {sub} of the project's repository")
            elif installer := _installer(argv):
                if why := _pip_leak(*installer, names, url, command.observation):
                    add("newer_release", command, why)
            elif url and (prog in _FETCHERS or (re.fullmatch(r"python[0-9.]*", prog) and _PY_NET.search(segment))):
                if m := url.search(segment):
                    add("project_fetch", command, f"{prog} {m.group(0)}")
        if history_only and re.search(r"\bgit\b", command.text):
            known.update(_HEX.findall(command.observation))
    unique, seen = [], set()
    for s in signals:
        if (s.signal, s.turn) not in seen:
            seen.add((s.signal, s.turn))
            unique.append(s)
    return unique
