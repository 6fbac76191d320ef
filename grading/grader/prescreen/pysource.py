"""Python source seen through a patch: what the new (or old) side of a file's hunks parses to.

Pure: no Django. A whole added file parses as it is; a hunk of a modified file is a fragment
that may start inside a block, so it is parsed under `if 1:` openers for the indentation levels
it starts below, trimming a few lines at either end when it starts or ends inside a statement
(a bracket, a string, a lone `else:`). Every parse is bounded: a source of more than
MAX_PARSE_BYTES or nested deeper than MAX_NESTING is not parsed, a patch spends at most a
ParseBudget, and whatever the parser raises (SyntaxError, RecursionError, MemoryError,
ValueError) is "does not parse".

>>> rows = [(10, "        x = compute()", False), (11, "        assert x == 2", True), (12, "    return x", False)]
>>> view = parse_rows(rows, ParseBudget())
>>> view is not None and [node.__class__.__name__ for node in ast.walk(view.tree) if isinstance(node, ast.Assert)]
['Assert']
>>> view.new_no(view.tree.body[0].body[0].body[1].lineno), view.added(11)
(11, True)
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

MAX_PARSE_BYTES = 256_000  # one file or fragment
MAX_NESTING = 60  # brackets or indentation levels
MAX_LINE = 4_000  # characters of a line any regex of the scanners sees
TRIMS = 4  # lines trimmed at either end of a fragment before giving up
MAX_MEMO = 1_000_000  # characters of source whose parse a rollout's ParseMemo keeps


def cut(text: str) -> str:
    """A line as the scanners' regexes see it: at most MAX_LINE characters."""
    return text[:MAX_LINE]


class ParseMemo:
    """Trees already parsed for one rollout, by source text, so the tampering and the source-hack
    scanners parse a hunk once between them (each still pays its own ParseBudget for it). At most
    MAX_MEMO characters of source are remembered."""

    def __init__(self) -> None:
        self.trees: dict[str, ast.Module | None] = {}
        self.size = 0

    def keep(self, text: str, tree: ast.Module | None) -> None:
        if self.size + len(text) <= MAX_MEMO:
            self.trees[text] = tree
            self.size += len(text)


@dataclass
class ParseBudget:
    """How many bytes of source one rollout's patch may still parse (and the rollout's memo of
    parses, when it has one)."""

    remaining: int = 4_000_000
    memo: ParseMemo | None = None
    # Texts whose remembered tree this budget's reader already holds: a second request parses
    # anew, so one reader never gets the same node objects twice (readers key nodes by id()).
    held: set[str] = field(default_factory=set)

    def take(self, size: int) -> bool:
        if size > self.remaining:
            self.remaining = 0
            return False
        self.remaining -= size
        return True


def too_nested(text: str) -> bool:
    """Whether `text` opens brackets deeper than MAX_NESTING (Python's parser could recurse out of
    its stack on it): counted in one pass, before any parse."""
    if text.count("(") + text.count("[") + text.count("{") <= MAX_NESTING:  # cannot nest deeper
        return False
    depth = deepest = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth = max(depth - 1, 0)
    return deepest > MAX_NESTING


def bounded_parse(text: str, budget: ParseBudget) -> ast.Module | None:
    """`ast.parse(text)`, or None when it is too big, too deep, over budget or not Python."""
    if len(text) > MAX_PARSE_BYTES:
        return None
    memo = budget.memo
    known = memo is not None and text in memo.trees and text not in budget.held  # it passed too_nested then
    if (not known and too_nested(text)) or not budget.take(len(text)):
        return None
    if known:
        tree = memo.trees[text] if memo is not None else None
    else:
        try:
            tree = ast.parse(text)
        except (SyntaxError, RecursionError, MemoryError, ValueError, OverflowError):
            tree = None
        if memo is not None:
            memo.keep(text, tree)
    if tree is not None and memo is not None:
        budget.held.add(text)
    return tree


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _openers(lines: Sequence[str]) -> list[str] | None:
    """`if 1:` lines that open the blocks the first line of `lines` sits in, or None when the
    indentation mixes tabs and spaces or nests too deep."""
    code = [line for line in lines if line.strip()]
    if not code:
        return []
    first = _indent(code[0])
    if "\t" in "".join(_indent(line) for line in code):
        return None
    levels = sorted({len(_indent(line)) for line in code if len(_indent(line)) < len(first)} | {0})
    if not first:
        return []
    if len(levels) > MAX_NESTING:
        return None
    return [" " * level + "if 1:" for level in levels]


@dataclass
class SourceView:
    """A parsed side of one hunk (or of a whole file): the tree and how its line numbers map
    back to the file's lines."""

    tree: ast.Module
    rows: Sequence[tuple[int | None, str, bool]]  # (file line number, text, added) of each line
    first: int  # index into rows of the tree's first parsed line
    prefix: int  # opener lines before it
    whole: bool = False  # the whole file, so module level is module level
    end: int | None = None  # index into rows past the last parsed line (None: all)
    _added: frozenset[int] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        self._added = frozenset(no for no, _, added in self.rows if added and no is not None)

    def covers(self, i: int) -> bool:
        """Whether rows[i] was parsed (a fragment may trim lines at either end)."""
        return self.first <= i < (len(self.rows) if self.end is None else self.end)

    def row(self, lineno: int) -> tuple[int | None, str, bool] | None:
        i = lineno - 1 - self.prefix + self.first
        return self.rows[i] if self.covers(i) else None

    def new_no(self, lineno: int) -> int | None:
        row = self.row(lineno)
        return row[0] if row else None

    def added(self, no: int | None) -> bool:
        return no is not None and no in self._added

    def node_added(self, node: ast.AST) -> bool:
        """Whether any line of `node` is an added line."""
        start = getattr(node, "lineno", None)
        if start is None:
            return False
        end = getattr(node, "end_lineno", None) or start
        return any(self.added(self.new_no(n)) for n in range(start, end + 1))

    def line_added(self, node: ast.AST) -> bool:
        """Whether the first line of `node` is an added line."""
        start = getattr(node, "lineno", None)
        return start is not None and self.added(self.new_no(start))

    def at_module_level(self, node: ast.AST) -> bool:
        """Whether `node` lies inside a statement at the file's module level (its defs and
        classes aside, which scoped_nodes tells)."""
        line = getattr(node, "lineno", 0)
        return any(self.top_level(s) and s.lineno <= line <= (s.end_lineno or s.lineno) for s in self.tree.body)

    def top_level(self, node: ast.stmt) -> bool:
        """Whether a statement sits at the file's module level (in a fragment: the statements
        at column 0, outside the openers)."""
        return node.lineno > self.prefix and any(node is stmt for stmt in self.tree.body)


def parse_rows(
    rows: Sequence[tuple[int | None, str, bool]],
    budget: ParseBudget,
    *,
    whole: bool = False,
    trims: Sequence[tuple[int, int]] | None = None,
) -> SourceView | None:
    """The rows (one side of a hunk) parsed, trimming up to TRIMS lines at either end (only the
    (from the start, from the end) pairs of `trims` when given)."""
    texts = [text for _, text, _ in rows]
    if whole:
        tree = bounded_parse("\n".join(texts) + "\n", budget)
        return SourceView(tree, rows, 0, 0, whole=True) if tree is not None else None
    n = len(texts)
    tries = (
        list(trims)
        if trims is not None
        else [(s, k) for s in range(min(TRIMS, max(n - 1, 0)) + 1) for k in range(min(TRIMS, n - s) + 1)]
    )
    for start, cut_end in tries:
        end = n - cut_end
        part = texts[start:end]
        if not any(t.strip() for t in part):
            continue
        openers = _openers(part)
        if openers is None:
            return None
        last = next(t for t in reversed(part) if t.strip())
        body = [_indent(last) + "    pass"] if last.rstrip().endswith(":") else []  # a def cut off at its body
        tree = bounded_parse("\n".join([*openers, *part, *body]) + "\n", budget)
        if tree is not None:
            return SourceView(tree, rows, start, len(openers), end=end)
        if budget.remaining == 0:
            return None
    return None


@dataclass(frozen=True)
class Scoped:
    """A node and the functions and classes around it, innermost last."""

    node: ast.AST
    scopes: tuple[ast.AST, ...]

    @property
    def function(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for scope in reversed(self.scopes):
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return scope
        return None

    @property
    def in_main_guard(self) -> bool:
        return any(isinstance(s, ast.If) for s in self.scopes)


def _is_main_guard(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.dump(node.test)[:400]


def children(node: ast.AST) -> list[ast.AST]:
    """`list(ast.iter_child_nodes(node))`, in its order, without its two generators."""
    out: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            out.append(value)
        elif isinstance(value, list):
            out += [item for item in value if isinstance(item, ast.AST)]
    return out


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk(node)`: the same nodes in the same (breadth-first) order, faster."""
    queue = [node]
    for current in queue:  # the list grows as it is read
        queue += children(current)
        yield current


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def scoped_nodes(tree: ast.AST, kinds: type | tuple[type, ...] = ast.AST) -> Iterator[Scoped]:
    """Every node (of `kinds`) with the defs, classes and `if __name__ == "__main__":` blocks
    around it, iteratively (a deep tree cannot exhaust the stack)."""
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, scopes = stack.pop()
        if isinstance(node, kinds):
            yield Scoped(node, scopes)
        inner = scopes
        if isinstance(node, _SCOPES) or (isinstance(node, ast.If) and _is_main_guard(node)):
            inner = (*scopes, node)
        stack += [(child, inner) for child in reversed(children(node))]


def dotted(node: ast.AST) -> str:
    """ "a.b.c" of a Name/Attribute chain (a call's function, a decorator), else ""."""
    parts = []
    for _ in range(20):
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return ".".join(reversed(parts))
        else:
            return ".".join(reversed(parts))
    return ""


def constant_truthy(node: ast.AST) -> bool:
    """Whether an expression is a constant that is always true (`True`, `1`, "x", `not False`)."""
    if isinstance(node, ast.Constant):
        return bool(node.value) and node.value is not Ellipsis
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and isinstance(node.operand, ast.Constant):
        return not node.operand.value
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return any(constant_truthy(v) for v in node.values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.Is)):
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant) and isinstance(right, ast.Constant):
            return bool(left.value == right.value)
        return ast.dump(left) == ast.dump(right) if _small(left) and _small(right) else False
    return False


def constant_falsy(node: ast.AST) -> bool:
    """Whether an expression is a constant that is always false (`False`, `0`, `None`, "",
    `not True`, `True and False`): a branch under it never runs.

    >>> [constant_falsy(ast.parse(e, mode="eval").body) for e in ("False", "0", "not 1", "x", "False and x", "DEBUG")]
    [True, True, True, False, True, False]
    """
    if isinstance(node, ast.Constant):
        return not node.value  # Ellipsis is true
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return constant_truthy(node.operand)
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return any(constant_falsy(v) for v in node.values)
    return False


def _small(node: ast.AST) -> bool:
    return sum(1 for _ in zip(range(50), walk(node))) < 50
