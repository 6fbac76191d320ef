"""The tools a grader reads one group with. Pure: no Django.

Each tool is a plain function `(workspace, **arguments) -> dict` registered in `TOOLS`
with a description and a JSON-schema signature, so an LLM's tool calls, the heuristic
grader and tests all read the group the same way. `call_tool()` is the one entry point
for untrusted callers: it validates the arguments against the schema and turns every
failure into an `{"error": ...}` result instead of raising.

Rollout content is data. Tools return it inside fields (`text`, `diff`, `lines`) and
never mix it into prose addressed to the caller.

Line numbers are given the way evidence cites them (grading.grader.evidence): patches
show new-side numbers ("path:line"), trajectories 0-based message positions, test logs
1-based "log:N".

>>> from grading.grader.workspace import GroupWorkspace, RolloutView
>>> ws = GroupWorkspace(uid="g", instance_id="i", rollouts=[RolloutView(index=0, passed=True, test_log="ok\\nFAILED x")])
>>> call_tool(ws, "read_test_log", {"rollout": 0})["lines"]
[{'locator': 'log:1', 'text': 'ok'}, {'locator': 'log:2', 'text': 'FAILED x'}]
>>> call_tool(ws, "read_test_log", {"rollout": 0, "start": "x"})["error"]
"invalid arguments for read_test_log: start: must be an integer (got 'x')"
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from grading.grader.workspace import MAX_TEXT, CheckBudget, CheckRecord, GroupWorkspace, RolloutView, clip
from grading.repos.shares import project_share
from grading.repos.types import BASE, At, CheckResult, RepoError, RepoView
from grading.rollouts.diffs import ParsedPatch, parse_patch
from grading.rollouts.turns import to_turn

MAX_TURNS_PER_READ = 20
TURN_TEXT_LIMIT = 4_000  # default characters per turn field; a caller may ask for up to MAX_TEXT
MAX_LINES_PER_READ = 400
MAX_TEST_IDS = 200  # per category and outcome
SUMMARY_CHARS = 160
MAX_DIR_ENTRIES = 500
MAX_MATCHES = 200
MAX_COMMAND = 4_000
MAX_PATTERN = 1_000

T = TypeVar("T")


@dataclass(frozen=True)
class Tool:
    fn: Callable[..., dict[str, Any]]
    description: str
    parameters: dict[str, Any]  # JSON schema of the arguments object


class ToolError(Exception):
    """A refusal a tool states to its caller (bad rollout, path outside the checkout...)."""


# --- argument validation (the subset of JSON schema the tools and the verdict use) ----


def validate(schema: dict[str, Any], value: Any, where: str = "") -> list[str]:
    """Errors of `value` against `schema`; empty when it conforms.

    Supports type (object, array, string, integer, boolean), properties, required,
    additionalProperties: false, items, enum, minimum, maximum, minItems, maxItems, maxLength.
    Booleans are not integers here, unlike in Python.
    """
    label = where or "arguments"
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{label}: must be an object"]
        errors = []
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append(f"{_join(where, name)}: required")
        if schema.get("additionalProperties") is False:
            errors.extend(
                f"{_join(where, name)}: unexpected (allowed: {', '.join(props) or 'none'})" for name in value if name not in props
            )
        for name, sub in props.items():
            if name in value:
                errors.extend(validate(sub, value[name], _join(where, name)))
        return errors
    if kind == "array":
        if not isinstance(value, list):
            return [f"{label}: must be an array"]
        errors = []
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{label}: needs at least {schema['minItems']} item(s)")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{label}: at most {schema['maxItems']} item(s)")
        for i, item in enumerate(value):
            errors.extend(validate(schema.get("items", {}), item, f"{label}[{i}]"))
        return errors
    if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        return [f"{label}: must be an integer (got {_short(value)})"]
    if kind == "string" and not isinstance(value, str):
        return [f"{label}: must be a string (got {_short(value)})"]
    if kind == "string" and "maxLength" in schema and len(value) > schema["maxLength"]:
        return [f"{label}: at most {schema['maxLength']} characters (got {len(value)})"]
    if kind == "boolean" and not isinstance(value, bool):
        return [f"{label}: must be true or false (got {_short(value)})"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{label}: must be one of {', '.join(map(str, schema['enum']))} (got {_short(value)})"]
    if "minimum" in schema and value < schema["minimum"]:
        return [f"{label}: must be at least {schema['minimum']} (got {value})"]
    if "maximum" in schema and value > schema["maximum"]:
        return [f"{label}: must be at most {schema['maximum']} (got {value})"]
    return []


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def call_tool(workspace: GroupWorkspace, name: str, arguments: Any) -> dict[str, Any]:
    """Run one tool for an untrusted caller; errors come back as {"error": "..."}."""
    tool = TOOLS.get(name)
    if tool is None:
        return {"error": f"unknown tool {name!r}; tools are: {', '.join(TOOLS)}"}
    if arguments is None:
        arguments = {}
    errors = validate(tool.parameters, arguments)
    if errors:
        return {"error": f"invalid arguments for {name}: " + "; ".join(errors)}
    try:
        return tool.fn(workspace, **arguments)
    except ToolError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # noqa: BLE001  a tool bug must not end the grading conversation
        return {"error": f"{name} failed: {type(exc).__name__}: {exc}"}


# --- helpers --------------------------------------------------------------------------


def _rollout(workspace: GroupWorkspace, index: int) -> RolloutView:
    try:
        return workspace.rollout(index)
    except KeyError:
        raise ToolError(f"rollout {index} does not exist; rollouts are {[r.index for r in workspace.rollouts]}") from None


def _render_patch(
    text: str, only: str | None = None, *, cite_as: str | None = "path:<new-side line>", parsed: ParsedPatch | None = None
) -> dict[str, Any]:
    """Files of a unified diff with a line-numbered rendering of each.

    Each row is "<new-side line> <old-side line> |<sign><code>", so "path:<new-side line>"
    is a citation that resolves for a rollout's patch (`cite_as` says how its rows are cited:
    a diff between states cites file lines; a reference patch is not citable, None); removed
    lines have no new-side number. The rows are grading.rollouts.diffs' (parsed without
    rendering), the same ones evidence resolution reads; `parsed` is `text` parsed already
    (a rollout's, parsed once a workspace: RolloutView.parsed_patch).
    """
    if not (text or "").strip():
        return {"files": [], "empty": True}
    if parsed is None:
        parsed = parse_patch(text, render=False)
    if parsed.error:
        return {"parses": False, "error": parsed.error, "raw": clip(text)}
    signs = {"context": " ", "added": "+", "removed": "-"}
    files = []
    for file in parsed.files:
        if only is not None and file.path != only:
            continue
        rows = []
        for hunk in file.hunks:
            rows.append(hunk.header)
            for row in hunk.unified:
                new = "" if row.new_no is None else row.new_no
                old = "" if row.old_no is None else row.old_no
                rows.append(f"{new:>6} {old:>6} |{signs[row.kind]}{row.text}")
        files.append(
            {
                "path": file.path,
                "added": file.added,
                "removed": file.removed,
                "binary": file.status == "binary",
                "diff": clip("\n".join(rows)),
            }
        )
    if only is not None and not files:
        raise ToolError(f"the patch does not touch {only!r}; it touches {[f.path for f in parsed.files]}")
    return {
        "parses": True,
        "columns": "new-side line, old-side line, |, sign (+ added, - removed, space context), code",
        **({"cite_as": cite_as} if cite_as else {}),
        "files": files,
    }


def _one_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _line_range(lines: list[str], start: int, count: int, prefix: str = "") -> dict[str, Any]:
    chosen = lines[start - 1 : start - 1 + count]
    return {
        "total_lines": len(lines),
        "start": start,
        "end": start + len(chosen) - 1 if chosen else start - 1,
        "lines": [{"locator": f"{prefix}{start + i}", "text": clip(line, 2_000)["text"]} for i, line in enumerate(chosen)],
    }


# --- the tools ------------------------------------------------------------------------


def get_task(workspace: GroupWorkspace) -> dict[str, Any]:
    return {
        "uid": workspace.uid,
        "instance_id": workspace.instance_id,
        "repo": workspace.repo,
        "problem_statement": clip(workspace.problem_statement),
        "fail_to_pass": workspace.fail_to_pass[:MAX_TEST_IDS],
        "pass_to_pass": workspace.pass_to_pass[:MAX_TEST_IDS],
        "fail_to_pass_count": len(workspace.fail_to_pass),
        "pass_to_pass_count": len(workspace.pass_to_pass),
        "has_gold_patch": bool(workspace.gold_patch),
        "has_test_patch": bool(workspace.test_patch),
        "has_repository": workspace.repo_view is not None,
        "checks_left": workspace.checks_left,
        "passing_rollouts": [r.index for r in workspace.passing],
        "failing_rollouts": [r.index for r in workspace.rollouts if not r.passed],
    }


def list_rollouts(workspace: GroupWorkspace) -> dict[str, Any]:
    rows = []
    for r in workspace.rollouts:
        parsed = r.parsed_patch  # unrendered, parsed once a workspace
        rows.append(
            {
                "index": r.index,
                "passed": r.passed,
                "exit_status": r.exit_status,
                "stats": r.stats,
                "turns": len(r.messages),
                "test_log_lines": r.test_log.count("\n") + 1 if r.test_log else 0,
                "patch_parses": parsed.parses,
                "patch_files": [
                    {"path": f.path, "status": f.status, "added": f.added, "removed": f.removed} for f in parsed.files
                ],
            }
        )
    return {"rollouts": rows}


def summarize_turns(workspace: GroupWorkspace, rollout: int, start: int = 0, count: int = 200) -> dict[str, Any]:
    r = _rollout(workspace, rollout)
    out = []
    for position in range(start, min(start + count, len(r.messages))):
        message = r.messages[position]
        if not isinstance(message, dict):
            out.append({"position": position, "role": "unknown", "summary": "", "chars": 0})
            continue
        turn = to_turn(position, message)
        if turn.action:
            summary = "$ " + turn.action
        elif turn.tool_calls:
            summary = "; ".join(f"{c['name']}({c['arguments']})" for c in turn.tool_calls)
        else:
            summary = turn.text or turn.observation or turn.thought
        out.append({"position": position, "role": turn.role, "summary": _one_line(summary), "chars": turn.size})
    return {"rollout": rollout, "total_turns": len(r.messages), "cite_as": "turn position (0-based)", "turns": out}


def read_turns(
    workspace: GroupWorkspace, rollout: int, start: int, count: int = 5, max_chars: int = TURN_TEXT_LIMIT
) -> dict[str, Any]:
    r = _rollout(workspace, rollout)
    if start >= len(r.messages):
        raise ToolError(f"rollout {rollout} has {len(r.messages)} turns (0-based); start {start} is past the end")
    turns = []
    for position in range(start, min(start + count, len(r.messages))):
        message = r.messages[position]
        turn = to_turn(position, message if isinstance(message, dict) else {"content": str(message)})
        entry: dict[str, Any] = {"position": position, "role": turn.role}
        for name in ("text", "thought", "action", "observation"):
            value = getattr(turn, name)
            if value:
                entry[name] = clip(value, max_chars)
        if turn.tool_calls:
            entry["tool_calls"] = [{"name": c["name"], "arguments": clip(c["arguments"], max_chars)} for c in turn.tool_calls]
        turns.append(entry)
    return {"rollout": rollout, "total_turns": len(r.messages), "turns": turns}


def read_patch(workspace: GroupWorkspace, rollout: int, path: str | None = None) -> dict[str, Any]:
    r = _rollout(workspace, rollout)
    return {"rollout": rollout, **_render_patch(r.patch, path, parsed=r.parsed_patch)}


def outcomes_of_tests(workspace: GroupWorkspace, rollout: int) -> dict[str, Any]:
    r = _rollout(workspace, rollout)
    categories = {}
    for category, outcome in (r.tests or {}).items():
        if not isinstance(outcome, dict):
            continue
        entry: dict[str, Any] = {}
        for key in ("success", "failure"):
            ids = [str(t) for t in (outcome.get(key) or [])]
            entry[key] = ids[:MAX_TEST_IDS]
            entry[f"{key}_count"] = len(ids)
        categories[str(category)] = entry
    return {
        "rollout": rollout,
        "passed": r.passed,
        "tests": categories,
        "test_log_lines": r.test_log.count("\n") + 1 if r.test_log else 0,
        "cite_as": "a test id listed here, or log:N for line N (1-based) of the test log",
    }


def read_test_log(workspace: GroupWorkspace, rollout: int, start: int = 1, count: int = 200) -> dict[str, Any]:
    r = _rollout(workspace, rollout)
    # split("\n"), not splitlines(): the same line count evidence.resolve checks "log:N" against.
    lines = r.test_log.split("\n") if r.test_log else []
    return {"rollout": rollout, **_line_range(lines, start, count, prefix="log:")}


def read_reference_patch(workspace: GroupWorkspace, which: str = "gold") -> dict[str, Any]:
    text = workspace.gold_patch if which == "gold" else workspace.test_patch
    if not text:
        return {"which": which, "present": False}
    # reference patches are context, not citable evidence
    return {"which": which, "present": True, **_render_patch(text, cite_as=None)}


# --- the repository: base and every rollout's state (grading.repos) --------------------


def _view(workspace: GroupWorkspace) -> RepoView:
    if workspace.repo_view is None:
        raise ToolError("no repository is configured for this group")
    return workspace.repo_view


def _at(workspace: GroupWorkspace, rollout: int | None) -> At:
    """The state a tool reads: `rollout`'s when given (it must exist), else the base commit."""
    if rollout is None:
        return BASE
    _rollout(workspace, rollout)
    return rollout


def _repo_call(fn: Callable[[], T]) -> T:
    try:
        return fn()
    except RepoError as exc:
        raise ToolError(str(exc)) from None


def file_locator(at: At, path: str, line: int) -> str:
    """How a file citation names line `line` of `path` at state `at`: "<rollout|base>:<path>:<line>"."""
    return f"{at}:{path}:{line}"


def read_file(
    workspace: GroupWorkspace, path: str = "", rollout: int | None = None, start: int = 1, count: int = 200
) -> dict[str, Any]:
    view = _view(workspace)
    at = _at(workspace, rollout)
    path = path.strip().strip("/")
    entries = None if path else _repo_call(lambda: view.list(at, ""))
    if entries is None:
        try:
            data = view.read(at, path)
        except RepoError as exc:
            if "directory" not in str(exc):
                raise ToolError(str(exc)) from None
            entries = _repo_call(lambda: view.list(at, path))
    if entries is not None:
        names = [e.name + ("/" if e.kind == "directory" else "") for e in entries[:MAX_DIR_ENTRIES]]
        return {"at": at, "path": path, "directory": True, "entries": names, "total_entries": len(entries)}
    if b"\0" in data[:8192]:
        raise ToolError(f"{path!r} is a binary file at {at}")
    lines = data.decode("utf-8", errors="replace").split("\n")
    return {
        "at": at,
        "path": path,
        "directory": False,
        "cite_as": f"kind file, locator {file_locator(at, path, start)} (state:path:line)",
        **_line_range(lines, start, count, prefix=f"{at}:{path}:"),
    }


def search_code(
    workspace: GroupWorkspace,
    pattern: str,
    rollout: int | None = None,
    path: str = "",
    fixed: bool = False,
    ignore_case: bool = False,
    max_matches: int = 100,
) -> dict[str, Any]:
    view = _view(workspace)
    at = _at(workspace, rollout)
    if not pattern:
        raise ToolError("pattern must not be empty")
    under = path.strip().strip("/")
    found = _repo_call(lambda: view.grep(at, pattern, path=under, fixed=fixed, ignore_case=ignore_case, max_matches=max_matches))
    return {
        "at": at,
        "pattern": pattern,
        "matches": [
            {"locator": file_locator(at, m.path, m.line), "path": m.path, "line": m.line, "text": clip(m.text, 500)["text"]}
            for m in found.matches
        ],
        "truncated": found.truncated,
        "timed_out": found.timed_out,
        "cite_as": "kind file with a match's locator",
    }


def diff_file(workspace: GroupWorkspace, path: str, rollout: int, against: int | None = None) -> dict[str, Any]:
    view = _view(workspace)
    at = _at(workspace, rollout)
    other = _at(workspace, against)
    text = _repo_call(lambda: view.diff(path.strip().strip("/"), other, at))
    return {
        "path": path,
        "from": other,
        "to": at,
        "identical": not text.strip(),
        **_render_patch(text, cite_as=f"kind file, locator {at}:<path>:<new-side line> (or {other}:<path>:<old-side line>)"),
    }


def touched_files(workspace: GroupWorkspace, rollout: int, context: int = 10) -> dict[str, Any]:
    view = _view(workspace)
    r = _rollout(workspace, rollout)
    applied = _repo_call(view.applied).get(r.index)
    state: dict[str, Any] = {"how": applied.how if applied else "unknown"}
    if applied is not None and applied.error:
        state["error"] = clip(applied.error, 2_000)["text"]
    if applied is not None and applied.skipped:
        state["left_at_base"] = list(applied.skipped)
    if applied is None or not applied.usable:
        return {"rollout": rollout, "patch_applies": False, "state": state, "files": []}
    text = _repo_call(lambda: view.diff("", BASE, r.index, context=context))
    return {
        "rollout": rollout,
        "patch_applies": True,
        "state": state,
        **_render_patch(text, cite_as=f"kind file, locator {rollout}:<path>:<new-side line>"),
    }


SHARE_WAIT_S = 30.0  # how long a check waits for a place among its project's before it is refused


def _in_share(budget: CheckBudget, run: Callable[[], CheckResult]) -> CheckResult:
    """`run` while holding one of the project's places on this host, when the budget names one."""
    if budget.project is None or budget.project_slots < 1 or budget.lock_dir is None:
        return run()
    wait = SHARE_WAIT_S if (left := budget.seconds_left()) is None else max(0.0, min(SHARE_WAIT_S, left - 1))
    with project_share(budget.lock_dir, budget.project, budget.project_slots, wait):
        return run()


def _check_budget(workspace: GroupWorkspace) -> CheckBudget:
    """The group's check budget, when it has a check left (else ToolError saying why not)."""
    budget = workspace.checks
    if budget is None:
        raise ToolError("checks are off for this project")
    if workspace.checks_left <= 0:
        raise ToolError(f"the check budget is spent: {budget.max_checks} checks per group")
    return budget


def run_sandboxed(workspace: GroupWorkspace, view: RepoView, at: At, rollout: int, command: str) -> CheckRecord:
    """Run `command` in the sandbox on a copy of `view`'s state `at`, within the group's check
    budget and deadline, and record it as the group's next check (cited on `rollout`). The one
    path every check takes: the model's run_check and the differential matrix
    (grading.grader.differential). ToolError when the budget or the deadline leaves none."""
    budget = _check_budget(workspace)
    limits = budget.limits
    left = budget.seconds_left()
    if left is not None:
        if left < 1:
            raise ToolError("the group's grading deadline leaves no time for a check")
        limits = replace(limits, wall_s=min(limits.wall_s, left))
    root = _repo_call(lambda: view.checkout(at))
    result = _repo_call(lambda: _in_share(budget, lambda: budget.sandbox.run(root, command, limits)))
    record = CheckRecord(
        number=len(workspace.check_log) + 1,
        rollout=rollout,
        command=command,
        exit_status=result.exit_status,
        seconds=round(result.seconds, 3),
        output=result.output,
        truncated=result.truncated,
        killed=result.killed,
        sandbox=result.sandbox or budget.sandbox.name,
    )
    workspace.check_log.append(record)
    return record


def run_check(workspace: GroupWorkspace, rollout: int, command: str) -> dict[str, Any]:
    _check_budget(workspace)
    if not command.strip():
        raise ToolError("command must not be empty")
    view = _view(workspace)
    at = _at(workspace, rollout)
    record = run_sandboxed(workspace, view, at, rollout, command)
    return {
        "check": record.number,
        "cite_as": f"kind check, locator {record.number}",
        "rollout": rollout,
        "exit_status": record.exit_status,
        "killed": record.killed,
        "seconds": record.seconds,
        "output": clip(record.output, MAX_TEXT),
        "output_truncated_by_sandbox": record.truncated,
        "checks_left": workspace.checks_left,
    }


_ROLLOUT = {"type": "integer", "description": "rollout index, as list_rollouts gives it"}


def _schema(properties: dict[str, Any] | None = None, required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties or {}, "required": list(required), "additionalProperties": False}


TOOLS: dict[str, Tool] = {
    "get_task": Tool(
        get_task,
        "The task: repository, problem statement, FAIL_TO_PASS and PASS_TO_PASS test ids, which rollouts passed, and "
        "whether a gold/test patch, the repository and checks are available.",
        _schema(),
    ),
    "list_rollouts": Tool(
        list_rollouts,
        "Every rollout of the group: index, passed, exit status, stats, number of turns and test-log lines, and the "
        "files its patch touches with lines added/removed.",
        _schema(),
    ),
    "summarize_turns": Tool(
        summarize_turns,
        "One line per turn of a rollout's trajectory: position (0-based, what a turn citation names), role, a one-line "
        "summary of its action or text, and its size in characters.",
        _schema(
            {
                "rollout": _ROLLOUT,
                "start": {"type": "integer", "minimum": 0},
                "count": {"type": "integer", "minimum": 1, "maximum": 500},
            },
            ("rollout",),
        ),
    ),
    "read_turns": Tool(
        read_turns,
        f"Full turns of a rollout's trajectory from position `start` (0-based), at most {MAX_TURNS_PER_READ} at a time; "
        "each field is cut at max_chars characters (and says so).",
        _schema(
            {
                "rollout": _ROLLOUT,
                "start": {"type": "integer", "minimum": 0},
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_TURNS_PER_READ},
                "max_chars": {"type": "integer", "minimum": 200, "maximum": MAX_TEXT},
            },
            ("rollout", "start"),
        ),
    ),
    "read_patch": Tool(
        read_patch,
        "A rollout's final patch, whole or one file (`path` as list_rollouts gives it), with new-side line numbers: "
        "cite a line as 'path:<new-side line>'.",
        _schema({"rollout": _ROLLOUT, "path": {"type": "string"}}, ("rollout",)),
    ),
    "test_outcomes": Tool(
        outcomes_of_tests,
        "A rollout's test outcomes per category (FAIL_TO_PASS, PASS_TO_PASS): test ids that succeeded and failed.",
        _schema({"rollout": _ROLLOUT}, ("rollout",)),
    ),
    "read_test_log": Tool(
        read_test_log,
        f"Lines of a rollout's test log from line `start` (1-based), at most {MAX_LINES_PER_READ}; cite a line as 'log:N'.",
        _schema(
            {
                "rollout": _ROLLOUT,
                "start": {"type": "integer", "minimum": 1},
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_LINES_PER_READ},
            },
            ("rollout",),
        ),
    ),
    "read_reference_patch": Tool(
        read_reference_patch,
        "The task's reference fix ('gold') or the patch that adds its tests ('test'), when the group has them. Context "
        "only: not citable.",
        _schema({"which": {"type": "string", "enum": ["gold", "test"]}}),
    ),
    "read_file": Tool(
        read_file,
        "The repository at the task's base commit, or as a rollout's patch left it (`rollout`; omit for base): a "
        f"directory listing, or lines of a file from `start` (1-based), at most {MAX_LINES_PER_READ}. `path` is "
        "relative to the repository root. Cite a line as kind file, locator '<rollout|base>:<path>:<line>'.",
        _schema(
            {
                "path": {"type": "string"},
                "rollout": {**_ROLLOUT, "description": "read this rollout's state; omit for the base commit"},
                "start": {"type": "integer", "minimum": 1},
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_LINES_PER_READ},
            },
        ),
    ),
    "search_code": Tool(
        search_code,
        "git grep over the repository at base or at a rollout's state: lines matching `pattern` (a POSIX extended "
        "regular expression, or a fixed string with fixed=true), optionally under `path`, at most `max_matches`. Use it "
        "to find other callers of what a patch changed. Each match has a file locator.",
        _schema(
            {
                "pattern": {"type": "string", "maxLength": MAX_PATTERN},
                "rollout": {**_ROLLOUT, "description": "search this rollout's state; omit for the base commit"},
                "path": {"type": "string", "description": "a directory or file to search under"},
                "fixed": {"type": "boolean"},
                "ignore_case": {"type": "boolean"},
                "max_matches": {"type": "integer", "minimum": 1, "maximum": MAX_MATCHES},
            },
            ("pattern",),
        ),
    ),
    "diff_file": Tool(
        diff_file,
        "One file (or the whole tree with path '') compared between two states: from `against` (another rollout; omit "
        "for the base commit) to `rollout`. Shows how two rollouts' versions of a file differ.",
        _schema(
            {
                "path": {"type": "string"},
                "rollout": _ROLLOUT,
                "against": {**_ROLLOUT, "description": "the other rollout; omit to compare with the base commit"},
            },
            ("path", "rollout"),
        ),
    ),
    "touched_files": Tool(
        touched_files,
        "The files a rollout's patch touches as applied to the base commit, each hunk with `context` lines of the "
        "surrounding code, and how the patch applied (clean, three_way, partial, failed).",
        _schema({"rollout": _ROLLOUT, "context": {"type": "integer", "minimum": 0, "maximum": 50}}, ("rollout",)),
    ),
    "run_check": Tool(
        run_check,
        "Run a shell command in a sandboxed copy of a rollout's state (no network, nothing kept afterwards, time, "
        "memory and output capped), for evidence no file shows: run a test, import a module, try an input. Returns the "
        "exit status and output; cite it as kind check, locator '<check number>'. Checks per group are limited.",
        _schema(
            {"rollout": _ROLLOUT, "command": {"type": "string", "maxLength": MAX_COMMAND}},
            ("rollout", "command"),
        ),
    ),
}

REPO_TOOLS = frozenset({"read_file", "search_code", "diff_file", "touched_files"})
CHECK_TOOLS = frozenset({"run_check"})
