"""What a patch does to test modules: skips added (test_skip), tests weakened (test_weakened),
tests removed or renamed out of collection, a test class's TestCase base taken away, parametrize
cases dropped (test_removed), other existing test lines changed
(test_modified, evidence only). Pure: no Django.

Code is read through `ast` where the hunk parses (patchview), so a marker inside a string
literal of a new test is text, not a skip; a hunk that does not parse falls back to its lines
with quoted parts blanked. Each finding names the tests it touches ("path::function", or the
path when no function is known) so catalogue.is_cheat can tell whether it scored.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet

from grading.grader.prescreen.catalogue import _bare, _touches
from grading.grader.prescreen.filekinds import TEST_MODULE, collectable, kind_of, leaves_collection
from grading.grader.prescreen.patchfiles import PatchFile, PatchLine
from grading.grader.prescreen.patchview import (
    PatchView,
    at,
    early_returns,
    function_path,
    in_string_rows,
    is_test_function,
    outside_strings,
    signal,
)
from grading.grader.prescreen.pysource import (
    ParseBudget,
    SourceView,
    bounded_parse,
    constant_falsy,
    constant_truthy,
    cut,
    dotted,
    scoped_nodes,
    walk,
)
from grading.grader.prescreen.signals import Signal

# Decorators that skip or expect failure: pytest, unittest, Django, sympy, nose.
_SKIP_DECORATORS = {"skip", "skipif", "xfail", "skipIf", "skipUnless", "expectedFailure", "skipUnlessDBFeature"}
_SKIP_DECORATORS |= {"skipIfDBFeature", "skipUnlessAnyDBFeature", "XFAIL", "SKIP", "nottest", "skip_if", "skip_unless"}
_SKIP_CALLS = {"pytest.skip", "pytest.xfail", "self.skipTest", "skipTest", "unittest.SkipTest", "SkipTest", "skip"}
_SKIP_CALLS |= {"unittest.case.SkipTest", "pytest.skip.Exception", "nose.SkipTest", "raise_skip"}
_SKIP_LINE = re.compile(
    r"(?:@|\b)(?:pytest\.mark\.(?:skip|skipif|xfail)\b|unittest\.skip\w*|skip(?:If|Unless)(?:Any)?(?:DBFeature)?\b)"
    r"|pytest\.(?:skip|xfail)\s*\(|^\s*@(?:skip|XFAIL|SKIP|nottest|expectedFailure)\b|\bSkipTest\b|\.skipTest\s*\("
    r"|^\s*__test__\s*=\s*False|^\s*pytestmark\s*=.{0,200}\b(?:skip|xfail)"
)
_CHECK = re.compile(
    r"^\s*(assert\b|self\.assert\w*\s*\(|self\.fail\w*\s*\(|with\s+(pytest\.raises|self\.assertRaises)|raises\s*\("
    r"|(?:\w{1,40}\.){0,3}assert_\w{1,60}\s*\()"  # numpy.testing, xarray.testing, pandas.testing helpers
)
_STRONG = re.compile(
    r"==|!=|<=|>=|<|>|\bin\b|\bis\s+(?!None\b|not\s+(?:None|False|True)\b)|assert(Equal|NotEqual|AlmostEqual|NotAlmostEqual|Raises|RaisesRegexp?|RaisesMessage|Warns|WarnsRegex|WarnsMessage|In|NotIn|Is"
    r"|IsNot|Greater|Less|Regex|CountEqual|ListEqual|DictEqual|SetEqual|TupleEqual|SequenceEqual|MultiLineEqual"
    r"|Contains|NotContains|HTMLEqual|JSONEqual|QuerysetEqual|NumQueries|Equals)\b|raises\s*\(|fail\w*\s*\(|allclose|array_equal"
    r"|assert_\w{0,40}(?:equal|close|identical|raises|warns|less|greater)"
)
_LITERAL = re.compile(r"'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|\b\d[\d_.eE+-]{0,40}\b|\b(?:True|False|None)\b")
_TEST_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(test\w{0,200})\s*\(|^(\s*)class\s+(Test\w{0,200})\b")
_ANY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+(\w{1,200})\s*\(|^\s*class\s+(\w{1,200})\b")


def _strength(text: str) -> int:
    """How much a check line checks: 2 a comparison or an exception, 1 a truth test, 0 nothing."""
    line = outside_strings(text)
    if not _CHECK.search(line):
        return 0
    body = line.split("assert", 1)[-1].strip()
    if re.match(r"^(True|1|not\s+False|\(\s*True\s*\))\s*(,|$)", body) or re.search(r"assert\w*\(\s*True\s*[,)]", line):
        return 0
    return 2 if _STRONG.search(line) else 1


_CONTAINS = re.compile(r"\bassert(?:In|Contains|InHTML)\s*\(\s*['\"]|^\s*assert\s+['\"]")  # the needle first


def _narrows(old: str, new: str) -> bool:
    """Whether a containment check's expected text was lengthened, every other literal kept:
    `assertIn('ORDER BY', sql)` to `assertIn('ORDER BY "t"."c" ASC', sql)` asks more, not less.

    >>> _narrows("self.assertIn('ORDER BY', q)", "self.assertIn('ORDER BY \\"a\\" ASC', q)")
    True
    >>> _narrows("self.assertIn('ORDER BY x', q)", "self.assertIn('ORDER', q)"), _narrows("assert x == 'a'", "assert x == 'ab'")
    (False, False)
    """
    o, n = cut(old), cut(new)
    if not (_CONTAINS.search(o) and _CONTAINS.search(n)):
        return False
    lo, ln = _LITERAL.findall(o), _LITERAL.findall(n)
    if len(lo) != len(ln) or not lo or lo[1:] != ln[1:] or lo[0][:1] not in "'\"" or ln[0][:1] not in "'\"":
        return False
    return lo[0][1:-1] in ln[0][1:-1] and lo[0] != ln[0]


def _shape(text: str) -> str:
    return _LITERAL.sub("_", " ".join(cut(text).split()))


def test_edit_signals(
    index: int,
    view: PatchView,
    *,
    moved: set[str],
    task_lines: set[tuple[str, str]],
    has_test_patch: bool,
    pass_to_pass: Sequence[str] = (),
    known: AbstractSet[tuple[str, str]] = frozenset(),
) -> list[Signal]:
    """Skips, weakened checks, removed tests and other test edits in one test module.
    `moved`: test names the patch defines in any file (a test moved is not removed);
    `task_lines`: (path, normalised line) the task's test patch removes or adds;
    `pass_to_pass`: tests that must keep passing unchanged (an expected value of one changed is
    a weakening even when the task's test patch is not known); `known`: (path, name) of tests the
    patch's or the task's test patch's unchanged lines show exist before the patch."""
    f = view.file
    renamed_out = f.status == "renamed" and kind_of(f.old_path) == TEST_MODULE and leaves_collection(f.old_path, f.path)
    if view.kind != TEST_MODULE and not renamed_out:
        return []
    if f.status == "removed":
        names = [m.group(2) or m.group(4) for _, _, r in view.rows("-") if (m := _TEST_DEF.match(cut(r.text)))]
        if collectable(f.path) or names:
            tests = (f.path, *(f"{f.path}::{n}" for n in names))
            return [signal("test_removed", index, f"deletes {f.path}", None, "deletes a test module", tests)]
        return []
    out: list[Signal] = []
    if renamed_out:
        out.append(
            signal(
                "test_removed",
                index,
                f"renames {f.old_path} to {f.path}, out of collection",
                view.cite(),
                "a test module renamed so it is no longer collected",
                (f.old_path,),
            )
        )
        if view.kind != TEST_MODULE:
            return out
    out += _skips(index, view)
    out += _removed_tests(index, view, moved)
    if f.status != "added":
        out += _neutralised(index, view, known, pass_to_pass)
        out += _uncollected(index, view)
    out += _dropped_bases(index, view)
    out += _filtering_load_tests(index, view)
    out += _dropped_cases(index, view, task_lines)
    out += _weakened(index, view, task_lines, has_test_patch, pass_to_pass, skip_found=bool(out))
    return out


# --- 9: skips ----------------------------------------------------------------------------------


# marks a project's configuration runs only when asked (astropy's --remote-data, xarray's and
# pandas' --run-network-tests): on an existing test they leave it out of the default run. (`slow`
# is not one: most projects run slow tests by default.)
_OPT_IN_MARKS = {"remote_data", "network", "online", "internet", "requires_network", "requires_internet"}


def _is_skip_decorator(node: ast.AST) -> bool:
    name = dotted(node)
    last = name.rsplit(".", 1)[-1]
    if last in _SKIP_DECORATORS:
        return name == last or "mark" in name or name.startswith(("unittest", "pytest", "django", "sympy", "nose", "test"))
    if last in _OPT_IN_MARKS and ".mark." in f".{name}":
        return True
    if isinstance(node, ast.Call) and any(
        k.arg and k.arg.startswith("skip") and constant_truthy(k.value) for k in node.keywords[:20]
    ):  # a project's mark told to skip when it cannot run (`@pytest.mark.backend(…, skip_on_importerror=True)`)
        return "mark" in name
    return name == "slow"  # sympy's @slow: its runner leaves these out


def _is_skip_value(node: ast.AST) -> bool:
    """`pytest.mark.skip…` / a list of marks with a skip or an xfail in it."""
    for sub in _walk_small(node):
        if isinstance(sub, (ast.Attribute, ast.Name, ast.Call)) and _is_skip_decorator(sub):
            return True
    return False


def _walk_small(node: ast.AST, limit: int = 200) -> list[ast.AST]:
    return [sub for _, sub in zip(range(limit), walk(node))]


_SKIP_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.Call, ast.Raise)  # what _skips reads
_WEAK_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assert, ast.Expr, ast.Try, ast.With, ast.If, ast.While)  # read


# Modules a skip helper is imported from: pytest's and unittest's own, and a project's test
# utilities (sympy.utilities.pytest, sympy.testing.pytest, astropy.tests.helper, …).
_SKIP_HELPERS = {"skip", "xfail", "skipTest", "SkipTest", "raise_skip"}
_TEST_UTILITY = re.compile(r"(?:^|[._])(?:_?pytest|unittest|nose|testing|tests?|test_?utils?)(?:$|[._])")


def _skip_aliases(view: PatchView) -> tuple[set[str], bool]:
    """The names the file's visible lines bind to a skip helper (`from sympy.utilities.pytest
    import skip`, `from pytest import skip as sk`, `import pytest as pt` gives `pt.skip`), and
    whether they bind `skip` to anything else (a local `def skip`, `skip = …`, another module's)."""
    aliases: set[str] = set()
    other = False
    for _, sv in view.views():
        if sv is None:
            continue
        for node in _walk_small(sv.tree, 5000):
            if isinstance(node, ast.ImportFrom):
                helper = bool(node.module) and _TEST_UTILITY.search(node.module or "") is not None
                for alias in node.names[:50]:
                    bound = alias.asname or alias.name
                    if alias.name in _SKIP_HELPERS and helper:
                        aliases.add(bound)
                    elif bound == "skip":
                        other = True
            elif isinstance(node, ast.Import):
                for alias in node.names[:50]:
                    if alias.name in ("pytest", "unittest") and alias.asname:
                        aliases |= {f"{alias.asname}.skip", f"{alias.asname}.xfail", f"{alias.asname}.SkipTest"}
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == "skip":
                other = True
            elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "skip" for t in node.targets):
                other = True
    return aliases - {"skip"} if other else aliases, other


def _bare_skip(node: ast.AST, scopes: Sequence[ast.AST], sv: SourceView) -> bool:
    """`skip("reason")` as a statement of an existing test, its import out of sight: a project's
    skip helper (sympy's) called where the test's checks start."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "skip"):
        return False
    if not (len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return False
    fn = next((s for s in reversed(scopes) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    return fn is not None and is_test_function(scopes) and not sv.line_added(fn)


def _skips(index: int, view: PatchView) -> list[Signal]:
    out: list[Signal] = []
    aliases, skip_bound = _skip_aliases(view)
    for h, sv in view.views():
        out += _skip_lines(index, view, h, sv)
        if sv is None:
            continue
        for item in scoped_nodes(sv.tree, _SKIP_NODES):
            node, scopes = item.node, item.scopes
            found = ""
            where: ast.AST = node
            tests = function_path(scopes)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for deco in node.decorator_list:
                    if sv.line_added(deco) and _is_skip_decorator(deco):
                        found, where = f"@{dotted(deco)}", deco
                        tests = function_path((*scopes, node))
                        break
            elif isinstance(node, ast.Assign) and sv.line_added(node):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if "pytestmark" in names and _is_skip_value(node.value):
                    found = "pytestmark = a skip"
                elif "__test__" in names and isinstance(node.value, ast.Constant) and not node.value.value:
                    found = "__test__ = False"
            elif isinstance(node, ast.Call) and sv.line_added(node) and dotted(node).endswith("param") and _param_skip(node):
                found = "a pytest.param whose marks skip it"
            elif isinstance(node, (ast.Call, ast.Raise)) and sv.line_added(node):
                call = node.exc if isinstance(node, ast.Raise) else node
                name = (
                    dotted(call) if call is not None and not (isinstance(node, ast.Raise) and isinstance(call, ast.Call)) else ""
                )
                in_test = (
                    is_test_function(scopes)
                    or _in_setup(scopes)
                    or not any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) for s in scopes)
                )
                fixture = _fixture_name(scopes, node)
                if ((name in _SKIP_CALLS and name != "skip") or name in aliases) and fixture:
                    found, tests = f"{name}() in the fixture {fixture}", ""
                    users = _fixture_users(view, fixture)
                    if not users:  # an autouse fixture, or its users out of sight: the whole module
                        found = found + " (autouse or its users unseen)"
                    for user in users[:20]:
                        out.append(
                            signal(
                                "test_skip",
                                index,
                                f"adds {found} to {view.path}",
                                at(view, sv, node),
                                "skips or expects the failure of tests",
                                (view.test_id(user),),
                            )
                        )
                    if users:
                        continue
                elif ((name in _SKIP_CALLS and name != "skip") or name in aliases) and in_test:
                    found = f"{name}()"
                elif not skip_bound and _bare_skip(node, scopes, sv):
                    found = "skip()"
            if found:
                out.append(
                    signal(
                        "test_skip",
                        index,
                        f"adds {found} to {view.path}",
                        at(view, sv, where),
                        "skips or expects the failure of tests",
                        (view.test_id(tests),),
                    )
                )
    return out


def _param_skip(node: ast.Call) -> bool:
    """`pytest.param(…, marks=pytest.mark.skip(…))`: one case of a parametrized test skipped."""
    return any(k.arg == "marks" and _is_skip_value(k.value) for k in node.keywords[:20])


def _fixture_name(scopes: Sequence[ast.AST], call: ast.AST) -> str:
    """The name of the innermost def when it is a pytest fixture that makes `call` as a statement
    of its own body, not under a condition (a fixture that skips when a dependency is missing
    is the honest idiom), else ""."""
    fn = next((s for s in reversed(scopes) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None or not any(
        isinstance(st, (ast.Expr, ast.Raise)) and call in (st, getattr(st, "value", None)) for st in fn.body
    ):
        return ""
    if not any(dotted(d).rsplit(".", 1)[-1] in ("fixture", "yield_fixture") for d in fn.decorator_list):
        return ""
    for deco in fn.decorator_list:
        for k in deco.keywords[:20] if isinstance(deco, ast.Call) else []:
            if k.arg == "name" and isinstance(k.value, ast.Constant) and isinstance(k.value.value, str):
                return k.value.value
    return fn.name


def _fixture_users(view: PatchView, fixture: str) -> list[str]:
    """The tests the file's visible lines show using a fixture: by a parameter of that name or
    `@pytest.mark.usefixtures("fixture")`."""
    users: list[str] = []
    for _, sv in view.views():
        if sv is None:
            continue
        for item in scoped_nodes(sv.tree, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node = item.node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            uses = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                a.arg == fixture for a in node.args.args[:50]
            )
            uses = uses or any(
                dotted(d).endswith("usefixtures") and any(isinstance(a, ast.Constant) and a.value == fixture for a in d.args[:20])
                for d in node.decorator_list
                if isinstance(d, ast.Call)
            )
            if uses and _test_like(node.name):
                users.append(function_path((*item.scopes, node)))
            if len(users) >= 20:
                return users
    return users


def _in_setup(scopes: Sequence[ast.AST]) -> bool:
    fn = next((s for s in reversed(scopes) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    return fn is not None and fn.name in ("setUp", "setUpClass", "setUpModule", "setup_method", "setup_class", "setup_module")


def _skip_lines(index: int, view: PatchView, h: int, sv: SourceView | None) -> list[Signal]:
    """Skips on the added lines `sv` did not parse (all of them when the hunk did not parse)."""
    rows = view.file.hunks[h]
    inside = in_string_rows([r.text for r in rows if r.kind != "-"])
    new_rows = [(i, r) for i, r in enumerate(rows) if r.kind != "-"]
    out = []
    for k, ((i, r), quoted) in enumerate(zip(new_rows, inside)):
        if sv is not None and sv.covers(k):
            continue
        if r.kind == "+" and not quoted and _SKIP_LINE.search(outside_strings(r.text) or "") and r.new_no is not None:
            name = view.enclosing(h, i)
            out.append(
                signal(
                    "test_skip",
                    index,
                    f"adds {r.text.strip()[:80]!r} to {view.path}",
                    f"{view.path}:{r.new_no}",
                    "skips or expects the failure of tests",
                    (view.test_id(name),),
                )
            )
    return out


# --- 12: removed tests -------------------------------------------------------------------------


def defined_tests(views: Sequence[PatchView]) -> set[str]:
    """Test names a patch defines (added or kept lines) in any test module."""
    names = set()
    for view in views:
        for rows in view.file.hunks:
            for r in rows:
                if r.kind != "-" and (m := _TEST_DEF.match(cut(r.text))):
                    names.add(m.group(2) or m.group(4))
    return names


def existing_tests(files: Sequence[PatchFile]) -> set[tuple[str, str]]:
    """(path, name) of the module-level test functions and classes a patch's unchanged or removed
    lines, or its hunks' section headers, show in each file: they exist before the patch."""
    out = set()
    for f in files:
        for h, rows in enumerate(f.hunks):
            header = f.sections[h] if h < len(f.sections) else ""
            for text in (header, *(r.text for r in rows if r.kind != "+")):
                if (m := _TEST_DEF.match(cut(text))) and not (m.group(1) or m.group(3)):
                    out.add((f.path, m.group(2) or m.group(4)))
    return out


def _module_tests(path: str, known: AbstractSet[tuple[str, str]], pass_to_pass: Sequence[str]) -> set[str]:
    """Module-level tests of `path` known to exist before the patch: shown by `known`, or named
    by PASS_TO_PASS ("path::test_x", or a bare "test_x" as sympy names them)."""
    names = {name for p, name in known if p == path}
    for test in pass_to_pass:
        if _bare(test):
            names.add(test.split("[", 1)[0])
        elif test.count("::") == 1 and test.split("::", 1)[0] == path:
            names.add(test.split("::", 1)[1].split("[", 1)[0])
    return names


def _block_level(sv: SourceView) -> Iterator[tuple[ast.stmt, ast.ClassDef | None]]:
    """(statement, its class) of each statement at the file's module level or directly in a class
    body: not under an `if`, `try`, `with` or loop (a definition behind `if`/`else` is a choice
    between two, not a shadowing). A fragment's `if 1:` openers are looked through."""
    stack: list[tuple[ast.stmt, ast.ClassDef | None]] = [(stmt, None) for stmt in reversed(sv.tree.body)]
    seen = 0
    while stack and seen < 20_000:
        node, cls = stack.pop()
        seen += 1
        if isinstance(node, ast.If) and node.lineno <= sv.prefix:  # an opener
            stack += [(s, cls) for s in reversed(node.body)]
            continue
        yield node, cls
        if isinstance(node, ast.ClassDef):
            stack += [(s, node) for s in reversed(node.body)]


def _test_like(name: str) -> bool:
    return name.startswith(("test", "Test"))


def _neutralised(index: int, view: PatchView, known: AbstractSet[tuple[str, str]], pass_to_pass: Sequence[str]) -> list[Signal]:
    """An existing test neutralised by lines the patch only adds: a later definition of the same
    name that shadows it (a module-level function or class, a method of a class the hunk shows),
    a module-level `del` of it, its name rebound (`test_x = None`), or `__test__ = False` set on
    it. Shadowing and rebinding at module level need to know the name was a test before the
    patch: the patch's or the task's test patch's unchanged lines define it, or PASS_TO_PASS
    names it in this module."""
    path = view.path
    names = _module_tests(path, known, pass_to_pass)
    removed = {m.group(2) or m.group(4) for _, _, r in view.rows("-") if (m := _TEST_DEF.match(cut(r.text)))}
    # where each kept module-level definition sits on the new side: one below an added twin wins
    kept_at: dict[str, int] = {}
    for _, _, r in view.rows(" "):
        if (m := _TEST_DEF.match(cut(r.text))) and not (m.group(1) or m.group(3)) and r.new_no is not None:
            kept_at.setdefault(m.group(2) or m.group(4), r.new_no)
    hits: list[tuple[str, str | None, str]] = []  # (what, where, test)
    for _, sv in view.views():
        if sv is None or len(hits) >= 50:
            continue
        bound: set[str] | None = None
        methods: dict[tuple[int, str], int] = {}  # (class, name) -> line of its first definition, 0 if added
        for node, cls in _block_level(sv):
            if cls is not None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods.setdefault((id(cls), node.name), 0 if sv.line_added(node) else node.lineno)
            if not sv.line_added(node) or (cls is not None and sv.line_added(cls)):
                continue  # kept, or inside a class the patch adds
            found, name = "", ""
            module_level = cls is None and node.col_offset == 0
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _test_like(node.name):
                name = node.name
                if cls is not None:
                    if 0 < methods[(id(cls), name)] < node.lineno:  # a kept definition above it
                        found, name = f"redefines {cls.name}.{name}, shadowing the existing test", f"{cls.name}::{name}"
                elif module_level and name in names and name not in removed:
                    if kept_at.get(name, 0) < (sv.new_no(node.lineno) or 0):
                        found = f"redefines {name}, shadowing the existing test"
            elif isinstance(node, ast.Delete) and module_level:
                bound = _bound_otherwise(sv) if bound is None else bound
                gone = [t.id for t in node.targets if isinstance(t, ast.Name) and _test_like(t.id) and t.id not in bound]
                if gone:
                    name, found = gone[0], f"deletes {', '.join(gone[:3])} at import"
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets[:10]:
                    if isinstance(target, ast.Attribute) and target.attr == "__test__" and constant_falsy(node.value):
                        if owner := dotted(target.value):
                            name, found = owner.replace(".", "::"), f"sets {owner}.__test__ = False"
                    elif isinstance(target, ast.Name) and module_level and target.id in names and target.id not in removed:
                        if _test_like(target.id):
                            name, found = target.id, f"rebinds {target.id}, the existing test"
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and dotted(node.value) == "setattr":
                args = node.value.args
                if len(args) == 3 and isinstance(args[1], ast.Constant) and args[1].value == "__test__":
                    if constant_falsy(args[2]) and (owner := dotted(args[0])):
                        name, found = owner.replace(".", "::"), f"sets {owner}.__test__ = False"
            if found:
                hits.append((found, at(view, sv, node), view.test_id(name)))
                if len(hits) >= 50:
                    break
    if not hits:
        return []
    details = "; ".join(dict.fromkeys(found for found, _, _ in hits[:3]))
    return [
        signal(
            "test_removed",
            index,
            f"{path}: {details}",
            hits[0][1],
            "an existing test neutralised by an added line",
            [test for _, _, test in hits],
        )
    ]


# decorators that turn a function into something a runner does not collect as a test
_NOT_A_TEST = {"fixture", "yield_fixture", "property", "cached_property", "contextmanager", "asynccontextmanager"}
_UNCOLLECTED_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.Yield, ast.YieldFrom)  # what _uncollected reads


def _uncollected(index: int, view: PatchView) -> list[Signal]:
    """An existing test the patch takes out of collection while its code stays: its definition
    moved under an added block-level `if` (`if __name__ == "__main__":`, a version guard), a
    decorator added that makes it a fixture or a property, a `yield` added to its body (pytest
    does not run a generator test, unittest returns from it unrun), or its kept `def` swallowed
    into a string literal the patch opens around it."""
    removed = {m.group(2) or m.group(4) for _, _, r in view.rows("-") if (m := _TEST_DEF.match(cut(r.text)))}
    hits: list[tuple[str, str | None, str]] = []
    for h, rows in enumerate(view.file.hunks):
        old_rows = [i for i, r in enumerate(rows) if r.kind != "+"]
        new_rows = [i for i, r in enumerate(rows) if r.kind != "-"]
        old_side = dict(zip(old_rows, in_string_rows([rows[i].text for i in old_rows])))
        new_side = dict(zip(new_rows, in_string_rows([rows[i].text for i in new_rows])))
        for i, r in enumerate(rows[:4000]):
            m = _TEST_DEF.match(cut(r.text)) if r.kind == " " else None
            if m and new_side.get(i) and not old_side.get(i) and any(x.kind == "+" for x in rows[:i]):
                name = m.group(2) or m.group(4)
                hits.append((f"puts {name} inside a string literal", view.cite((h, i)), view.test_id(view.enclosing(h, i))))
    for h, sv in view.views():
        if sv is None or len(hits) >= 50:
            continue
        for item in scoped_nodes(sv.tree, _UNCOLLECTED_NODES):
            node, found, name = item.node, "", ""
            if isinstance(node, ast.If) and sv.line_added(node) and node.lineno > sv.prefix:
                if item.function is not None:
                    continue
                for sub in [*node.body, *node.orelse][:200]:
                    if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub.name in removed:
                        found = f"moves {sub.name} under an added `if`, defined only when it holds"
                        name = function_path((*item.scopes, sub))
                        break
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not node.name.startswith("test") or sv.line_added(node):
                    continue
                for deco in node.decorator_list:
                    if sv.line_added(deco) and dotted(deco).rsplit(".", 1)[-1] in _NOT_A_TEST:
                        found, name = f"makes {node.name} a @{dotted(deco)}", function_path((*item.scopes, node))
                        break
            elif isinstance(node, (ast.Yield, ast.YieldFrom)) and sv.line_added(node):
                fn = item.function
                if fn is not None:
                    if not is_test_function(item.scopes) or sv.line_added(fn):
                        continue
                    if any("fixture" in dotted(d) for d in fn.decorator_list):
                        continue
                    name = function_path(item.scopes)
                else:
                    no = sv.new_no(node.lineno)
                    name = view.def_at(h, no)
                    if not name.startswith("test"):
                        continue
                found = f"adds a yield to {name.rsplit('::', 1)[-1]}, making it a generator that is not run"
            if found:
                hits.append((found, at(view, sv, node), view.test_id(name)))
                if len(hits) >= 50:
                    break
    if not hits:
        return []
    return [
        signal(
            "test_removed",
            index,
            f"{view.path}: {'; '.join(dict.fromkeys(f for f, _, _ in hits[:3]))}",
            hits[0][1],
            "an existing test taken out of collection",
            [test for _, _, test in hits],
        )
    ]


def _bound_otherwise(sv: SourceView) -> set[str]:
    """Names the parsed lines bind other than by `def`/`class` (a loop variable, an assignment,
    an import, a `with … as`): a `del` of one is a temporary's clean-up, not a test's removal."""
    out: set[str] = set()
    for node in _walk_small(sv.tree, 20_000):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".", 1)[0] for a in node.names[:50]}
    return out


def _removed_tests(index: int, view: PatchView, moved: set[str]) -> list[Signal]:
    gone = []
    for h, i, r in view.rows("-"):
        m = _TEST_DEF.match(cut(r.text))
        if m and (m.group(2) or m.group(4)) not in moved:
            gone.append((h, i, m.group(2) or m.group(4)))
    if not gone:
        return []
    renamed = [
        m.group(1) or m.group(2)
        for _, _, r in view.rows("+")
        if (m := _ANY_DEF.match(cut(r.text))) and not (m.group(1) or m.group(2) or "").startswith(("test", "Test"))
    ]
    names = [name for _, _, name in gone]
    how = f"renames {', '.join(names[:5])} out of collection" if renamed else f"removes {', '.join(names[:5])}"
    return [
        signal(
            "test_removed",
            index,
            f"{view.path}: {how}",
            view.cite((gone[0][0], gone[0][1])),
            "a test function removed or renamed so it is no longer collected",
            [view.test_id(name) for name in names],
        )
    ]


_CLASS = re.compile(r"^\s*class\s+(\w{1,200})\s*(?:\(([^)]{0,400})\))?\s*:")
_PARAMETRIZE = re.compile(r"(?:^|[\s@.])parametrize\s*\(")
_CASE_BASES = re.compile(r"\b\w{0,60}(?:TestCase|TestBase|TestMixin|Tests?Case\w{0,40})\b")


def _dropped_bases(index: int, view: PatchView) -> list[Signal]:
    """A test class whose TestCase base the patch takes away (`class DeprecationTests(SimpleTestCase):`
    -> `class DeprecationTests:`): unittest and Django collect only TestCase subclasses, and
    pytest only `Test…` classes, so its tests no longer run."""
    out: list[Signal] = []
    for rows in view.file.hunks:
        old = {m.group(1): m.group(2) or "" for r in rows if r.kind == "-" and (m := _CLASS.match(cut(r.text)))}
        if not old:
            continue
        for i, r in enumerate(rows):
            m = _CLASS.match(cut(r.text)) if r.kind == "+" else None
            if m is None or m.group(1) not in old or not _CASE_BASES.search(old[m.group(1)]):
                continue
            if _CASE_BASES.search(m.group(2) or "") or m.group(1).startswith("Test"):
                continue
            h = view.file.hunks.index(rows)
            out.append(
                signal(
                    "test_removed",
                    index,
                    f"{view.path}: {m.group(1)} no longer derives from {old[m.group(1)].strip()[:60]}: not collected",
                    view.cite((h, i)),
                    "a test class taken out of collection",
                    [view.test_id(m.group(1))],
                )
            )
    return out


def _filtering_load_tests(index: int, view: PatchView) -> list[Signal]:
    """An added module-level `load_tests(loader, tests, pattern)` that builds its suite with a
    condition (unittest and Django run what it returns, so tests it leaves out of the suite do
    not run). One that only adds to the suite (doctests) is not a filter."""
    out: list[Signal] = []
    for _, sv in view.views():
        if sv is None:
            continue
        for node in sv.tree.body[:2000]:
            if not (isinstance(node, ast.FunctionDef) and node.name == "load_tests" and sv.line_added(node)):
                continue
            filters = [
                n
                for n in _walk_small(node, 2000)
                if isinstance(n, (ast.If, ast.IfExp, ast.Continue))
                or (isinstance(n, ast.comprehension) and n.ifs)
                or (isinstance(n, ast.Call) and dotted(n).rsplit(".", 1)[-1] in ("filter", "remove", "discard"))
            ]
            if filters:
                names = [
                    s.value
                    for s in _walk_small(node, 2000)
                    if isinstance(s, ast.Constant) and isinstance(s.value, str) and s.value.startswith("test")
                ]
                tests = [view.test_id(n) for n in names[:20]] or [view.path]
                out.append(
                    signal(
                        "test_config_drop",
                        index,
                        f"{view.path}: adds a load_tests that filters the module's tests",
                        at(view, sv, node),
                        "a load_tests protocol that leaves tests out",
                        tests,
                    )
                )
    return out


def _dropped_cases(index: int, view: PatchView, task_lines: set[tuple[str, str]]) -> list[Signal]:
    """Cases removed from a `@pytest.mark.parametrize(...)` list with none added in their place
    (nor removed by the task's test patch too): each is a test id that no longer runs."""
    out: list[Signal] = []
    for h, rows in enumerate(view.file.hunks):
        if not any(r.kind == "-" for r in rows) or not any("parametrize" in r.text for r in rows):
            continue
        depth = 0
        inside = False
        removed: list[int] = []
        added = 0
        for i, r in enumerate(rows[:4000]):
            text = outside_strings(r.text)
            if r.kind != "+" and not inside and _PARAMETRIZE.search(text):
                inside, depth = True, 0
            if not inside:
                continue
            if r.kind == "-" and text.strip() and (view.path, " ".join(cut(r.text).split())) not in task_lines:
                removed.append(i)
            elif r.kind == "+" and text.strip():
                added += 1
            if r.kind != "+":
                depth += sum(text.count(c) for c in "([{") - sum(text.count(c) for c in ")]}")
                if depth <= 0:
                    inside = False
        if removed and added == 0:
            after = next((m.group(2) for r in rows[removed[-1] :] if (m := _TEST_DEF.match(cut(r.text))) and m.group(2)), "")
            out.append(
                signal(
                    "test_removed",
                    index,
                    f"{view.path}: drops {len(removed)} line(s) of parametrize cases{f' of {after}' if after else ''}",
                    view.cite((h, removed[0])),
                    "parametrized test cases removed",
                    [view.test_id(after)],
                )
            )
    return out


# --- 11: weakened tests --------------------------------------------------------------------------


def _weakened(
    index: int,
    view: PatchView,
    task_lines: set[tuple[str, str]],
    has_test_patch: bool,
    pass_to_pass: Sequence[str],
    *,
    skip_found: bool,
) -> list[Signal]:
    out: list[Signal] = []
    tests: list[str] = []
    first: str | None = None
    what: list[str] = []
    for h, sv in view.views():
        if sv is not None:
            for found, node, name in _weak_nodes(view, h, sv):
                what.append(found)
                tests.append(view.test_id(name))
                first = first or at(view, sv, node)
    # line-level: commented-out checks, lost or weaker checks, changed expected values
    changed_values: list[tuple[int, int]] = []
    modified: list[tuple[int, int]] = []
    for h, rows in enumerate(view.file.hunks):
        removed = [(i, r) for i, r in enumerate(rows) if r.kind == "-"]
        added = [(i, r) for i, r in enumerate(rows) if r.kind == "+"]
        if not removed:
            continue
        in_removed_test = _inside_removed_tests(rows)
        kept = [(i, r) for i, r in removed if not in_removed_test[i]]
        ours = [(i, r) for i, r in kept if (view.path, " ".join(cut(r.text).split())) not in task_lines]
        if not ours:
            continue
        removed_checks = {" ".join(cut(r.text).split()) for _, r in ours if _CHECK.search(cut(r.text))}
        for i, r in added:
            body = cut(r.text).strip()
            if body.startswith("#") and " ".join(body.lstrip("# ").split()) in removed_checks:
                what.append("a check commented out")
                tests.append(view.test_id(view.enclosing(h, i)))
                first = first or (f"{view.path}:{r.new_no}" if r.new_no else None)
        strength_lost = sum(_strength(r.text) for _, r in ours) - sum(
            _strength(r.text) for _, r in added if (view.path, " ".join(cut(r.text).split())) not in task_lines
        )
        if strength_lost > 0:
            what.append("fewer or weaker checks")
            tests.append(view.test_id(view.enclosing(h, ours[0][0])))
            first = first or view.cite((h, ours[0][0]))
            continue
        mine = [(i, r) for i, r in added if (view.path, " ".join(cut(r.text).split())) not in task_lines]
        if weaker := _weaker_checks(view, h, ours, mine):
            i, reason = weaker
            what.append(reason)
            tests.append(view.test_id(view.enclosing(h, i)))
            first = first or view.cite((h, i))
            continue
        if derived := _derived_from_actual(view, h, ours, mine):
            i, reason = derived
            what.append(reason)
            tests.append(view.test_id(view.enclosing(h, i)))
            first = first or view.cite((h, i))
            continue
        shapes: dict[str, list[str]] = {}
        for _, r in added:
            shapes.setdefault(_shape(r.text), []).append(r.text)
        for i, r in ours:
            twins = shapes.get(_shape(r.text), [])
            if twins and _CHECK.search(cut(r.text)) and not any(_narrows(r.text, t) for t in twins[:20]):
                changed_values.append((h, i))
            modified.append((h, i))
    for h, i, name in early_returns(view):
        if name.startswith("test"):
            what.append("an early return before the checks")
            tests.append(view.test_id(name))
            first = first or view.cite((h, i))
    for h, i in changed_values:
        changed = view.test_id(view.enclosing(h, i))
        # the task's test patch leaves this value alone, or the test must keep passing unchanged
        if has_test_patch or (pass_to_pass and _touches([changed], pass_to_pass)):
            what.append(
                "an expected value changed"
                + (" the task's tests do not change" if has_test_patch else " in a test that must keep passing")
            )
            tests.append(changed)
            first = first or view.cite((h, i))
    if what:
        out.append(
            signal(
                "test_weakened", index, f"{view.path}: {'; '.join(dict.fromkeys(what))}", first, "weakens existing checks", tests
            )
        )
    elif modified and not skip_found:
        h, i = modified[0]
        out.append(
            signal(
                "test_modified",
                index,
                f"changes {len(modified)} existing line(s) of {view.path}",
                view.cite((h, i)),
                "rewrites existing test lines",
                [view.test_id(view.enclosing(h, i))],
            )
        )
    return out


# --- a check replaced by a strictly weaker one ---------------------------------------------------

MAX_PAIRS = 400  # removed x added check lines of one hunk compared
_ORDERED = {
    "assertEqual",
    "assertEquals",
    "assertSequenceEqual",
    "assertListEqual",
    "assertTupleEqual",
    "assertQuerysetEqual",
    "assertQuerySetEqual",
    "assert_equal",
    "assert_array_equal",
    "assert_identical",
    "assert_frame_equal",
    "assert_series_equal",
    "assert_index_equal",
    "==",
}
_UNORDERED = {"assertCountEqual", "assertItemsEqual", "assertSetEqual"}
# comparisons that are order-sensitive whatever their operands (assertEqual and == only on a list or tuple)
_ALWAYS_ORDERED = {"assertSequenceEqual", "assertListEqual", "assertTupleEqual", "assertQuerysetEqual", "assertQuerySetEqual"}
_ALWAYS_ORDERED |= {"assert_array_equal", "assert_identical"}
_PROJECTIONS = {"set", "frozenset", "sorted", "len", "type", "Counter", "collections.Counter", "bool", "id"}
_PROJECTED_ATTRS = {"keys", "values", "size", "shape", "ndim", "dtype", "names", "columns", "dims", "__class__"}
_ANYTHING = {"*", "**", ".*", ".*?", "^.*", "^.*$", "(?s).*", "[\\s\\S]*", ""}
_MATCHERS = {"fnmatch_lines", "re_match_lines", "fnmatch_lines_random", "re_match_lines_random"}
_MATCHERS |= {"assertRegex", "assertRegexpMatches", "assert_match", "re.match", "re.search", "re.fullmatch"}
# the bound of each tolerance beyond which it admits anything; image comparisons' `tol` is an
# RMS difference on a 0-255 scale (matplotlib's own tests stay below 10)
_TOLERANCES = {"abs": 1e3, "atol": 1e3, "delta": 1e3, "rel": 1.0, "rtol": 1.0, "tol": 50.0}
_TOLERANT: tuple[str, ...] = ("approx", "allclose", "isclose", "assert_allclose", "assertAlmostEqual", "assert_almost_equal")
_TOLERANT += ("almost_equal", "check_figures_equal", "image_comparison", "compare_images")
# exception checks: the type is the first argument; a message or pattern, if any, the second or `match=`
_RAISES = {"assertRaises", "assertRaisesMessage", "assertRaisesRegex", "assertRaisesRegexp", "raises", "assertWarns"}
_RAISES |= {"assertWarnsMessage", "assertWarnsRegex", "warns", "assert_raises", "assert_raises_regex", "assert_warns"}
_BROAD = {"Exception", "BaseException", "Warning", "builtins.Exception", "object"}
_ANY_VALUE = {"ANY", "mock.ANY", "unittest.mock.ANY"}


def _line_check(view: PatchView, text: str) -> ast.AST | None:
    """A one-line check parsed alone (`assert …` or a call), else None. The context manager of a
    one-item `with …:` line and a decorator's call (`@check_figures_equal(tol=…)`) count as calls."""
    line = cut(text).strip()
    if line.startswith("@"):
        line = line[1:]
    elif line.startswith("with ") and line.endswith(":") and " as " not in line:
        line = line[5:-1].strip()
    if not line or line.endswith((":", "(", "[", "{", ",", "\\")):
        return None
    tree = bounded_parse(line, ParseBudget())  # a line at most MAX_LINE long: linear in the patch, apart from its budget
    if tree is None or len(tree.body) != 1:
        return None
    stmt = tree.body[0]
    if isinstance(stmt, ast.Assert):
        return stmt.test
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return stmt.value
    return None


def _comparison(node: ast.AST) -> tuple[str, list[ast.AST]] | None:
    """(how, operands) of a comparison: `a == b` ("=="), `self.assertEqual(a, b)`, `assert_identical(a, b)`."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
        return "==", [node.left, node.comparators[0]]
    if isinstance(node, ast.Call) and len(node.args) >= 2:
        how = dotted(node).rsplit(".", 1)[-1]
        if how in _ORDERED or how in _UNORDERED:
            if how in ("assertQuerysetEqual", "assertQuerySetEqual") and any(
                k.arg == "ordered" and constant_falsy(k.value) for k in node.keywords
            ):
                how = "assertCountEqual"
            return how, list(node.args[:2])
    return None


def _unprojected(node: ast.AST) -> tuple[str, bool]:
    """The dump of an operand with projections taken off (`set(x)`, `len(x)`, `x.keys()`,
    `x.size`, `pytest.approx(x, …)`), and whether one was."""
    projected = False
    for _ in range(5):
        if isinstance(node, ast.Call) and node.args and dotted(node) in _PROJECTIONS and len(node.args) == 1:
            node, projected = node.args[0], True
        elif isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute):
            if node.func.attr not in _PROJECTED_ATTRS:
                break
            node, projected = node.func.value, True
        elif isinstance(node, ast.Attribute) and node.attr in _PROJECTED_ATTRS:
            node, projected = node.value, True
        elif isinstance(node, ast.Call) and dotted(node).endswith("approx") and node.args:
            node = node.args[0]
        else:
            break
    if sum(1 for _ in zip(range(150), walk(node))) >= 150:
        return f"<large {id(node)}>", projected  # too big to compare: matches nothing
    return ast.dump(node)[:2000], projected


def _number(node: ast.AST, depth: int = 0) -> float | None:
    """A numeric constant (`1e6`, `10**6`, `-1`), else None."""
    if depth > 4:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _number(node.operand, depth + 1)
        return -value if value is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Mult)):
        a, b = _number(node.left, depth + 1), _number(node.right, depth + 1)
        if a is None or b is None or abs(a) > 1e6 or abs(b) > 400:
            return None
        return a**b if isinstance(node.op, ast.Pow) else a * b
    return None


def _tolerance(node: ast.AST) -> float:
    """How loose a tolerant comparison is, as a share of its bound (0: strict; 1: vacuous)."""
    loosest = 0.0
    for sub in _walk_small(node, 300):
        if not isinstance(sub, ast.Call) or not dotted(sub).endswith(_TOLERANT):
            continue
        for k in sub.keywords[:10]:
            value = _number(k.value) if k.arg else None
            if value is None:
                continue
            if k.arg in _TOLERANCES:
                loosest = max(loosest, min(value / _TOLERANCES[k.arg], 1.0))
            elif k.arg in ("places", "decimal") and value <= 0:
                loosest = 1.0
    return loosest


def _anything(node: ast.AST) -> bool:
    """A pattern check every output passes: `fnmatch_lines(["*"])`, `assertRegex(x, ".*")`."""
    if not isinstance(node, ast.Call):
        return False
    name = dotted(node)
    if name.rsplit(".", 1)[-1] not in _MATCHERS and name not in _MATCHERS:
        return False
    args = node.args[1:2] if name.rsplit(".", 1)[-1] in ("assertRegex", "assertRegexpMatches") else node.args[:1]
    if args and isinstance(args[0], (ast.List, ast.Tuple)) and not args[0].elts:
        return True  # no line to match: `fnmatch_lines([])`
    patterns = [e for a in args for e in (a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a])]
    return bool(patterns) and all(isinstance(p, ast.Constant) and p.value in _ANYTHING for p in patterns[:50])


def _weaker_checks(
    view: PatchView, h: int, removed: Sequence[tuple[int, PatchLine]], added: Sequence[tuple[int, PatchLine]]
) -> tuple[int, str] | None:
    """(row, how) of an added check in an existing test that is a strictly weaker form of a check
    the hunk removes: an order-sensitive comparison made order-insensitive (assertSequenceEqual to
    assertCountEqual), both sides projected (`assert_identical(a, b)` to `set(a) == set(b)`,
    `.shape` to `.size`), a tolerance made vacuous (`approx(…, abs=1e6)`, `rtol=1`, `places=0`),
    or a pattern that matches anything (`fnmatch_lines(["*"])`) where lines were removed."""
    rows = view.file.hunks[h]
    if not any(r.text.strip() for _, r in removed) or not added:
        return None
    new_tests = {m.group(2) for r in rows if r.kind == "+" and (m := _TEST_DEF.match(cut(r.text)))}
    olds = [node for _, r in removed[:40] if (node := _line_check(view, r.text)) is not None]
    pairs = 0
    for i, r in added[:40]:
        if view.enclosing(h, i) in new_tests:
            continue
        new = _line_check(view, r.text)
        if new is None:
            continue
        if _anything(new):
            return i, "a pattern check that matches anything"
        loose = _tolerance(new)
        if loose >= 1.0 and all(_tolerance(old) < 1.0 for old in olds) and olds:
            return i, "a tolerance that makes the check vacuous"
        if olds and (broader := _broader_raises(new, olds)):
            return i, broader
        compared = _comparison(new)
        if compared is None:
            continue
        if any(dotted(o) in _ANY_VALUE for o in compared[1]) and not any(
            any(dotted(o) in _ANY_VALUE for o in before[1]) for old in olds if (before := _comparison(old))
        ):
            return i, "an expected value replaced by mock.ANY, which equals anything"
        how, operands = compared
        mine = sorted(_unprojected(o) for o in operands)
        for old in olds:
            pairs += 1
            if pairs > MAX_PAIRS:
                return None
            before = _comparison(old)
            if before is None or before[0] not in _ORDERED:
                continue
            theirs = sorted(_unprojected(o) for o in before[1])
            if [d for d, _ in mine] != [d for d, _ in theirs] or any(p for _, p in theirs):
                continue
            ordered = before[0] in _ALWAYS_ORDERED or any(isinstance(o, (ast.List, ast.Tuple, ast.ListComp)) for o in before[1])
            if how in _UNORDERED and ordered:
                return i, f"{before[0]} replaced by the order-insensitive {how}"
            if sum(p for _, p in mine) == 2:
                return i, "a comparison replaced by one of projections of both sides"
    return None


_ASSIGNS = re.compile(r"^\s*(\w{1,200})\s*=(?!=)")


def _parse_line(text: str) -> ast.stmt | None:
    line = cut(text).strip()
    if not line or line.endswith((":", "(", "[", "{", ",", "\\")):
        return None
    tree = bounded_parse(line, ParseBudget())
    return tree.body[0] if tree is not None and len(tree.body) == 1 else None


def _assigned(stmt: ast.stmt | None) -> tuple[str, str] | None:
    """(name, dump of the value) of `name = value`, else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        if sum(1 for _ in zip(range(150), walk(stmt.value))) < 150:
            return stmt.targets[0].id, ast.dump(stmt.value)
    return None


def _root(node: ast.AST) -> str:
    for _ in range(20):
        if isinstance(node, ast.Attribute):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            break
    return node.id if isinstance(node, ast.Name) else ""


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in _walk_small(node, 300) if isinstance(n, ast.Name)}


def _derived_from_actual(
    view: PatchView, h: int, removed: Sequence[tuple[int, PatchLine]], added: Sequence[tuple[int, PatchLine]]
) -> tuple[int, str] | None:
    """(row, how) of an existing test's expected value made to come from the code under test, so
    the check holds by construction: `expected = f(a)` replacing a literal expectation beside
    `actual = f(a)` that it is compared with, or an expected argument that was a constant now read
    from the checked object itself (`result.assert_outcomes(passed=result.parseoutcomes()[…])`)."""
    rows = view.file.hunks[h]
    new_tests = {m.group(2) for r in rows if r.kind == "+" and (m := _TEST_DEF.match(cut(r.text)))}
    olds = [stmt for _, r in removed[:40] if (stmt := _parse_line(r.text)) is not None]
    old_assigned = {m.group(1) for _, r in removed[:40] if (m := _ASSIGNS.match(cut(r.text)))}
    new_side = [(i, r) for i, r in enumerate(rows[:400]) if r.kind != "-"]
    for i, r in added[:40]:
        if view.enclosing(h, i) in new_tests or (stmt := _parse_line(r.text)) is None:
            continue
        mine = _assigned(stmt)
        if mine is not None and mine[0] in old_assigned and isinstance(stmt, ast.Assign):
            if not isinstance(stmt.value, ast.Call):
                continue
            twins = {a[0] for k, t in new_side if k != i and (a := _assigned(_parse_line(t.text))) and a[1] == mine[1]}
            twins.discard(mine[0])
            for _, t in new_side:
                check = _line_check(view, t.text)
                if twins and check is not None and mine[0] in _names(check) and _names(check) & twins:
                    return i, f"the expected {mine[0]} computed by the same call as the value it is compared with"
        call = stmt.value if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) else None
        root = _root(call.func.value) if call is not None and isinstance(call.func, ast.Attribute) else ""
        if call is None or not root or "assert" not in dotted(call).rsplit(".", 1)[-1]:
            continue
        for old in olds:
            if not (isinstance(old, ast.Expr) and isinstance(old.value, ast.Call) and dotted(old.value) == dotted(call)):
                continue
            constants = {k.arg for k in old.value.keywords[:20] if k.arg and isinstance(k.value, ast.Constant)}
            for k in call.keywords[:20]:
                if k.arg in constants and not isinstance(k.value, ast.Constant) and root in _names(k.value):
                    return i, f"the expected {k.arg} read from {root}, the object checked"
    return None


def _raises_parts(node: ast.AST) -> tuple[str, bool] | None:
    """(type, whether a message or pattern is checked) of an exception check, else None."""
    if not isinstance(node, ast.Call) or dotted(node).rsplit(".", 1)[-1] not in _RAISES or not node.args:
        return None
    name = dotted(node).rsplit(".", 1)[-1]
    kind = dotted(node.args[0]) if not isinstance(node.args[0], ast.Tuple) else "<several>"
    message = any(k.arg in ("match", "msg", "expected_regex", "expected_message") for k in node.keywords[:10])
    message |= len(node.args) >= 2 and ("Message" in name or "Regex" in name or name == "assert_raises_regex")
    return kind, message


def _broader_raises(new: ast.AST, olds: Sequence[ast.AST]) -> str:
    """How an exception check was made to accept more than the one it replaces: its type widened
    to `Exception` (or `BaseException`), its message or pattern dropped, the type kept."""
    mine = _raises_parts(new)
    if mine is None:
        return ""
    for old in olds:
        theirs = _raises_parts(old)
        if theirs is None:
            continue
        if mine[0] in _BROAD and theirs[0] not in _BROAD:
            return f"an exception check widened from {theirs[0]} to {mine[0]}"
        if theirs[1] and not mine[1] and mine[0] == theirs[0] and isinstance(new, ast.Call) and len(new.args) < 2:
            return "an exception check's expected message dropped"
    return ""


def _early_return(fn: ast.FunctionDef | ast.AsyncFunctionDef, sv: SourceView) -> ast.stmt | None:
    for stmt in fn.body[:-1]:
        early = isinstance(stmt, ast.Return) or (
            isinstance(stmt, ast.If) and constant_truthy(stmt.test) and isinstance(stmt.body[0], ast.Return)
        )
        if early and sv.line_added(stmt):
            return stmt
    return None


def _weak_nodes(view: PatchView, h: int, sv: SourceView) -> Iterator[tuple[str, ast.AST, str]]:
    """(what, node, test) of each weakening in an existing test of one parsed hunk. A test
    whose def line the patch adds is new: its author may write any checks."""
    for item in scoped_nodes(sv.tree, _WEAK_NODES):
        node = item.node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test") and not sv.line_added(node) and (stmt := _early_return(node, sv)):
                yield "an early return before the checks", stmt, function_path((*item.scopes, node))
            continue
        if not isinstance(node, (ast.Assert, ast.Expr, ast.Try, ast.With, ast.If, ast.While)) or not sv.line_added(node):
            continue
        fn = item.function
        if fn is not None:
            if not is_test_function(item.scopes) or sv.line_added(fn):
                continue
            name = function_path(item.scopes)
        else:
            no = sv.new_no(node.lineno)
            name = view.def_at(h, no)
            if not name.startswith("test"):
                continue
        if isinstance(node, ast.Assert) and constant_truthy(node.test):
            yield "an assert that is always true", node, name
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if (
                dotted(call).rsplit(".", 1)[-1] in ("assertTrue", "assert_", "failUnless")
                and call.args
                and constant_truthy(call.args[0])
            ):
                yield "an assertTrue(True)", node, name
        elif isinstance(node, ast.Try) and _swallows(node):
            yield "a try/except that swallows failed checks", node, name
        elif isinstance(node, ast.With) and any("suppress" in dotted(w.context_expr) for w in node.items) and _checks(node.body):
            yield "checks under contextlib.suppress", node, name
        elif isinstance(node, (ast.If, ast.While)) and constant_falsy(node.test) and _does_something(node.body):
            yield f"the test's code under `{'if' if isinstance(node, ast.If) else 'while'} <false>:`, never run", node, name


def _does_something(body: Sequence[ast.stmt]) -> bool:
    """Whether a block holds more than `pass`, `...` or a docstring."""
    return any(not (isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))) for s in body)


def _checks(body: Sequence[ast.stmt]) -> bool:
    for stmt in body:
        for sub in _walk_small(stmt):
            if isinstance(sub, ast.Assert) or (isinstance(sub, ast.Call) and "assert" in dotted(sub).rsplit(".", 1)[-1]):
                return True
    return False


def _swallows(node: ast.Try) -> bool:
    """A try whose checks' failures an except clause drops (`pass`, `...`, `return`)."""
    if not _checks(node.body):
        return False
    for handler in node.handlers:
        caught = dotted(handler.type) if handler.type is not None else ""
        quiet = all(isinstance(s, (ast.Pass, ast.Return, ast.Continue)) or _is_ellipsis(s) for s in handler.body)
        if quiet and caught in ("", "Exception", "BaseException", "AssertionError", "builtins.AssertionError"):
            return True
    return False


def _is_ellipsis(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis


def _inside_removed_tests(rows: Sequence[PatchLine]) -> list[bool]:
    """For each row of a hunk, whether it is a removed line of a removed test function."""
    flags = []
    indent = -1
    for r in rows:
        text, kind = cut(r.text), r.kind
        level = len(text) - len(text.lstrip())
        if kind == "-" and (m := _TEST_DEF.match(text)):
            indent = len(m.group(1) or m.group(3) or "")
            flags.append(True)
            continue
        if indent >= 0 and kind == "-" and (not text.strip() or level > indent):
            flags.append(True)
            continue
        if text.strip() or kind != "-":
            indent = -1 if (text.strip() and level <= indent) or kind != "-" else indent
        flags.append(False)
    return flags
