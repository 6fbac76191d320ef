"""Per-call state (catalogue 19, `per_call_state`). Pure: no Django.

State that outlives the call — a ``global``/``nonlocal`` name, a function or class attribute, a
module-level container or its item (``_calls[key]``), a free name that a def shown whole changes
in place, a mutable default, the environment — counted up, grown or flipped (``not x``,
``^= True``) in a function that then decides what the call does by it (``_calls += 1; if _calls ==
2: return …``, ``answers[_calls % 2]``, ``if len(_seen) == 3``), or by a local holding its next
value (``n = int(os.environ.get(K, "0")) + 1; os.environ[K] = str(n); if n % 2: …``), a call of a
function that returns such a count, ``next()`` of canned answers (``iter([...])``, a generator of
constants, a module-level generator object of a generator def of the file that yields picks among
constants) or a call of its bound ``__next__`` (a default argument's too: made once for every
call), an ``itertools.count()`` whose value decides, a module-level ``itertools.cycle`` whose next
value is an operand of the computation (``d.quantize(exp, next(_ROUNDINGS))``), a module
container turned or taken from in place (``_SCHEDULE.rotate(1)``, ``_ANSWERS.popleft()``) whose
content then decides, a counter kept as an attribute of an imported module (``sys._calls``).

Not per-call state: ``lru_cache`` and memo dicts (a "loaded" flag that returns what it loaded), a
counter only logged, reported or handed out as an id, a retry loop's local attempt count, a
recursion depth or a re-entrancy guard (moved both ways in one call: a stack pushed and popped),
a warn-once, a style ``itertools.cycle`` (handed out, or passed as ``color=``), a generator of the
file handing out names, a local deque turned.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice

from grading.grader.prescreen.addedsource import (
    SCOPES,
    Facts,
    Findings,
    Unit,
    const_only,
    iterator_kind,
    literals,
    own_nodes,
    state_key,
    state_root,
    trivial,
    walk,
)
from grading.grader.prescreen.pysource import dotted

_REPORTERS = {
    "warn",
    "warning",
    "warn_explicit",
    "showwarning",
    "info",
    "debug",
    "error",
    "exception",
    "critical",
    "log",
    "print",
}
_BUILTIN_NAMES = set(dir(builtins))
_GROWERS = {"append", "add", "extend", "insert", "appendleft", "update", "setdefault"}
_TURNERS = {"rotate", "reverse"}  # the content reordered in place: what `[0]` reads changes each call
_TAKERS = {"pop", "popleft", "popitem"}  # with no argument: the next item taken off, the rest left for later calls
_MODULES = {"sys", "builtins", "__builtins__", "os", "importlib", "threading", "functools", "itertools", "math"}
# keywords a style value (a cycle of colours or markers handed out in turn) is passed by
_STYLE_WORDS = {"color", "colour", "c", "marker", "linestyle", "ls", "hatch", "label", "fmt", "style", "cmap"}
_STYLE_WORDS |= {"facecolor", "edgecolor", "fc", "ec", "mfc", "mec", "name", "prefix", "suffix", "title"}


@dataclass
class _Scope:
    """What one function binds, to tell state that outlives a call from its locals."""

    name: str
    declared: set[str]  # global / nonlocal
    params: set[str]
    mutable_defaults: set[str]
    iterator_defaults: dict[str, str]  # a parameter whose default is an iterator (or its `__next__`): its kind
    local: set[str]
    fragment: bool  # the def is above the hunk: its params and globals are not seen
    imported: set[str]  # names a module imported inside the function binds (`import sys`)
    aliases: set[str] = field(default_factory=set)  # locals naming lasting storage (`state = vars(fn)`)


def _scope(fn: ast.AST, name: str, own: Sequence[ast.AST]) -> _Scope:
    declared = {n for s in own if isinstance(s, (ast.Global, ast.Nonlocal)) for n in s.names}
    params: set[str] = set()
    mutable: set[str] = set()
    iterators: dict[str, str] = {}
    if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        params = {a.arg for a in (*positional, *args.kwonlyargs)} | {a.arg for a in (args.vararg, args.kwarg) if a}
        defaults = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
        defaults += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        mutable = {a.arg for a, d in defaults if isinstance(d, (ast.List, ast.Dict, ast.Set))}
        iterators = {a.arg: kind for a, d in defaults if (kind := iterator_kind(d))}
    local = set()
    imported = {(a.asname or a.name).split(".")[0] for n in own if isinstance(n, ast.Import) for a in n.names}
    for node in own:
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            local.add(node.name)
        elif isinstance(node, ast.alias):
            local.add((node.asname or node.name).split(".")[0])
    fragment = not isinstance(fn, SCOPES)
    return _Scope(name, declared, params, mutable, iterators, local - declared, fragment, imported)


_NAMESPACES = {"vars", "globals"}


def _aliases(own: Sequence[ast.AST], scope: _Scope, facts: Facts) -> set[str]:
    """Locals bound to storage that outlives the call, so that state set through them lasts:
    the namespace of a function, class or module (`vars(floatformat)`, `f.__dict__`, `globals()`,
    `sys.modules[__name__]`), the one object a memoised def without parameters returns
    (`calls = _write_calls()` of `@lru_cache def _write_calls(): return [0]`)."""
    out: set[str] = set()
    for node in own:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        value = node.value
        lasting = False
        if isinstance(value, ast.Call) and not value.keywords:
            name = dotted(value.func)
            if name in _NAMESPACES and len(value.args) <= 1:
                arg = value.args[0] if value.args else None
                lasting = arg is None or (isinstance(arg, ast.Name) and arg.id not in scope.params | scope.local)
            elif not value.args and name in facts.singletons:
                lasting = True
        elif isinstance(value, ast.Subscript) and dotted(value.value) == "sys.modules":
            lasting = True
        elif isinstance(value, ast.Attribute) and value.attr == "__dict__" and isinstance(value.value, ast.Name):
            lasting = value.value.id not in scope.params | scope.local and value.value.id != "self"
        if lasting:
            out.add(node.targets[0].id)
    return out


def _lasting(target: ast.AST, scope: _Scope, facts: Facts, increments: set[str], rebound: bool = True) -> bool:
    """Whether state outlives the call: a declared global/nonlocal, a function or class
    attribute, a module-level object or its item, a mutable default's item, the environment."""
    key = state_key(target)
    if key.startswith(("os.environ[", "type(")) or ".__class__." in key or ".__func__." in key:
        return True
    root = state_root(target)
    if not root or root == "self":
        return False
    if not isinstance(target, ast.Name) and (root in facts.modules or root in scope.imported or root in _MODULES):
        if root not in scope.params and (root in scope.imported or root not in scope.local):
            return True  # an attribute of an imported module (`sys._calls`): it lives as long as the process
    if isinstance(target, ast.Name) and rebound:
        if root in scope.declared:
            return True
        # a fragment without its def: a name the file binds at module level and the hunk never sets
        return scope.fragment and root in facts.module_names and root not in (scope.local - increments)
    if root in scope.mutable_defaults or (root in scope.aliases and not isinstance(target, ast.Name)):
        return True
    if root in scope.params or root in scope.local:
        return False
    if not scope.fragment and root not in _BUILTIN_NAMES:
        return True  # a free name of a def the hunk shows whole from its top: module or closure state, changed in place
    return root in (scope.name, "cls") or root in scope.declared or root.lstrip("_")[:1].isupper() or root in facts.module_names


def _bumps(value: ast.AST, key: str) -> type | None:
    """ast.Add or ast.Sub when `value` adds to or takes from the state `key` reads: `n + 1`,
    `getattr(f, "n", 0) + 1`, `str(int(os.environ.get("N", "0")) + 1)`; ast.Not when it flips it
    (`not flag`); else None."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not) and state_key(value.operand) == key:
        return ast.Not
    for node in walk(value, 200):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            if any(state_key(sub) == key for side in (node.left, node.right) for sub in walk(side, 50)):
                return type(node.op)
    return None


def _derived(own: Sequence[ast.AST]) -> dict[str, tuple[set[str], type]]:
    """Locals computed as a step of some state: `n = int(os.environ.get("N", "0")) + 1` gives
    n -> ({"os.environ['N']", …}, ast.Add) (every state the step reads). Written back
    (`os.environ["N"] = str(n)`), the state is a counter and the local its value."""
    out: dict[str, tuple[set[str], type]] = {}
    for node in own:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            local = node.targets[0].id
            for sub in walk(node.value, 200):
                if isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Add, ast.Sub)):
                    keys = {k for side in (sub.left, sub.right) for n in walk(side, 50) if (k := state_key(n)) and k != local}
                    if keys:
                        out[local] = (keys, type(sub.op))
                        break
    return out


def _counters(own: Sequence[ast.AST], scope: _Scope, facts: Facts) -> dict[str, ast.AST]:
    """State counted up, grown or flipped in the function: `x += 1`, `f.n = getattr(f, "n", 0) + 1`,
    `_seen.append(x)` (counted as `len(_seen)`), `_first = False` for a lasting flag. State moved
    both ways in one function (a recursion depth, a re-entrancy guard) is left out."""
    candidates: list[tuple[str, ast.AST, ast.AST]] = []
    grown: set[str] = set()
    ways: dict[str, set[object]] = {}
    derived: dict[str, tuple[set[str], type]] | None = None  # worked out on first need
    aliases: dict[str, str] = {}  # a local holding the new value of a counter -> the counter
    for node in own:
        if isinstance(node, ast.AugAssign) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.value, ast.Constant):
            key = state_key(node.target)
            candidates.append((key, node.target, node))
            ways.setdefault(key, set()).add(type(node.op))
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitXor) and isinstance(node.value, ast.Constant):
            key = state_key(node.target)  # `flag ^= True`: flipped
            candidates.append((key, node.target, node))
            ways.setdefault(key, set()).add(ast.Not)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            key = state_key(target)
            if not key:
                continue
            if isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool):
                candidates.append((key, target, node))
                ways.setdefault(key, set()).add(node.value.value)
            elif op := _bumps(node.value, key):
                candidates.append((key, target, node))
                ways.setdefault(key, set()).add(op)
            elif not isinstance(node.value, ast.Constant):
                derived = _derived(own) if derived is None else derived
                steps = [n.id for n in walk(node.value, 100) if isinstance(n, ast.Name) and key in derived.get(n.id, ((),))[0]]
                if steps:
                    candidates.append((key, target, node))
                    ways.setdefault(key, set()).add(derived[steps[0]][1])
                    aliases[steps[0]] = key
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
            container = node.value.func.value
            method = node.value.func.attr
            if method in _GROWERS and (key := state_key(container)):
                candidates.append((f"len({key})", container, node))
                grown.add(f"len({key})")
                ways.setdefault(f"len({key})", set()).add("grow")
            elif method == "set" and len(node.value.args) == 1 and (key := state_key(container)):
                # `_CALLS.set(n)` of a ContextVar, n a step of `_CALLS.get()`: a counter kept in the variable
                key = f"{key}.<value>"
                derived = _derived(own) if derived is None else derived
                arg = node.value.args[0]
                steps = [n.id for n in walk(arg, 100) if isinstance(n, ast.Name) and key in derived.get(n.id, ((),))[0]]
                if steps:
                    candidates.append((key, container, node))
                    grown.add(key)
                    ways.setdefault(key, set()).add(derived[steps[0]][1])
                    aliases[steps[0]] = key
            elif method == "reset" and (key := state_key(container)):
                ways.setdefault(f"{key}.<value>", set()).add("reset")  # a depth set and reset in one call: a guard
            elif (method in _TURNERS or (method in _TAKERS and not node.value.args)) and (key := state_key(container)):
                # `_SCHEDULE.rotate(1)`, `_ANSWERS.popleft()`: the container's content is the state
                candidates.append((key, container, node))
                grown.add(key)
                ways.setdefault(key, set()).add("turn" if method in _TURNERS else "take")
                if method in _TAKERS:
                    ways.setdefault(f"len({key})", set()).add("take")
    names = {k for k, _, _ in candidates if k}
    found = {
        key: stmt
        for key, target, stmt in candidates
        if key
        and len(ways.get(key, ())) <= 1
        and len(ways.get(f"len({key})", ())) <= 1  # a stack pushed and popped in one call: a guard
        and _lasting(target, scope, facts, names, rebound=key not in grown)
    }
    found.update({local: found[key] for local, key in aliases.items() if key in found and local not in found})
    return found


def _flag(stmt: ast.AST) -> bool:
    """A lasting name set to True/False (a first-call flag) rather than counted."""
    return isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, bool)


def _reporting(stmt: ast.AST) -> bool:
    """A statement that only reports (a warning, a log line, a print) or does nothing."""
    if isinstance(stmt, ast.Pass):
        return True
    if isinstance(stmt, ast.Expr):
        if isinstance(stmt.value, ast.Constant):
            return True
        return isinstance(stmt.value, ast.Call) and dotted(stmt.value.func).rsplit(".", 1)[-1] in _REPORTERS
    return False


@dataclass
class _Flow:
    """What a function does around an `if`, to tell a branch that changes the call's result from
    one that only reports, keeps metrics or updates the state itself."""

    own: Sequence[ast.AST]
    params: set[str]
    fragment: bool  # the def is not visible: a name bound only in the branch may be a parameter
    updates: set[int]  # ids of the statements that move the state
    reports_only: bool  # the function does nothing but report (a warn-once or log-every-N helper)

    def later(self, name: str, after: int) -> bool:
        return any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) and n.lineno > after for n in self.own
        )

    def bound_outside(self, name: str, branch: ast.stmt) -> bool:
        start, end = branch.lineno, getattr(branch, "end_lineno", None) or branch.lineno
        return any(
            isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) and not start <= n.lineno <= end
            for n in self.own
        )

    def feeds_result(self, target: ast.AST, branch: ast.If) -> bool:
        """Whether what a branch sets or changes is used after it: a parameter, `self`, a local
        read later (or, in a fragment, a name the visible code does not bind elsewhere)."""
        root = state_root(target) if not isinstance(target, ast.Name) else target.id
        if not root:
            return False
        after = getattr(branch, "end_lineno", None) or branch.lineno
        if root in self.params or root == "self" or self.later(root, after):
            return True
        return self.fragment and isinstance(target, ast.Name) and not self.bound_outside(root, branch)


def _returns_value(block: Sequence[ast.stmt], canned: bool) -> bool:
    for stmt in block:
        for node in [stmt, *own_nodes(stmt)]:
            if isinstance(node, ast.Return) and node.value is not None:
                if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                    if not canned:
                        return True
                    if const_only(node.value) and not all(trivial(v) for v in literals(node.value) or [None]):
                        return True
    return False


def _acts(branch: ast.If, block: Sequence[ast.stmt], flow: _Flow) -> bool:
    """Whether an if-branch changes what the call does: returns a value, raises, returns early
    from a function that does more than report, or sets or changes something used after it."""
    if _returns_value(block, canned=False):
        return True
    for stmt in block:
        for node in [stmt, *own_nodes(stmt)]:
            if not isinstance(node, ast.stmt) or id(node) in flow.updates or _reporting(node):
                continue
            stops = isinstance(node, (ast.Return, ast.Continue, ast.Break))  # `continue`: this item left out
            if isinstance(node, ast.Raise) or (stops and not flow.reports_only):
                return True
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute):
                targets = [node.value.func.value]
            flat: list[ast.AST] = []
            for t in targets:
                if isinstance(t, (ast.Tuple, ast.List)):
                    flat.extend(t.elts)
                else:
                    flat.append(t)
            if any(flow.feeds_result(t, branch) for t in flat):
                return True
    return False


def _state_uses(own: Sequence[ast.AST], counters: dict[str, ast.AST], facts: Facts, flow: _Flow) -> Iterator[tuple[ast.AST, str]]:
    """Nodes where lasting state chooses what the call does: the test of an `if` whose branch acts
    (`_acts`; for a flag, one that returns a canned constant: a memo's "loaded" flag returns what
    it loaded), an index read by it, a return that compares or selects by it; a call of a
    counting function (facts.counter_fns) in any of these."""
    flags = {key for key, stmt in counters.items() if _flag(stmt)}
    for node in own:
        hit: ast.AST | None = None
        allowed = set(counters)
        if isinstance(node, ast.If) and node.lineno > 0:
            if any(_acts(node, block, flow) for block in (node.body, node.orelse)):
                hit = node.test
                if not any(_returns_value(block, canned=True) for block in (node.body, node.orelse)):
                    allowed -= flags
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            hit = node.slice
        elif isinstance(node, ast.Return) and node.value is not None:
            selects = (ast.Compare, ast.IfExp, ast.BinOp, ast.Subscript, ast.BoolOp)
            # the state itself handed back (`return _state[0]`: an id, a toggle's new setting) does not select
            hit = node.value if isinstance(node.value, selects) and state_key(node.value) not in allowed else None
        if hit is None:
            continue
        for sub in walk(hit, 300):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in facts.counter_fns:
                yield node, f"{sub.func.id}()"
                break
            if stats := _call_stats(sub):
                yield node, stats
                break
            if isinstance(sub, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) and (key := state_key(sub)) in allowed:
                if not isinstance(sub, ast.Name) or isinstance(sub.ctx, ast.Load):
                    yield node, key
                    break


_STATS = {"hits", "misses"}


def _call_stats(node: ast.AST) -> str:
    """A memo's count of calls (`f.cache_info().hits`, `.misses`): it grows with every call, so a
    result chosen by it changes from call to call (its size, `currsize`, caps the memo: not this)."""
    if isinstance(node, ast.Attribute) and node.attr in _STATS and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and func.attr == "cache_info" and not node.value.args:
            return f"{dotted(func)}().{node.attr}"
    return ""


def _flow(fn: ast.AST, own: Sequence[ast.AST], scope: _Scope, counters: dict[str, ast.AST]) -> _Flow:
    updates = {id(stmt) for stmt in counters.values()}
    quiet = (ast.If, ast.Global, ast.Nonlocal, ast.Return)
    stmts = [n for n in own if isinstance(n, ast.stmt)]
    reports = [n for n in stmts if _reporting(n) and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    reports_only = bool(reports) and all(_reporting(n) or isinstance(n, quiet) or id(n) in updates for n in stmts)
    return _Flow(own, scope.params | scope.mutable_defaults, scope.fragment, updates, reports_only)


def _state(memo: _Memo, unit: Unit, fn: ast.AST, name: str, facts: Facts) -> tuple[_Scope, dict[str, ast.AST]]:
    """The scope of a function and its lasting counters, worked out once."""
    if id(fn) not in memo:
        own = unit.own(fn)
        scope = _scope(fn, name, own)
        scope.aliases = _aliases(own, scope, facts)
        memo[id(fn)] = (scope, _counters(own, scope, facts))
    return memo[id(fn)]


def _counter_functions(units: Sequence[Unit], facts: Facts, memo: _Memo) -> None:
    """Functions that return a lasting count (`nonlocal n; n += 1; return n`), factories that
    return one, and the names bound to what a factory makes or to `itertools.count().__next__`."""
    factories: set[str] = set()
    for _ in range(2):  # a counter's def, then the factory around it
        for unit in units:
            for fn, name in unit.functions():
                returned = [n.value for n in unit.own(fn) if isinstance(n, ast.Return) and n.value is not None]
                keys = {state_key(v) for v in returned if isinstance(v, (ast.Name, ast.Attribute, ast.Subscript))} - {""}
                if keys and keys & set(_state(memo, unit, fn, name, facts)[1]):
                    facts.counter_fns.add(name)
                if any(isinstance(v, ast.Name) and v.id in facts.counter_fns for v in returned):
                    factories.add(name)
    for unit in units:
        for node in unit.nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Call, ast.Attribute)):
                value = node.value
                made = isinstance(value, ast.Call) and dotted(value.func) in factories
                ticks = isinstance(value, ast.Attribute) and value.attr == "__next__" and iterator_kind(value.value) == "count"
                if made or ticks:
                    facts.counter_fns.update(t.id for t in node.targets if isinstance(t, ast.Name))


def _per_call_state(ctx: Findings, unit: Unit, facts: Facts, memo: _Memo) -> None:
    path = unit.view.path
    note = "a result that changes with the number of calls"
    for fn, name in unit.functions():
        own = unit.own(fn)
        scope, counters = _state(memo, unit, fn, name, facts)
        counters = dict(counters)

        # values of itertools.count() taken into a local that then decides
        for node in own:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and dotted(node.value.func) == "next":
                args = node.value.args
                if args and _shared_iterator(args[0], scope, facts) == "count":
                    counters.update({state_key(t): node for t in node.targets if isinstance(t, ast.Name)})
        stats = any(_call_stats(n) for n in own)
        if counters or facts.counter_fns or stats:
            for use, key in _state_uses(own, counters, facts, _flow(fn, own, scope, counters)):
                where = unit.where(use) or (unit.where(counters[key]) if key in counters else None)
                if where is not None:
                    detail = f"{path}: {name or 'the function'} decides by {key}, which changes from call to call"
                    ctx.add("per_call_state", where, detail, note)
                    break
        for node in own:
            if not isinstance(node, ast.Call):
                continue
            if dotted(node.func) == "next" and node.args:
                stepped = node.args[0]
            elif not node.args and _ticker(node.func, scope, facts):
                stepped = node.func  # `_next()` of `_next = iter([...]).__next__`
            else:
                continue
            source = state_key(stepped)
            kind = _shared_iterator(stepped, scope, facts)
            decides = kind in ("count", "cycle") and _decides(unit, node)
            # a module-level cycle feeding the computation (`d.quantize(exp, next(_ROUNDINGS))`): a
            # different answer each call; one handed out or passed as a style keyword is a style cycle
            turns = kind == "cycle" and source in facts.module_names and _feeds(unit, node)
            if kind == "canned" or decides or turns:
                if (where := unit.where(node)) is not None:
                    ctx.add("per_call_state", where, f"{path}: takes the next of canned answers from {source}", note)


def _shared_iterator(source: ast.AST, scope: _Scope, facts: Facts) -> str:
    """The kind of a lasting iterator `source` names (facts.iterators); "" for one the call made
    itself. An instance's iterator counts only when it holds canned constants."""
    key = state_key(source)
    kind = facts.iterators.get(key, "")
    root = state_root(source) if not isinstance(source, ast.Name) else source.id
    if root == "self":
        return kind if kind == "canned" else ""
    if isinstance(source, ast.Name) and source.id in scope.iterator_defaults:
        return scope.iterator_defaults[source.id]  # made once, when the def ran: shared by every call
    if root in scope.params or root in scope.local:
        return ""
    return kind


def _ticker(func: ast.AST, scope: _Scope, facts: Facts) -> bool:
    """Whether a call with no arguments steps a lasting iterator: a name bound to its `__next__`."""
    if isinstance(func, ast.Name) and func.id in scope.iterator_defaults:
        return True
    return bool(state_key(func)) and state_key(func) in facts.tickers


def _decides(unit: Unit, node: ast.AST) -> bool:
    """Whether a value flows straight into a comparison, a modulo, an index or a test (of an
    `if`, a `while`, a conditional expression), not into a call or a string it only becomes part of."""
    child = node
    for parent in islice(unit.ancestors(node), 4):
        if isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mod) and _formats(parent.left):
            return False  # `"_%d" % next(_ids)`: an id written into a string, not a modulo
        if isinstance(parent, ast.Compare) or (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Mod)):
            return True
        if isinstance(parent, (ast.IfExp, ast.If, ast.While)):
            return parent.test is child
        if isinstance(parent, ast.Subscript):
            return parent.slice is child and isinstance(parent.ctx, ast.Load)
        if isinstance(parent, (ast.stmt, ast.Call, ast.JoinedStr, ast.FormattedValue)):
            return False
        child = parent
    return False


def _formats(node: ast.AST) -> bool:
    """The left operand of a `%` that formats a string: a string constant or an f-string."""
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))


_FORMATTERS = {"format", "str", "repr", "join", "print", "append", "add", "extend"} | _REPORTERS


def _feeds(unit: Unit, node: ast.AST) -> bool:
    """Whether a value is an operand of the computation: a positional argument of a call (not a
    formatting, reporting or collecting one), a keyword argument other than a style one, an
    operand of arithmetic."""
    child: ast.AST = node
    for parent in islice(unit.ancestors(node), 3):
        if isinstance(parent, ast.keyword):
            if (parent.arg or "") in _STYLE_WORDS:
                return False
        elif isinstance(parent, ast.Call):
            if child is parent.func:
                return False
            return dotted(parent.func).rsplit(".", 1)[-1] not in _FORMATTERS
        elif isinstance(parent, ast.BinOp):
            return not (isinstance(parent.op, ast.Mod) and isinstance(parent.left, (ast.Constant, ast.JoinedStr)))
        else:
            return False
        child = parent
    return False


_Memo = dict[int, tuple[_Scope, dict[str, ast.AST]]]  # a function's scope and counters, by id


def per_call_findings(ctx: Findings, units: Sequence[Unit], facts: Facts) -> None:
    """per_call_state findings in the parsed pieces of one file."""
    memo: _Memo = {}
    _counter_functions(units, facts, memo)
    for unit in units:
        _per_call_state(ctx, unit, facts, memo)
