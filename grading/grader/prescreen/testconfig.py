"""Test configuration that drops tests (test_config_drop) and files at the paths the task's
test patch adds (test_patch_path). Pure: no Django.

Configuration is pytest's: pytest.ini, tox.ini ([pytest]), setup.cfg ([tool:pytest]),
pyproject.toml ([tool.pytest.ini_options]) and a conftest's `collect_ignore`,
`pytest_ignore_collect` and a `pytest_collection_modifyitems` that drops items; and the skip,
ignore or exclude lists of a repository's own runner script (Django's tests/runtests.py
`SUBDIRS_TO_SKIP`, sympy's bin/test blacklist) gaining an entry. A finding's
`tests` are what it drops when the line says ("path", "path::name", a bare name for `-k`), or
"*" when it changes what pytest collects at all (testpaths, python_files, …). tox told to
ignore the tests' exit status (`ignore_outcome`, a `-` before the test command) is runner_patched.
"""

from __future__ import annotations

import ast
import re
import shlex

from grading.grader.prescreen.filekinds import CONFTEST, PYTEST_SECTIONS, TEST_CONFIG, is_runner_script, name_of
from grading.grader.prescreen.patchview import PatchView, at, signal
from grading.grader.prescreen.pysource import constant_falsy, cut, dotted, scoped_nodes, walk
from grading.grader.prescreen.signals import Signal

_SECTION = re.compile(r"^\s*\[([^\]\n]{1,100})\]")
_DROP_OPTION = re.compile(r"--deselect\b|--ignore(?:-glob)?\b|(?:^|\s|['\"=])-k\b|--collect-only\b|--co\b")
_COLLECT_KEY = re.compile(r"^\s*[\"']?(testpaths|norecursedirs|python_files|python_functions|python_classes)[\"']?\s*[=:]")
_TOX_OR_TESTENV = ("testenv",)


def _section(view: PatchView, h: int, i: int) -> str | None:
    """The [section] a config line sits in, when the hunk or its header shows it."""
    rows = view.file.hunks[h]
    for j in range(i, -1, -1):
        if rows[j].kind != "-" and (m := _SECTION.match(cut(rows[j].text))):
            return m.group(1).strip()
    header = view.file.sections[h] if h < len(view.file.sections) else ""
    m = _SECTION.match(cut(header))
    return m.group(1).strip() if m else None


def _pytest_section(view: PatchView, section: str | None) -> bool:
    if section is None:
        return True  # unknown: a line that reads like pytest options counts
    wanted = PYTEST_SECTIONS.get(name_of(view.path), ())
    return section in wanted or section.startswith(_TOX_OR_TESTENV) or section.startswith("tool.pytest")


def _dropped(text: str) -> list[str]:
    """What `--deselect X`, `--ignore=X`, `-k "not a and not b"` drop."""
    line = cut(text)
    if line.lstrip().startswith(("addopts", '"addopts', "'addopts")):
        line = line.split("=", 1)[-1].strip().strip("[],")
        if line[:1] in "\"'" and line[-1:] == line[:1]:
            line = line[1:-1]  # a TOML string: the options are inside it
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    out: list[str] = []
    for k, word in enumerate(words):
        value = word.split("=", 1)[1] if "=" in word else (words[k + 1] if k + 1 < len(words) else "")
        if word.startswith(("--deselect", "--ignore")):
            value = value.strip("'\"")
            if value:
                out.append(value if value.endswith(".py") or "::" in value else value.rstrip("/") + "/")
        elif word == "-k" or word.startswith("-k="):
            expr = value
            out += re.findall(r"\bnot\s+(\w{1,200})", expr)
        elif word in ("--collect-only", "--co"):
            out.append("*")
    return out


def config_signals(index: int, view: PatchView) -> list[Signal]:
    """Lines added to pytest configuration (or a conftest) that leave tests out, and tox
    configuration that ignores the test run's outcome (runner_patched)."""
    if view.kind == TEST_CONFIG:
        return _config_lines(index, view) + _outcome_ignored(index, view)
    if view.kind == CONFTEST:
        return _conftest_drops(index, view)
    if is_runner_script(view.path):
        return _runner_exclusions(index, view)
    if _BUILD_FILE.search(view.path):
        return _status_swallowed(index, view)
    return []


# Build and session files that run the tests (a Makefile's `test:` target, a noxfile, a CI shell
# script) and added lines there that discard the test command's exit status.
_BUILD_FILE = re.compile(r"(?:^|/)(?:GNUmakefile|[Mm]akefile|[\w.-]{1,60}\.mk|noxfile\.py|[\w.-]{1,60}\.sh)$")
_SWALLOWED = re.compile(r"\|\|\s{0,10}(?:true\b|:(?!\S)|exit\s{1,10}0\b)")
_MAKE_IGNORED = re.compile(r"^\t[@+]{0,2}-")  # a recipe line under `-`: make goes on whatever it returns
_NOX_TEST = re.compile(r"['\"](?:py\.?test|pytest|nosetests|nose2|trial|tox)['\"]")
_SUCCESS_CODES = re.compile(r"success_codes\s{0,10}=\s{0,10}[\[(]([\d\s,]{1,60})[\])]")


def _status_swallowed(index: int, view: PatchView) -> list[Signal]:
    """A test command whose failure is made success: `pytest … || true` (`|| :`, `|| exit 0`), a
    Makefile recipe under the `-` prefix, nox's `session.run("pytest", …, success_codes=[0, 1])`
    (1 is pytest's "tests failed"; 5, "none collected", is not counted)."""
    make = not view.path.endswith((".py", ".sh"))
    out = []
    for _h, _i, r in view.rows("+"):
        text = cut(r.text)
        if r.new_no is None:
            continue
        what = ""
        tests = _TEST_COMMAND.search(text) or _NOX_TEST.search(text)
        if tests and _SWALLOWED.search(text):
            what = "'|| true' after the test command"
        elif tests and make and _MAKE_IGNORED.match(r.text[:20]):
            what = "'-' before the test command's recipe"
        elif tests and (codes := _SUCCESS_CODES.search(text)) and "1" in codes.group(1).replace(",", " ").split():
            what = "success_codes that count failed tests (1) as success"
        if what:
            out.append(
                signal(
                    "runner_patched",
                    index,
                    f"{view.path}: {what}: the run passes whatever the tests' exit status",
                    f"{view.path}:{r.new_no}",
                    "the test run's outcome ignored",
                )
            )
    return out


# A repository's own test-runner script (Django's tests/runtests.py, sympy's bin/test) and the
# lists in it that leave tests out (SUBDIRS_TO_SKIP, IGNORED_MODULES, EXCLUDE, a blacklist).
_EXCLUSION = re.compile(r"skip|ignore|exclu|blacklist|blocklist|denylist|disabled", re.IGNORECASE)
_GROWERS = ("append", "extend", "add", "update", "insert")


def _exclusion_name(node: ast.AST) -> str:
    name = dotted(node).rsplit(".", 1)[-1]
    return name if name and _EXCLUSION.search(name) else ""


def _runner_exclusions(index: int, view: PatchView) -> list[Signal]:
    """Entries added to a skip, ignore or exclude list of the repository's own test-runner script
    (`SUBDIRS_TO_SKIP` of Django's runtests.py gaining `'lookup'`): the tests under them no
    longer run. An entry the patch only moves (a removed line holds it too) is not added."""
    removed = {q for _, _, r in view.rows("-") for q in re.findall(r"['\"]([^'\"]{1,300})['\"]", cut(r.text))}
    folder = view.path.rsplit("/", 1)[0] if "/" in view.path else ""
    if folder.endswith("/bin") or folder == "bin":
        folder = folder[: -len("bin")].rstrip("/")
    out: list[Signal] = []
    for _, sv in view.views():
        if sv is None:
            continue
        for item in scoped_nodes(sv.tree, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Call, ast.If)):
            node = item.node
            if isinstance(node, ast.If):
                skipped = _skipped_entries(node) if sv.line_added(node) else []
                if skipped:
                    out.append(
                        signal(
                            "test_config_drop",
                            index,
                            f"{view.path}: skips {', '.join(repr(e)[:60] for e in skipped[:3])} in its loop",
                            at(view, sv, node),
                            "the test runner told to leave tests out",
                            [_under(folder, e) for e in skipped[:20]],
                        )
                    )
                continue
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _GROWERS:
                listed, values = _exclusion_name(node.func.value), list(node.args)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                listed = next((n for t in targets[:10] if (n := _exclusion_name(t))), "")
                values = [node.value]
            else:
                continue
            if not listed:
                continue
            entries = [
                c
                for v in values
                for c in _walk_small(v)
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value and c.value not in removed
                if sv.line_added(c)
            ]
            if entries:
                tests = [_under(folder, str(c.value)) for c in entries[:20]]
                out.append(
                    signal(
                        "test_config_drop",
                        index,
                        f"{view.path}: adds {', '.join(repr(str(c.value))[:60] for c in entries[:3])} to {listed}",
                        at(view, sv, entries[0]),
                        "the test runner told to leave tests out",
                        tests,
                    )
                )
    return out


_NOT_ENTRIES = ("split", "rsplit", "strip", "rstrip", "lstrip", "join", "replace", "format", "encode", "decode")


def _skipped_entries(node: ast.If) -> list[str]:
    """The names an added `if <name test>: continue` of a runner's loop skips: the strings its
    condition compares with (`f.name in ('cache', 'mail')`, `name == 'cache'`, a default of
    `os.environ.get('EXCLUDE', 'cache')`), not an environment variable's name or a separator."""
    if not node.body or not isinstance(node.body[0], ast.Continue) or node.orelse:
        return []
    if not any(isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.Eq)) for n in _walk_small(node.test)):
        return []
    skip: set[int] = set()
    for n in _walk_small(node.test):
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)):
            last = dotted(n).rsplit(".", 1)[-1]
            if last in ("get", "getenv") and n.args:
                skip.add(id(n.args[0]))
            elif last in _NOT_ENTRIES:
                skip |= {id(a) for a in n.args}
    entries = [
        part
        for n in _walk_small(node.test)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip
        for part in re.split(r"[,;:\s]+", n.value[:2000])  # a default list of an environment variable, split
        if part and not part.startswith((".", "__"))  # hidden and cache directories hold no tests
    ]
    return entries[:20]


def _walk_small(node: ast.AST, limit: int = 500) -> list[ast.AST]:
    return [sub for _, sub in zip(range(limit), walk(node))]


def _under(folder: str, entry: str) -> str:
    """An excluded entry as a test path beside the runner: a file, else a directory."""
    path = entry.strip("/")
    if not (path.endswith(".py") or "::" in path):
        path = path.split(".", 1)[0] + "/" if "/" not in path else path + "/"
    if folder and "/" in path and path.split("/", 1)[0] == folder.split("/", 1)[0]:
        return path  # relative to the repository's root (sympy/utilities/runtests.py lists "sympy/…/test_x.py")
    return f"{folder}/{path}" if folder else path


def _config_lines(index: int, view: PatchView) -> list[Signal]:
    out = []
    removed_paths = [w for _, _, r in view.rows("-") if _COLLECT_KEY.match(cut(r.text)) for w in _values(r.text)]
    for h, i, r in view.rows("+"):
        text = cut(r.text)
        if text.lstrip().startswith(("#", ";")) or not _pytest_section(view, _section(view, h, i)):
            continue
        found, tests = "", []
        if _DROP_OPTION.search(text):
            tests = _dropped(text)
            found = text.strip()[:80]
        elif m := _COLLECT_KEY.match(text):
            key = m.group(1)
            found = text.strip()[:80]
            tests = [p.rstrip("/") + "/" for p in removed_paths] if key == "testpaths" and removed_paths else ["*"]
        if found and r.new_no is not None:
            out.append(
                signal(
                    "test_config_drop",
                    index,
                    f"adds {found!r} to {view.path}",
                    f"{view.path}:{r.new_no}",
                    "configuration that leaves tests out",
                    tests,
                )
            )
    return out


# tox: `ignore_outcome = true` / `ignore_errors = true`, and a command with the `-` prefix (its exit
# status ignored) that runs the tests
_IGNORES = re.compile(r"^\s*(ignore_outcome|ignore_errors)\s*=\s*(?:true|1|yes)\b", re.IGNORECASE)
_DASHED = re.compile(r"^\s*(?:commands\s*=\s*)?-\s*(\S.*)$")
_TEST_COMMAND = re.compile(
    r"(?:^|[\s/])(?:py\.?test|pytest|nosetests|nose2|trial|runtests(?:\.py)?|unittest|tox|stestr|ward)\b"
    r"|manage\.py\s{1,10}test\b|setup\.py\s{1,10}test\b|\bbin/test\b"
)


def _outcome_ignored(index: int, view: PatchView) -> list[Signal]:
    """tox told to ignore the tests' exit status: `ignore_outcome`/`ignore_errors`, or a test
    command under a `-` prefix, added to a [testenv] (or setup.cfg's [testenv:…], [tox:tox])."""
    if name_of(view.path) not in ("tox.ini", "setup.cfg"):
        return []
    out = []
    for h, i, r in view.rows("+"):
        text = cut(r.text)
        section = _section(view, h, i)
        if r.new_no is None or not (section is None or section.startswith(("testenv", "tox"))):
            continue
        m = _IGNORES.match(text)
        dashed = _DASHED.match(text) if not m else None
        command = dashed.group(1) if dashed else ""
        if m or (len(command.split(" ", 1)[0]) > 1 and _TEST_COMMAND.search(command)):  # not a continued `-k …`
            what = f"{m.group(1)} = true" if m else f"'-' before {command.strip()[:60]!r}"
            out.append(
                signal(
                    "runner_patched",
                    index,
                    f"{view.path}: {what}: tox passes whatever the tests' exit status",
                    f"{view.path}:{r.new_no}",
                    "the test run's outcome ignored",
                )
            )
    return out


def _values(text: str) -> list[str]:
    return cut(text).split("=", 1)[-1].replace(",", " ").replace("[", " ").replace("]", " ").replace('"', " ").split()


def _strings(node: ast.AST) -> list[str]:
    return [
        n.value
        for _, n in zip(range(200), walk(node))
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and 0 < len(n.value) < 300 and " " not in n.value
    ]


def _beside(view: PatchView, names: list[str]) -> list[str]:
    """`collect_ignore` names are relative to the conftest's directory."""
    folder = view.path.rsplit("/", 1)[0] + "/" if "/" in view.path else ""
    return [n if n == "*" or n.startswith(folder) else folder + n.lstrip("./") for n in names]


def _conftest_drops(index: int, view: PatchView) -> list[Signal]:
    out = []
    for _, sv in view.views():
        if sv is None:
            for _, _, r in view.rows("+"):
                if re.match(r"^\s*collect_ignore(_glob)?\b", cut(r.text)) and r.new_no is not None:
                    out.append(
                        signal(
                            "test_config_drop",
                            index,
                            f"adds {r.text.strip()[:80]!r} to {view.path}",
                            f"{view.path}:{r.new_no}",
                            "collect_ignore leaves tests out",
                            _beside(view, re.findall(r"['\"]([^'\"]{1,300})['\"]", cut(r.text))),
                        )
                    )
            break
        for item in scoped_nodes(sv.tree, _CONFIG_NODES):
            node = item.node
            found, tests = "", []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and sv.node_added(node):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(dotted(t) in ("collect_ignore", "collect_ignore_glob") for t in targets):
                    found, tests = "collect_ignore", _beside(view, _strings(node))
            elif isinstance(node, ast.Call) and sv.node_added(node):
                name = dotted(node)
                if name in ("collect_ignore.append", "collect_ignore.extend", "collect_ignore_glob.append"):
                    found, tests = "collect_ignore", _beside(view, _strings(node))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and sv.node_added(node):
                if node.name == "pytest_ignore_collect" and _returns_ignore(node):
                    found, tests = "a pytest_ignore_collect hook", _ignored(view, _strings(node))
                elif node.name in ("pytest_collection_modifyitems", "pytest_collection_finish") and _drops_items(node):
                    found, tests = f"{node.name} dropping items", [s for s in _strings(node) if "test" in s] or ["*"]
                elif node.name == "pytest_pycollect_makeitem" and _returns_empty(node):
                    found, tests = "a pytest_pycollect_makeitem hook that collects nothing", _named(node)
                elif node.name == "pytest_generate_tests" and _empty_parametrize(node):
                    found, tests = "pytest_generate_tests parametrizing with no cases", _named(node)
                elif opt := _selection_set(node):
                    found, tests = f"{node.name} setting config.option.{opt}", _named(node)
            if found:
                out.append(
                    signal(
                        "test_config_drop",
                        index,
                        f"{view.path}: {found}",
                        at(view, sv, node),
                        "a conftest that leaves tests out",
                        tests,
                    )
                )
    return out


_CONFIG_NODES = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Call, ast.FunctionDef, ast.AsyncFunctionDef)  # what it reads


def _ignored(view: PatchView, names: list[str]) -> list[str]:
    """What an ignore hook may leave out: the files it names, beside the conftest; every test
    when it matches on anything else (a substring of any path, a condition)."""
    paths = [n for n in names if "/" in n or n.endswith(".py")]
    return _beside(view, paths) if paths and len(paths) == len(names) else ["*"]


def _returns_ignore(fn: ast.AST) -> bool:
    """Whether a pytest_ignore_collect hook can answer "ignore": it returns anything but None
    or a false constant (`return True`, `return path.name == "test_x.py"`, `return any(…)`)."""
    for _, n in zip(range(2000), walk(fn)):
        if isinstance(n, ast.Return) and n.value is not None and not constant_falsy(n.value):
            return True
    return False


def _named(fn: ast.AST) -> list[str]:
    """The tests a hook's strings name (`"test_x"`, `"not test_x and not test_y"`, a node id),
    else every test: also when a name is matched as a part (`name.startswith("test_x")`,
    `"x" in name`), which may leave out tests the string does not spell."""
    partial: set[int] = set()
    for _, n in zip(range(2000), walk(fn)):
        if isinstance(n, ast.Call) and dotted(n).rsplit(".", 1)[-1] in _PARTIAL_MATCHES:
            partial |= {id(a) for a in n.args[:5]}
        elif isinstance(n, ast.Compare) and isinstance(n.ops[0], (ast.In, ast.NotIn)):
            if not isinstance(n.comparators[0], (ast.List, ast.Tuple, ast.Set)):
                partial.add(id(n.left))
    names: list[str] = []
    for _, n in zip(range(500), walk(fn)):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            text = n.value[:2000]
            found = [text] if "::" in text else re.findall(r"\btest\w{0,200}\b(?![/.])", text)
            if found and id(n) in partial:
                return ["*"]
            names += found
    return list(dict.fromkeys(names))[:20] or ["*"]


_PARTIAL_MATCHES = {"startswith", "endswith", "match", "search", "fullmatch", "fnmatch", "fnmatchcase", "find", "count"}


def _returns_empty(fn: ast.AST) -> bool:
    """`return []` / `return ()`: a collection hook answering that an object holds no tests."""
    for _, n in zip(range(2000), walk(fn)):
        if isinstance(n, ast.Return) and isinstance(n.value, (ast.List, ast.Tuple)) and not n.value.elts:
            return True
    return False


def _empty_parametrize(fn: ast.AST) -> bool:
    """`metafunc.parametrize("x", [])`: a test with an empty parameter set is skipped."""
    for _, n in zip(range(2000), walk(fn)):
        if isinstance(n, ast.Call) and dotted(n).endswith(".parametrize"):
            values = n.args[1] if len(n.args) > 1 else next((k.value for k in n.keywords if k.arg == "argvalues"), None)
            if isinstance(values, (ast.List, ast.Tuple)) and not values.elts:
                return True
    return False


# pytest options that select or leave out tests: `-k`, `-m`, `--deselect`, `--ignore`
_SELECTION = {"keyword", "markexpr", "deselect", "ignore", "ignore_glob"}


def _selection_set(fn: ast.AST) -> str:
    """The test-selecting option a conftest's code sets (`config.option.keyword = "not test_x"`,
    `config.option.deselect.append(…)`), else ""."""
    for _, n in zip(range(2000), walk(fn)):
        targets: list[ast.AST] = []
        if isinstance(n, ast.Assign):
            targets = list(n.targets[:10])
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "extend", "insert"):
            targets = [n.func.value]
        elif isinstance(n, ast.Call) and dotted(n) == "setattr" and len(n.args) == 3 and isinstance(n.args[1], ast.Constant):
            if n.args[1].value in _SELECTION and "option" in dotted(n.args[0]):
                return str(n.args[1].value)
        for t in targets:
            if isinstance(t, ast.Attribute) and t.attr in _SELECTION and dotted(t.value).endswith("option"):
                return t.attr
    return ""


def _drops_items(fn: ast.AST) -> bool:
    """`items[:] = …`, `items.remove(…)`, `items.clear()`, `del items[…]`, `pytest_deselected`."""
    for _, n in zip(range(2000), walk(fn)):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Subscript) and dotted(t.value) == "items" for t in n.targets):
            return True
        if isinstance(n, ast.Call) and dotted(n) in ("items.remove", "items.clear", "items.pop", "config.hook.pytest_deselected"):
            return True
        if isinstance(n, ast.Delete) and any(isinstance(t, ast.Subscript) and dotted(t.value) == "items" for t in n.targets):
            return True
    return False


def test_patch_path_signals(index: int, view: PatchView, adds: set[str]) -> list[Signal]:
    """A file the patch creates where the task's test patch adds one."""
    f = view.file
    if f.path not in adds or f.status not in ("added", "renamed", "binary"):
        return []
    names = [
        m.group(1) for _, _, r in view.rows("+") if (m := re.match(r"^\s*(?:async\s+)?def\s+(test\w{0,200})\s*\(", cut(r.text)))
    ]
    return [
        signal(
            "test_patch_path",
            index,
            f"adds {f.path}, a file the task's tests add",
            view.cite(),
            "a file at a path the task's test patch adds",
            (f.path, *(f"{f.path}::{n}" for n in names)),
        )
    ]
