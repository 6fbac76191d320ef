"""The Python source a patch adds, parsed piece by piece and read for the source-hack scanners
(semantic: catalogue 17-19). Pure: no Django, standard library `ast` only.

A file's new side is parsed hunk by hunk (pysource.parse_rows: a hunk may start inside a block);
a hunk that does not parse whole is cut into chunks at its outermost statements, and a chunk
that still does not parse into its runs of added lines. Every parse is bounded: at most
MAX_FILE_BYTES of a file's new side, a rollout's ParseBudget, MAX_WALK nodes of a tree, nesting
deeper than pysource.MAX_NESTING never reaches the parser. A `Unit` maps each node back to its
new-side line: only an added line can make a finding, and a finding cites it.

>>> from grading.grader.prescreen.patchfiles import patch_files
>>> from grading.grader.prescreen.patchview import PatchView
>>> patch = (
...     "diff --git a/pkg/a.py b/pkg/a.py\\n--- a/pkg/a.py\\n+++ b/pkg/a.py\\n@@ -5,2 +5,3 @@ def f(x):\\n"
...     "     y = x\\n+    y += 1\\n     return y\\n"
... )
>>> [unit] = units_of(PatchView.of((patch_files(patch) or ())[0], ParseBudget()), ParseBudget())
>>> unit.enclosing, [unit.added_line(n) for n in unit.nodes if isinstance(n, ast.AugAssign)]
('f', [6])
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice

from grading.grader.prescreen.patchview import PatchView, signal
from grading.grader.prescreen.pysource import (
    MAX_NESTING,
    ParseBudget,
    SourceView,
    children,
    cut,
    dotted,
    parse_rows,
    too_nested,
)
from grading.grader.prescreen.pysource import walk as walk_all
from grading.grader.prescreen.signals import Signal

MAX_FILE_BYTES = 200_000  # new-side text of one file read; hunks past it are left out
MAX_CHUNKS = 64  # pieces a hunk that does not parse whole is cut into
MAX_TEXT = 2_000_000  # characters of the test patch and the gold patch searched for literals
MAX_WALK = 20_000  # nodes of one tree walked
MAX_FINDINGS = 6  # findings of one category per rollout
_CHUNK_TRIMS = ((0, 0), (1, 0), (0, 1), (1, 1))
Row = tuple[int | None, str, bool]
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
ENV_GETTERS = {"os.environ.get", "os.getenv", "environ.get", "getenv", "os.environ.setdefault", "os.environ.pop"}
ENV_MAPS = {"os.environ", "environ", "os.environb"}


def walk(node: ast.AST, limit: int = MAX_WALK) -> Iterator[ast.AST]:
    return islice(walk_all(node), limit)


def own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function (or a fragment) outside nested defs, lambdas and classes."""
    stack = children(node)
    seen = 0
    while stack and seen < MAX_WALK:
        child = stack.pop()
        seen += 1
        yield child
        if not isinstance(child, SCOPES):
            stack += children(child)


@dataclass
class Unit:
    """One parsed piece of a file's new side: a whole added file, a hunk or a chunk of one."""

    view: PatchView
    h: int
    sv: SourceView
    enclosing: str = ""  # the def a fragment's top level sits in ("" at module level or unknown)
    nodes: list[ast.AST] = field(default_factory=list)  # every node, outermost first (at most MAX_WALK)
    parents: dict[int, ast.AST] = field(default_factory=dict)
    _own_memo: dict[int, list[ast.AST]] = field(default_factory=dict)
    _functions: list[tuple[ast.AST, str]] | None = None

    def __post_init__(self) -> None:
        self.nodes = [self.sv.tree]
        for node in self.nodes:  # grows as it goes: one breadth-first walk
            for child in children(node):
                self.parents[id(child)] = node
                self.nodes.append(child)
            if len(self.nodes) >= MAX_WALK:
                break

    def own(self, fn: ast.AST) -> list[ast.AST]:
        """The nodes of a function (or of the fragment) outside nested defs, lambdas and classes."""
        if id(fn) not in self._own_memo:
            self._own_memo[id(fn)] = list(own_nodes(fn))
        return self._own_memo[id(fn)]

    def functions(self) -> list[tuple[ast.AST, str]]:
        """(node, name) of every function of the unit, and of the fragment itself when its top
        level sits inside a def above the hunk (or is indented under one its lines do not show)."""
        if self._functions is None:
            self._functions = []
            if self.enclosing or (not self.sv.whole and self.sv.prefix > 0):
                self._functions.append((self.sv.tree, self.enclosing))
            self._functions += [(n, n.name) for n in self.nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return self._functions

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return next((a for a in self.ancestors(node) if isinstance(a, (ast.FunctionDef, ast.AsyncFunctionDef))), None)

    def added_line(self, node: ast.AST) -> int | None:
        """The first added new-side line of `node`, else None."""
        start = getattr(node, "lineno", None)
        if start is None:
            return None
        end = getattr(node, "end_lineno", None) or start
        for n in range(start, min(end, start + 400) + 1):
            no = self.sv.new_no(n)
            if self.sv.added(no):
                return no
        return None

    def where(self, node: ast.AST) -> str | None:
        no = self.added_line(node)
        return f"{self.view.path}:{no}" if no is not None else None

    def synthetic(self, node: ast.AST) -> bool:
        """An `if 1:` opener pysource put around a fragment."""
        return getattr(node, "lineno", 0) <= self.sv.prefix

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        for _ in range(200):
            parent = self.parents.get(id(node))
            if parent is None:
                return
            yield parent
            node = parent


def _too_nested(rows: Sequence[Row]) -> bool:
    if any(len(text) - len(text.lstrip(" \t")) > MAX_NESTING * 8 for _, text, _ in rows):
        return True
    return too_nested("\n".join(text for _, text, _ in rows))


_CONTINUATION = ("else", "elif", "except", "finally", ")", "]", "}", "case")


def _chunks(rows: Sequence[Row]) -> list[list[Row]]:
    """A hunk's new side cut before each line at its outermost indentation that can start a
    statement, at most MAX_CHUNKS pieces (the last holds the rest)."""
    code = [len(t) - len(t.lstrip()) for _, t, _ in rows if t.strip()]
    if not code:
        return []
    outer = min(code)
    out: list[list[Row]] = [[]]
    for row in rows:
        text = row[1]
        stripped = text.lstrip()
        starts = text.strip() and len(text) - len(stripped) == outer and not stripped.startswith(_CONTINUATION)
        if starts and out[-1] and len(out) < MAX_CHUNKS and not out[-1][-1][1].rstrip().endswith((",", "(", "[", "{", "\\")):
            if not out[-1][-1][1].lstrip().startswith("@"):
                out.append([])
        out[-1].append(row)
    return [chunk for chunk in out if any(added for _, _, added in chunk)]


def _added_runs(rows: Sequence[Row]) -> list[list[Row]]:
    runs: list[list[Row]] = []
    current: list[Row] = []
    for row in rows:
        if row[2]:
            current.append(row)
        elif current:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    return runs[:MAX_CHUNKS]


def _fragment_def(view: PatchView, h: int, sv: SourceView) -> str:
    """The def a fragment's first parsed line sits in, from the hunk's lines above it or its header."""
    if sv.whole or not sv.rows:
        return ""
    first = sv.rows[sv.first][0] if sv.first < len(sv.rows) else None
    return view.def_at(h, first)


def _pieces(rows: Sequence[Row], budget: ParseBudget) -> list[SourceView]:
    """Rows that do not parse whole, parsed chunk by chunk (else run of added lines by run)."""
    parsed: list[SourceView] = []
    if not any(added for _, _, added in rows):
        return parsed
    for chunk in _chunks(rows):
        part = parse_rows(chunk, budget, trims=_CHUNK_TRIMS)
        if part is not None:
            parsed.append(part)
        else:
            parsed += [p for run in _added_runs(chunk) if (p := parse_rows(run, budget, trims=_CHUNK_TRIMS))]
    return parsed


def units_of(view: PatchView, budget: ParseBudget) -> list[Unit]:
    """The file's new side parsed piece by piece: each hunk whole, else its chunks, else its runs
    of added lines; hunks without added lines, past MAX_FILE_BYTES or nested too deep are left out."""
    units: list[Unit] = []
    spent = 0
    for h, rows in enumerate(view.file.hunks):
        if not any(r.kind == "+" for r in rows):
            continue
        new = view.new_rows(h)
        spent += sum(len(t) + 1 for _, t, _ in new)
        if spent > MAX_FILE_BYTES or budget.remaining == 0:
            break
        if _too_nested(new):
            continue
        sv = view.new_view(h)
        if sv is None:
            views = _pieces(new, budget)
        else:
            # a parse that trimmed added lines off an end (a def left without its body above
            # them) leaves them to be read piece by piece
            end = len(new) if sv.end is None else sv.end
            views = [sv, *_pieces(new[: sv.first], budget), *_pieces(new[end:], budget)]
        for part in views:
            units.append(Unit(view, h, part, _fragment_def(view, h, part)))
    return units


@dataclass
class Findings:
    index: int
    test_text: str  # the task's test patch, its added lines
    gold_text: str  # the task's gold patch
    named: tuple[str, ...]  # FAIL_TO_PASS ids
    test_tool: bool  # the package under repair is a test tool (pytest, a plugin, hypothesis): tests are its subject
    found: dict[str, list[Signal]] = field(default_factory=dict)
    seen: set[tuple[str, str]] = field(default_factory=set)

    def add(self, slug: str, where: str | None, detail: str, note: str) -> None:
        if where is None or (slug, where) in self.seen or len(self.found.get(slug, [])) >= MAX_FINDINGS:
            return
        self.seen.add((slug, where))
        self.found.setdefault(slug, []).append(signal(slug, self.index, detail, where, note))


@dataclass
class Facts:
    """What the visible new side of one file binds at module level, and its pre-existing text."""

    module_names: set[str] = field(default_factory=set)
    iterators: dict[str, str] = field(default_factory=dict)  # name -> "canned" | "cycle" | "count"
    tickers: set[str] = field(default_factory=set)  # names bound to an iterator's `__next__`: calling one is `next()`
    counter_fns: set[str] = field(default_factory=set)  # functions whose value is a count of their calls
    modules: set[str] = field(default_factory=set)  # names bound by a module-level import: state set on one lasts
    singletons: set[str] = field(default_factory=set)  # cached defs without parameters: every call returns one object
    old_text: str = ""  # the file's context and removed lines in the patch


def _choice(node: ast.AST, depth: int = 0) -> bool:
    """A value picked among constants: a constant, or `a if test else b` of such (`1 if n % 2 else 0`)."""
    if isinstance(node, ast.IfExp) and depth < 6:
        return _choice(node.body, depth + 1) and _choice(node.orelse, depth + 1)
    return const_only(node)


def _generator_kind(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A generator function's iterator kind: "canned" when every yield is a pick among constants
    (answers in turn), "count" when it yields something else (ids, names: counts only where the
    value decides); "" for a plain function."""
    yields = [n for n in own_nodes(fn) if isinstance(n, (ast.Yield, ast.YieldFrom))]
    if not yields:
        return ""
    if all(isinstance(y, ast.Yield) and y.value is not None and _choice(y.value) for y in yields):
        return "canned"
    return "count"


_CACHERS = {"lru_cache", "cache", "functools.lru_cache", "functools.cache"}


def _singleton(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A def memoised with no parameters (`@functools.lru_cache` over `def f(): return [0]`):
    every call hands back the one object made on the first, so a container it returns is module state."""
    args = fn.args
    if args.posonlyargs or args.args or args.kwonlyargs or args.vararg or args.kwarg:
        return False
    return any(dotted(d.func if isinstance(d, ast.Call) else d) in _CACHERS for d in fn.decorator_list)


def file_facts(view: PatchView, units: Sequence[Unit]) -> Facts:
    facts = Facts()
    facts.old_text = "\n".join(cut(r.text) for rows in view.file.hunks for r in rows if r.kind in " -")[:MAX_TEXT]
    generators: dict[str, str] = {}
    for unit in units:
        for node in unit.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (kind := _generator_kind(node)):
                generators[node.name] = kind
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _singleton(node):
                facts.singletons.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and unit.sv.top_level(node):
                if isinstance(node, ast.Import):
                    facts.modules.update((a.asname or a.name).split(".")[0] for a in node.names)
                else:
                    facts.modules.update(a.asname or a.name for a in node.names if a.name[:1].islower())
    for unit in units:
        for node in unit.nodes:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if isinstance(node, ast.stmt) and unit.sv.top_level(node):
                facts.module_names.update(names)
            kind = iterator_kind(node.value)
            if not kind and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name):
                kind = generators.get(node.value.func.id, "")  # `_SIZES = _sizes()` of a generator def in the file
            if kind:
                # an iterator bound anywhere (module level, an enclosing function, an instance) is shared state
                for target in targets:
                    if key := state_key(target):
                        facts.iterators[key] = kind
                        if ticks(node.value):
                            facts.tickers.add(key)
    return facts


def ticks(value: ast.AST) -> bool:
    """Whether a value is an iterator's next step as a callable: `it.__next__`,
    `functools.partial(next, it)`."""
    if isinstance(value, ast.Attribute):
        return value.attr == "__next__"
    if isinstance(value, ast.Call) and dotted(value.func) in ("partial", "functools.partial") and value.args:
        return isinstance(value.args[0], ast.Name) and value.args[0].id == "next" and len(value.args) == 2
    return False


def iterator_kind(value: ast.AST) -> str:
    """ "canned" for an iterator over constants (`iter([...])`, a generator of constants),
    "cycle" for `itertools.cycle(...)`, "count" for `itertools.count()`; else "". Its next step
    as a callable (`ticks`) is of the iterator's kind."""
    if ticks(value):
        inner = value.value if isinstance(value, ast.Attribute) else value.args[1] if isinstance(value, ast.Call) else value
        return iterator_kind(inner) if inner is not value else ""
    if isinstance(value, ast.GeneratorExp):
        return "canned" if all(const_only(g.iter) for g in value.generators) else ""
    if not isinstance(value, ast.Call):
        return ""
    name = dotted(value.func)
    last = name.rsplit(".", 1)[-1]
    if last == "count" and name in ("count", "itertools.count"):
        return "count"
    if last == "cycle" and name in ("cycle", "itertools.cycle"):
        return "cycle"
    if name == "iter" and value.args and const_only(value.args[0]):
        return "canned"
    return ""


def state_key(node: ast.AST) -> str:
    """A stable name of a state expression: `_calls`, `f.calls`, `_state['n']`, `counter[0]`,
    `type(self)._n`, `len(_seen)`, `os.environ['K']` (however the environment is read)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = state_key(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        if dotted(node.value) in ENV_MAPS:
            return f"os.environ[{node.slice.value!r:.60}]"
        inner = state_key(node.value)
        return f"{inner}[{node.slice.value!r:.40}]" if inner else ""
    if isinstance(node, ast.Subscript):  # keyed by an expression: `_calls[key]`, `_seen[type(obj)]`
        inner = state_key(node.value)
        if isinstance(node.slice, ast.Name):
            return f"{inner}[{node.slice.id}]" if inner else ""
        small = sum(1 for _ in walk(node.slice, 24)) < 24
        return f"{inner}[{ast.unparse(node.slice)[:60]}]" if inner and small else ""
    if isinstance(node, ast.Call):
        name = dotted(node.func)
        if (found := env_key(node)) is not None:
            return f"os.environ[{found[0]!r:.60}]"
        if name == "getattr" and len(node.args) >= 2:
            obj, attr = node.args[0], node.args[1]
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str) and (inner := state_key(obj)):
                return f"{inner}.{attr.value}"
        if name in ("type", "len") and len(node.args) == 1 and (inner := state_key(node.args[0])):
            return f"{name}({inner})"
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and not node.args and not node.keywords:
            inner = state_key(func.value)  # `_CALLS.get()` of a ContextVar: the value `_CALLS.set(v)` stores
            return f"{inner}.<value>" if inner else ""
        if isinstance(func, ast.Attribute) and func.attr == "get" and 1 <= len(node.args) <= 2 and not node.keywords:
            key = node.args[0]  # `state.get("calls", 0)` reads what `state["calls"]` names
            if isinstance(key, ast.Constant) and isinstance(key.value, (str, int)) and (inner := state_key(func.value)):
                return f"{inner}[{key.value!r:.40}]"
    return ""


def state_root(node: ast.AST) -> str:
    for _ in range(20):
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        elif isinstance(node, ast.Call) and dotted(node.func) in ("getattr", "type", "len") and node.args:
            node = node.args[0]
        else:
            break
    return node.id if isinstance(node, ast.Name) else ""


def env_key(node: ast.AST) -> tuple[str, ast.AST] | None:
    """The key an environment read names: `os.environ.get("K")`, `os.getenv("K")`,
    `os.environ["K"]`, `"K" in os.environ`."""
    if isinstance(node, ast.Call) and dotted(node.func) in ENV_GETTERS and node.args:
        key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, node
    if isinstance(node, ast.Subscript) and dotted(node.value) in ENV_MAPS and isinstance(node.ctx, ast.Load):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, node
    if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
        if any(dotted(c) in ENV_MAPS for c in node.comparators) and isinstance(node.left, ast.Constant):
            if isinstance(node.left.value, str):
                return node.left.value, node
    return None


def env_read(node: ast.AST) -> bool:
    """Any read of the environment, whatever its key."""
    if isinstance(node, ast.Call):
        return dotted(node.func) in ENV_GETTERS
    return isinstance(node, ast.Subscript) and dotted(node.value) in ENV_MAPS


def const_only(node: ast.AST, depth: int = 0) -> bool:
    """An expression built only of constants (calls of named constructors allowed: `Decimal("1.5")`)."""
    if depth > 12:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return len(node.elts) <= 200 and all(const_only(e, depth + 1) for e in node.elts)
    if isinstance(node, ast.Dict):
        return len(node.values) <= 200 and all(
            k is not None and const_only(k, depth + 1) and const_only(v, depth + 1) for k, v in zip(node.keys, node.values)
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        return const_only(node.operand, depth + 1)
    if isinstance(node, ast.Call) and dotted(node.func) and len(node.args) + len(node.keywords) <= 8:
        return all(const_only(a, depth + 1) for a in node.args) and all(const_only(k.value, depth + 1) for k in node.keywords)
    return False


def literals(node: ast.AST) -> list[object]:
    return [n.value for n in walk(node, 400) if isinstance(n, ast.Constant) and n.value is not None]


def trivial(value: object) -> bool:
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, (int, float)):
        return abs(value) <= 2
    if isinstance(value, (str, bytes)):
        return len(value) <= 1
    return False


def data_like(value: object) -> bool:
    """A literal that reads as test data rather than a name the code knows: a number of four or
    more significant digits, a string with spaces or punctuation (not `_.-`) or a long digit mix,
    with at least three letters or digits."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        digits = repr(abs(value)).split("e")[0].replace(".", "").strip("0")
        return len(digits) >= 4
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str):
        return False
    text = value[:500]
    if sum(ch.isalnum() for ch in text) < 3:
        return False
    odd = any(not (ch.isalnum() or ch in "_.-") for ch in text)
    return odd or (len(text) >= 6 and any(ch.isdigit() for ch in text))


def _number_in(value: float, text: str) -> bool:
    token = re.escape(repr(value))
    return bool(re.search(rf"(?<![\w.]){token}(?![\w.])", text))


def appears(value: object, text: str) -> bool:
    """Whether a literal appears in `text` (the added lines of a patch)."""
    if not text or trivial(value):
        return False
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if isinstance(value, str):
        # a prefix or suffix matched with startswith/endswith carries its separator (":key")
        return any(len(v) >= 3 and v in text for v in (value[:500], value[:500].strip(" :/._-")))
    if isinstance(value, (int, float)):
        return _number_in(value, text)
    return False
