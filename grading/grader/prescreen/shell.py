"""What a command line runs: its simple commands, found inside wrappers, shells, interpreters,
aliases and functions.

Pure: no Django. `Shell(...).run(script)` yields every simple command a script runs — words with
quotes removed, redirection targets, the heredoc or here-string it reads — after unwrapping
``sudo``/``env``/``timeout``/``xargs``/``nohup``…, ``bash -c '…'``, ``eval``, a heredoc or pipe fed
to ``bash``/``python``, ``python -c`` code that calls ``subprocess``/``os.system`` (read with
``ast``: its calls that open, copy or fetch become pseudo commands ``view``/``create``/``cp``/
``curl``; ``shutil.which(x)`` is ``$(which x)``; a module imported after ``sys.path.insert`` of a
directory is viewed there; the calls of a git library are the git commands they run:
``repo.iter_commits('--all')`` is ``git rev-list --all``), the string literals of other interpreters' inline code (``node -e``,
``ruby -e``, ``perl -ne``, ``php -r``: a command in one is run, an absolute path viewed, a URL
fetched), the commands ``find … -exec`` runs on the files it selects, a script the agent wrote
earlier and runs now, and aliases, functions and variables defined in an earlier turn (one
`Shell` lives for a whole rollout).

Bounded on any input: a script is cut at MAX_SCRIPT characters, unwrapping stops at MAX_DEPTH,
a Shell reads at most MAX_TOTAL characters in all, Python source goes to ``ast`` only below
MAX_SCRIPT characters (RecursionError, MemoryError and SyntaxError caught), and the few regexes
have no nested quantifiers.

>>> sh = Shell()
>>> [s.argv for s in sh.run("alias g=git; sudo -E bash -c 'g log --all | head'")]
[['alias', 'g=git'], ['bash', '-c', 'g log --all | head'], ['git', 'log', '--all'], ['head']]
>>> [(s.argv, s.via) for s in sh.run('python - <<EOF\\nimport os\\nos.system("git reflog")\\nEOF')][-1]
(['git', 'reflog'], ('python', 'os.system'))
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

MAX_SCRIPT = 64_000  # characters of one script (a command, a -c string, a heredoc body)
MAX_TOTAL = 4_000_000  # characters one Shell reads over a rollout
MAX_DEPTH = 4  # unwrapping levels (bash -c inside python -c inside an alias …)
MAX_NAMES = 200  # aliases, functions, variables and remembered files, each
MAX_VALUE = 4_000  # characters of an alias, function body or variable kept
MAX_MEMO = 400_000  # characters of Python source whose parse a Shell remembers

SHELLS = {"bash", "sh", "zsh", "dash", "ksh", "ash", "busybox"}
_WRAPPERS = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group"},
    "doas": {"-u", "-C"},
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "nohup": set(),
    "time": {"-f", "-o"},
    "exec": {"-a"},
    "command": set(),
    "builtin": set(),
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p"},
    "stdbuf": {"-i", "-o", "-e"},
    "unbuffer": set(),
    "setsid": set(),
    "chronic": set(),
    "catchsegv": set(),
    "flock": {"-w", "-E"},
    "watch": {"-n", "--interval", "-d"},
    "xargs": {"-I", "-i", "-n", "-P", "-L", "-l", "-d", "-E", "-e", "-s", "-a", "--max-args", "--max-procs", "--delimiter"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "strace": {"-e", "-o", "-p", "-s"},
    "ltrace": {"-e", "-o"},
}
_MULTICALL = {"busybox", "toybox"}  # one binary whose first argument names the applet it runs
_TAKES_ONE = {"timeout", "flock"}  # a positional argument before the command (duration, lock file)
_PLAIN = re.compile(r"[^\s\\'\"$`#;&|()<>]+")  # a run of characters the lexer copies as they are
_QUOTED = re.compile(r'[^"\\$]+')  # the same inside double quotes
_KEYWORDS = {"{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "esac", "in"}
_PYTHON = re.compile(r"(?:python|pypy|ipython)[0-9.]*")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_FUNCTION_OPEN = re.compile(r"\(\s{0,20}\)\s{0,20}\{|\bfunction\s{1,20}[A-Za-z_][\w.-]{0,60}\s{0,20}\{")
_FUNCTION_NAME = re.compile(r"([A-Za-z_][\w.-]{0,60})\s{0,20}$")
_FUNCTION_BODY = re.compile(r"[^{}]{0,4000}\}")


@dataclass
class Simple:
    """One simple command: its words, where its output goes and what it reads on stdin."""

    argv: list[str]
    text: str = ""  # the command as written (a word-joined form when unwrapped from Python)
    via: tuple[str, ...] = ()  # what it was found inside: "bash -c", "alias g", "python -c", "os.system"
    writes: list[str] = field(default_factory=list)  # > >> &> >| targets
    reads: list[str] = field(default_factory=list)  # < sources
    stdin: str | None = None  # a heredoc or here-string body
    exported: list[str] = field(default_factory=list)  # NAME=value that `export`/`declare -x` set


@dataclass
class _Raw:
    words: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    stdin: str | None = None
    subs: list[str] = field(default_factory=list)  # $(…) and `…` bodies
    start: int = 0
    end: int = 0


def _match_paren(s: str, i: int) -> int:
    """Index just past the ')' that closes the '(' at s[i], quotes respected; len(s) if none."""
    depth, quote, n = 0, "", len(s)
    while i < n:
        c = s[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def lex(script: str) -> list[list[_Raw]]:
    """Pipelines of raw simple commands of a shell script (operators, quotes, $(…), backticks,
    comments, redirections and heredocs understood; no expansion)."""
    pipelines: list[list[_Raw]] = [[]]
    cur = _Raw()
    word: list[str] | None = None
    expect = ""  # the next word is a redirection target: "w", "r", "h", "hq", "s"
    heredocs: list[tuple[_Raw, str, bool]] = []
    i, n = 0, len(script)

    def end_word() -> None:
        nonlocal word, expect
        if word is None:
            return
        w = "".join(word)
        word = None
        if expect == "w":
            cur.writes.append(w)
        elif expect == "r":
            cur.reads.append(w)
        elif expect in ("h", "hq"):
            heredocs.append((cur, w, expect == "hq"))
        elif expect == "s":
            cur.stdin = w
        elif expect != "dup":
            cur.words.append(w)
        expect = ""

    def end_command(pipe: bool) -> None:
        nonlocal cur
        end_word()
        cur.end = i
        if cur.words or cur.writes or cur.reads or cur.stdin is not None or cur.subs:
            pipelines[-1].append(cur)
        if not pipe and pipelines[-1]:
            pipelines.append([])
        cur = _Raw(start=i + 1)

    def add(text: str) -> None:
        nonlocal word
        if word is None:
            word = []
        word.append(text)

    while i < n:
        c = script[i]
        if c == "\\":
            if i + 1 < n and script[i + 1] != "\n":
                add(script[i + 1])
            i += 2
            continue
        if c == "'":
            j = script.find("'", i + 1)
            j = n if j < 0 else j
            add(script[i + 1 : j])
            if expect == "h":
                expect = "hq"
            i = j + 1
            continue
        if c == '"':
            j, part = i + 1, []
            while j < n and script[j] != '"':
                if script[j] == "\\" and j + 1 < n:
                    part.append(script[j + 1] if script[j + 1] in '"\\$`' else script[j : j + 2])
                    j += 2
                elif script.startswith("$(", j):
                    k = _match_paren(script, j + 1)
                    cur.subs.append(script[j + 2 : k - 1])
                    part.append(script[j:k])
                    j = k
                else:
                    m = _QUOTED.match(script, j)
                    chunk = m.group(0) if m else script[j]
                    part.append(chunk)
                    j += len(chunk)
            add("".join(part))
            if expect == "h":
                expect = "hq"
            i = j + 1
            continue
        if c == "$" and script.startswith("$(", i):
            k = _match_paren(script, i + 1)
            cur.subs.append(script[i + 2 : k - 1])
            add(script[i:k])
            i = k
            continue
        if c == "$" and script.startswith("$'", i):
            j = i + 2
            while j < n and script[j] != "'":
                j += 2 if script[j] == "\\" else 1
            add(script[i + 2 : j].encode("utf-8", "replace").decode("unicode_escape", "replace"))
            i = j + 1
            continue
        if c == "`":
            j = script.find("`", i + 1)
            j = n if j < 0 else j
            cur.subs.append(script[i + 1 : j])
            add(script[i : j + 1])
            i = j + 1
            continue
        if c in " \t\r":
            end_word()
            i += 1
            continue
        if c == "#" and word is None:
            j = script.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "\n":
            end_command(False)
            i += 1
            for raw, terminator, _quoted in heredocs:
                lines, found = [], False
                while i < n:
                    j = script.find("\n", i)
                    j = n if j < 0 else j
                    line = script[i:j]
                    i = j + 1
                    if line.strip() == terminator:
                        found = True
                        break
                    lines.append(line)
                raw.stdin = "\n".join(lines)
                if not found:
                    break
            heredocs.clear()
            continue
        if c in ";&|()":
            two = script[i : i + 2]
            if two in ("&>",):
                end_word()
                expect = "w"
                i += 3 if script.startswith("&>>", i) else 2
                continue
            pipe = c == "|" and two != "||"
            end_command(pipe)
            i += 2 if two in ("&&", "||", "|&", ";;") else 1
            continue
        if c in "<>":
            if word is not None and "".join(word).isdigit():
                word = None  # a file descriptor: 2>, 1>>
            end_word()
            if script.startswith("<<<", i):
                expect, i = "s", i + 3
            elif script.startswith("<<", i):
                expect, i = "h", i + (3 if script.startswith("<<-", i) else 2)
            elif script.startswith((">&", "<&"), i):
                expect, i = "dup", i + 2
            elif script.startswith((">>", ">|", "<>"), i):
                expect, i = ("r" if c == "<" else "w"), i + 2
            else:
                expect, i = ("r" if c == "<" else "w"), i + 1
            continue
        m = _PLAIN.match(script, i)
        chunk = m.group(0) if m else c
        add(chunk)
        i += len(chunk)
    end_command(False)
    return [p for p in pipelines if p]


def _py_name(node: ast.AST) -> str:
    parts: list[str] = []
    for _ in range(8):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            break
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            break
    return ".".join(reversed(parts))


def _py_str(node: ast.AST | None) -> str | None:
    """A string an expression surely starts as: a constant, an f-string's constant parts
    ('?' for the rest), a concatenation, os.path.join of such."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "?" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        left, right = _py_str(node.left), _py_str(node.right)
        if left is not None or right is not None:
            sep = "/" if isinstance(node.op, ast.Div) else ""
            return f"{left if left is not None else '?'}{sep}{right if right is not None else '?'}"
    if isinstance(node, ast.Call) and _py_name(node.func) in ("shutil.which", "which") and node.args:
        program = _py_str(node.args[0])
        return f"$(which {program})" if program is not None else None  # the program's path, as the shell finds it
    if isinstance(node, ast.Call) and _py_name(node.func).endswith(("path.join", "Path", "PurePath", "PosixPath")):
        parts = [_py_str(a) for a in node.args]
        if any(p is not None for p in parts):
            return "/".join(p if p is not None else "?" for p in parts)
    return None


_PY_RUN = ("system", "popen", "getoutput", "getstatusoutput", "check_output", "check_call", "call", "run", "Popen")
_PY_RUN_MODULES = ("subprocess", "os", "sp", "commands", "sh")
_PY_COPY = ("copy", "copy2", "copyfile", "copytree", "move", "copyfileobj")
_PY_LIST = ("listdir", "scandir", "walk", "glob", "iglob", "rglob", "iterdir")
_PY_FETCH = ("urlopen", "urlretrieve", "get", "post", "request", "stream", "Request")
_PY_FETCH_MODULES = ("urllib", "request", "requests", "httpx", "http", "urllib3", "aiohttp")
_PY_WRITES = {
    "write",
    "writelines",
    "write_text",
    "write_bytes",
    "copy",
    "copy2",
    "copyfile",
    "copytree",
    "symlink",
    "symlink_to",
    "replace",
    "rename",
    "move",
}
# The last name of every call _python_call turns into a command (each of its branches asks for one).
_PY_CALLS = frozenset(
    {*_PY_RUN, "open", "read_text", "read_bytes", "write_text", "write_bytes", "touch", "unlink", "chmod", "symlink_to"}
    | {*_PY_COPY, "symlink", "remove", "rename", "replace", *_PY_LIST, *_PY_FETCH}
)
_PY_NODES = (ast.Call, ast.Attribute, ast.Import, ast.ImportFrom)  # what python() reads of a tree
_PY_ATTRS = ("__file__", "__path__", "tags", "refs", "references")  # attributes python() reads (the rest: ref lists)
MAX_NODES = 20_000  # nodes of one Python tree read, breadth first


_PY_CALL_NAME = re.compile(r"\b(?:" + "|".join(sorted(_PY_CALLS | _PY_WRITES)) + r")\b")  # literal words: linear
# Git driven from Python through a library (GitPython, pygit2, dulwich, sh's `git`): its calls are
# the git commands they run. A command proxy (`repo.git.log('--all')`, `git.Git('.').show(…)`)
# runs its method's name; the rest of the API maps onto the commands it stands for.
_GIT_LIBRARIES = {"git", "pygit2", "dulwich"}
_GIT_LIBRARY_WORD = re.compile(r"\b(?:git|pygit2|dulwich)\b")
_GIT_API = {
    "iter_commits": "rev-list",
    "iter_parents": "rev-list",
    "walk": "rev-list",
    "commit": "show",
    "tree": "ls-tree",
    "rev_parse": "rev-parse",
    "revparse_single": "rev-parse",
    "revparse": "rev-parse",
    "revparse_ext": "rev-parse",
    "lookup_reference": "rev-parse",
    "lookup_reference_dwim": "rev-parse",
    "resolve_refish": "rev-parse",
    "merge_base": "merge-base",
    "clone_from": "clone",
    "clone_repository": "clone",
    "ls_remote": "ls-remote",
    "listall_references": "for-each-ref",
    "listall_reference_objects": "for-each-ref",
    "listall_branches": "branch -a",
    "branch_list": "branch -a",
    "tag_list": "tag -l",
}
_GIT_REMOTE_CALLS = ("fetch", "pull", "update")  # a remote's: `repo.remotes.origin.fetch()`
_STRING_HEADS = ("git", "gh", "curl", "wget", "pip", "pip3", "cat", "sed", "ln", "cp")  # what _python_strings runs


def _may_run(source: str) -> bool:
    """False when python() surely finds nothing in `source`, parsed or not: no call it acts on
    (ASCII source without any of their names as a word; Python folds other identifiers to
    ASCII ones, so those are always parsed) and no string literal _python_strings would read."""
    if not source.isascii() or _PY_CALL_NAME.search(source) or _GIT_LIBRARY_WORD.search(source):
        return True
    if "pip" in source and ("run_module" in source or "main" in source):  # pip's entry point run from Python
        return True
    for m in _PY_STRING.finditer(source):
        text = m.group(1) or m.group(2) or ""
        if (text.split(" ", 1)[0] in _STRING_HEADS and " " in text) or (text.startswith(("/", "~")) and " " not in text):
            return True
    return False


def _py_nodes(source: str) -> list[ast.AST] | None:
    """The calls, attributes and imports among the first MAX_NODES nodes of `source`'s tree in
    ast.walk's (breadth-first) order, or None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None
    found: list[ast.AST] = []
    queue: list[ast.AST] = [tree]  # ast.walk's order: level by level, each node's children in field order
    for node in islice(queue, MAX_NODES):  # grows as it goes, never past MAX_NODES
        if isinstance(node, _PY_NODES) and (not isinstance(node, ast.Attribute) or node.attr in _PY_ATTRS):
            found.append(node)
        elif isinstance(node, ast.Subscript) and _ref_name(node.slice) is not None:
            found.append(node)  # `repo.refs[b"refs/remotes/origin/main"]`: a ref looked up by name
        if len(queue) >= MAX_NODES:
            continue
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                queue.append(value)
            elif isinstance(value, list):
                queue.extend(item for item in value if isinstance(item, ast.AST))
    return found


# any length, so that a short literal ('fs') keeps the quotes after it paired
_PY_STRING = re.compile(r"'([^'\\\n]{0,2000})'|\"([^\"\\\n]{0,2000})\"")
# Interpreters whose inline code (`node -e`, `ruby -e`, `perl -ne`, `php -r`) is read for the
# commands and paths its string literals hold, as unparsed Python is: a flag that takes the code.
_INLINE_CODE = {
    "node": ("-e", "-p", "--eval", "--print"),
    "nodejs": ("-e", "-p", "--eval", "--print"),
    "bun": ("-e", "--eval", "-p", "--print"),
    "deno": ("eval",),
    "ruby": ("-e",),
    "perl": ("-e", "-E"),
    "php": ("-r",),
    "Rscript": ("-e",),
    "lua": ("-e",),
    "osascript": ("-e",),
}


_SWITCH_BUNDLE = re.compile(r"-[0-9acdilnpstuvwyzTUWX]{0,8}[eE]")


def _inline_code(argv: list[str]) -> str | None:
    """The code an interpreter's flag hands it (`-e CODE`; perl's and ruby's bundled `-ne`,
    `-lpe`), else None."""
    flags = _INLINE_CODE.get(os.path.basename(argv[0]), ())
    bundles = os.path.basename(argv[0]) in ("perl", "ruby")
    for k, arg in enumerate(argv[1:40], start=1):
        # a bundle of switches that take no value (`-lne`, `-pi.bak -e`); `-MLWP::Simple` loads a module
        takes = arg in flags or (bundles and _SWITCH_BUNDLE.fullmatch(arg) is not None)
        if takes and k + 1 < len(argv):
            return argv[k + 1]
    return None


def _git_library_names(nodes: list[ast.AST]) -> tuple[set[str], set[str]]:
    """Names bound to a git library (`import git`, `from dulwich import porcelain`, `from sh import
    git`) and names bound to any other module (`import numpy as np`: `np.diff` runs no git)."""
    gits: set[str] = set()
    others: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names[:50]:
                root = alias.name.split(".", 1)[0]
                (gits if root in _GIT_LIBRARIES else others).add(alias.asname or root)
        elif isinstance(node, ast.ImportFrom):
            root = (node.module or "").split(".", 1)[0]
            for alias in node.names[:50]:
                library = root in _GIT_LIBRARIES or (root in ("sh", "plumbum") and alias.name == "git")
                (gits if library else others).add(alias.asname or alias.name)
    return gits, others - gits


def _git_words(node: ast.Call) -> tuple[list[str], dict[str, list[str]]]:
    """A git library call's string arguments (lists flattened, '?' for what is not a string) and
    its keywords as git options, as GitPython spells them: `max_count=8` is `--max-count=8`,
    `n=5` is `-n 5`, `all=True` is `--all`."""
    words: list[str] = []
    for arg in node.args[:40]:
        items = arg.elts[:200] if isinstance(arg, (ast.List, ast.Tuple)) else [arg]
        words += [_py_str(item) or "?" for item in items]
    keywords: dict[str, list[str]] = {}
    for keyword in node.keywords[:40]:
        if keyword.arg is None:
            continue
        value = keyword.value
        if isinstance(value, ast.Constant) and value.value in (None, False):
            continue
        if isinstance(value, (ast.List, ast.Tuple)):
            keywords[keyword.arg] = [_py_str(item) or "?" for item in value.elts[:200]]
            continue
        text = "" if isinstance(value, ast.Constant) and value.value is True else _py_str(value)
        if text is None:
            text = str(value.value) if isinstance(value, ast.Constant) else "?"
        keywords[keyword.arg] = [text]
    return words, keywords


def _git_options(keywords: dict[str, list[str]], skip: tuple[str, ...] = ()) -> list[str]:
    out: list[str] = []
    for name, values in keywords.items():
        if name in skip:
            continue
        flag = f"-{name}" if len(name) == 1 else "--" + name.replace("_", "-")
        for value in values:
            out += [flag] if value == "" else ([flag, value] if len(name) == 1 else [f"{flag}={value}"])
    return out


def _git_library_call(node: ast.Call, fname: str, gits: set[str], others: set[str]) -> list[str] | None:
    """The git command a call of a git library runs, as argv, else None."""
    parts = fname.split(".") if fname else []
    if not parts or parts[0] in others or (len(parts) == 1 and parts[0] not in _GIT_API and parts[0] not in _GIT_REMOTE_CALLS):
        return None
    last, receiver = parts[-1], parts[:-1]
    words, keywords = _git_words(node)
    if last == "execute" and words[:1] == ["git"]:  # repo.git.execute(["git", "log", "--all"])
        return words
    if receiver and receiver[-1].lower() == "git" and not last.startswith("_") and not last[:1].isupper():  # a command proxy
        if receiver == ["git"] and "git" not in gits:
            return None
        return ["git", last.replace("_", "-"), *_git_options(keywords), *words]
    if receiver[:1] == ["porcelain"] or (len(receiver) == 2 and receiver[0] == "dulwich"):  # porcelain.fetch(repo, …)
        return ["git", last.replace("_", "-"), *_git_options(keywords), *words[1:]]
    if last in _GIT_REMOTE_CALLS and (
        not receiver or any(p.lower() in ("remote", "remotes", "origin", "upstream") for p in receiver)
    ):
        remote = receiver[-1] if len(receiver) >= 2 and receiver[-2] == "remotes" else ""
        sub = ["remote", "update"] if last == "update" else [last]
        return ["git", *sub, *([remote] if remote else []), *_git_options(keywords), *words]
    if last == "diff" and any(p in ("commit", "head", "index", "tree") for p in receiver):
        return ["git", "diff", *[w for w in words if w != "?"]]  # repo.head.commit.diff('origin/main')
    command = _GIT_API.get(last)
    if command is None:
        return None
    sub = command.split()
    if sub == ["rev-list"]:
        revs = words[:1] or keywords.get("rev", [])
        paths = words[1:2] or keywords.get("paths", [])
        return ["git", "rev-list", *_git_options(keywords, ("rev", "paths")), *(revs or ["HEAD"]), "--", *paths]
    if sub == ["clone"] or (sub == ["show"] and "index" in receiver):  # index.commit("message") writes a commit
        return ["git", "clone", *words] if sub == ["clone"] else None
    return ["git", *sub, *_git_options(keywords), *words]


def _ref_name(node: ast.AST) -> str | None:
    """A ref spelled as a str or bytes literal: `"refs/remotes/origin/main"`, `b"origin/main"`, `"v1.2"`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and 0 < len(node.value) <= 200:
        value = node.value.decode("utf-8", "replace") if isinstance(node.value, bytes) else node.value
        return value if "/" in value or value[:1].isalnum() else None
    return None


_REF_TABLES = {"refs", "references", "heads", "tags", "branches", "remotes", "remote_refs"}


def _git_library_lookup(node: ast.Subscript, gits: set[str], others: set[str]) -> list[str] | None:
    """The `git rev-parse REF` a git library's lookup of a ref by name stands for: `repo.refs[b"…"]`
    (dulwich), `repo.references["…"]`/`repo.branches["…"]` (pygit2), `repo[b"refs/…"]`."""
    ref = _ref_name(node.slice)
    name = _py_name(node.value)
    parts = name.split(".") if name else []
    if ref is None or not parts or parts[0] in others:
        return None
    if parts[-1] in _REF_TABLES or (ref.startswith("refs/") and len(parts) == 1):
        return ["git", "rev-parse", ref]
    return None


def _git_library_refs(node: ast.Attribute, others: set[str]) -> list[str] | None:
    """The ref listing a git library's attribute stands for: `repo.tags` (`git tag -l`),
    `repo.refs`/`references`, a remote's `refs` (`git branch -r`)."""
    name = _py_name(node)
    parts = name.split(".") if name else [node.attr]
    if parts[0] in others or len(parts) < 2:
        return None
    if node.attr == "tags":
        return ["git", "tag", "-l"]
    if node.attr == "refs" and any(p in ("remote", "remotes", "origin", "upstream") for p in parts[:-1]):
        return ["git", "branch", "-r"]
    return ["git", "for-each-ref"]


_HTTP_CONNECTIONS = {"HTTPSConnection", "HTTPConnection", "HTTPSConnectionPool", "HTTPConnectionPool", "connection_from_host"}
_ARGV_LIST = re.compile(r"sys\.argv\s{0,4}=\s{0,4}\[([^\]\n]{0,2000})\]")


def _pip_main(node: ast.Call, fname: str, source: str) -> list[str] | None:
    """The pip command pip's own entry point runs from Python: `pip.main(['install', …])`,
    `pip._internal.cli.main.main([…])`, `runpy.run_module('pip')` after `sys.argv = ['pip', …]`."""
    parts = fname.split(".")
    if parts[-1] == "main" and "pip" in parts[:-1] and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
        return ["pip", *[_py_str(e) or "?" for e in node.args[0].elts[:200]]]
    if parts[-1] in ("run_module", "_run_module_as_main") and node.args and _py_str(node.args[0]) == "pip":
        if m := _ARGV_LIST.search(source[:MAX_SCRIPT]):
            words = [a or b for a, b in _PY_STRING.findall(m.group(1))]
            return ["pip", *words[1:]] if words else ["pip"]
        return ["pip"]
    return None


def _inplace(node: ast.Call) -> bool:
    return any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in node.keywords)


_IN_PLACE_EDITORS = {"ed", "red", "ex"}


def _edits_in_place(argv: list[str]) -> bool:
    """Whether a command rewrites the files it names: `sed -i`, `perl -pi`, `ed`/`ex`."""
    prog = os.path.basename(argv[0]) if argv else ""
    if prog in _IN_PLACE_EDITORS:
        return True
    flags = [a for a in argv[1:40] if a.startswith("-") and not a.startswith("--")]
    if prog == "sed":
        return any(a.startswith("-i") or (len(a) < 6 and "i" in a[1:] and "e" not in a[1:]) for a in flags) or (
            "--in-place" in argv[1:40]
        )
    return prog in ("perl", "ruby") and any("i" in a[1:] for a in flags)


class Shell:
    """The shell state of one rollout: aliases, functions, variables and files written."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.functions: dict[str, str] = {}
        self.variables: dict[str, str] = {}
        self.files: dict[str, str] = {}  # a script written by a heredoc, by path and by name
        self.budget = MAX_TOTAL
        # Python source already read (a script run again and again): the nodes python() acts on,
        # None when it does not parse; at most MAX_MEMO characters of source are remembered.
        self._read: dict[str, list[ast.AST] | None] = {}
        self._read_size = 0

    # -- shell ---------------------------------------------------------------------------

    def run(self, script: str, *, depth: int = 0, via: tuple[str, ...] = ()) -> Iterator[Simple]:
        """Every simple command `script` runs (see the module docstring)."""
        if depth > MAX_DEPTH or self.budget <= 0 or not script:
            return
        script = script[:MAX_SCRIPT]
        self.budget -= len(script)
        for opening in _FUNCTION_OPEN.finditer(script):  # name() { body; } and function name { body; }
            text = opening.group(0)
            if text.startswith("function"):
                name = text[len("function") :].strip(" \t\n{")
            elif m := _FUNCTION_NAME.search(script, max(0, opening.start() - 81), opening.start()):
                name = m.group(1)
            else:
                continue
            if body := _FUNCTION_BODY.match(script, opening.end()):
                self._remember(self.functions, name, body.group(0)[:-1])
        for pipeline in lex(script):
            previous: _Raw | None = None
            for raw in pipeline:
                for sub in raw.subs:
                    yield from self.run(sub, depth=depth + 1, via=(*via, "$(…)"))
                text = script[raw.start : raw.end].strip()
                yield from self._simple(raw, text, previous, depth, via)
                previous = raw

    def _remember(self, table: dict[str, str], name: str, value: str) -> None:
        if name in table or len(table) < MAX_NAMES:
            table[name] = value[:MAX_VALUE]

    def _expand(self, word: str) -> str:
        if "$" not in word or not self.variables:
            return word
        return _VAR.sub(lambda m: self.variables.get(m.group(1) or m.group(2), m.group(0)), word)[:MAX_VALUE]

    def _file(self, path: str) -> str | None:
        return self.files.get(posixpath.normpath(path)) or self.files.get(posixpath.basename(path))

    def _simple(self, raw: _Raw, text: str, previous: _Raw | None, depth: int, via: tuple[str, ...]) -> Iterator[Simple]:
        argv = [self._expand(w) for w in raw.words]
        while argv and argv[0] in _KEYWORDS:
            argv.pop(0)
        exported = []
        while argv and _ASSIGN.match(argv[0]):
            name, _, value = argv.pop(0).partition("=")
            if not argv:  # NAME=value alone: a shell variable
                self._remember(self.variables, name, value)
        if argv[:1] in (["export"], ["declare"], ["typeset"], ["readonly"]):
            for arg in argv[1:]:
                if _ASSIGN.match(arg):
                    name, _, value = arg.partition("=")
                    self._remember(self.variables, name, value)
                    exported.append(arg)
        if argv[:1] == ["alias"]:
            for arg in argv[1:]:
                if _ASSIGN.match(arg) or re.match(r"[\w.-]+=", arg):
                    name, _, value = arg.partition("=")
                    self._remember(self.aliases, name, value)
        for target in raw.writes:  # cat > x.sh <<EOF …: remember the script
            if raw.stdin is not None and argv[:1] in (["cat"], ["tee"]):
                self._remember(self.files, posixpath.normpath(target), raw.stdin)
                self._remember(self.files, posixpath.basename(target), raw.stdin)
            elif argv[:1] in (["echo"], ["printf"]):  # printf 'pkg>=2\n' > req.txt: remember what it printed
                printed = " ".join(w for w in argv[1:] if not w.startswith("-")).replace("\\n", "\n")
                self._remember(self.files, posixpath.normpath(target), printed)
                self._remember(self.files, posixpath.basename(target), printed)
        if argv[:1] == ["tee"] and raw.stdin is not None:
            for target in argv[1:]:
                if not target.startswith("-"):
                    self._remember(self.files, posixpath.normpath(target), raw.stdin)
        simple = Simple(argv, text[:2000], via, raw.writes, raw.reads, raw.stdin, exported)
        yield from self._unwrap(simple, previous, depth)

    def _stdin_of(self, simple: Simple, previous: _Raw | None) -> str | None:
        """What a command reads on stdin: its heredoc, or what the command piped into it prints."""
        if simple.stdin is not None:
            return simple.stdin
        if previous is None:
            return (simple.reads and self._file(simple.reads[0])) or None
        words = previous.words
        if previous.stdin is not None and words[:1] in (["cat"], ["tee"], []):
            return previous.stdin
        if words[:1] in (["echo"], ["printf"]):
            return " ".join(w for w in words[1:] if not w.startswith("-")).replace("\\n", "\n")
        if words[:1] == ["cat"] and len(words) == 2:
            return self._file(words[1])
        return None

    def _unwrap(self, simple: Simple, previous: _Raw | None, depth: int) -> Iterator[Simple]:
        argv, via = simple.argv, simple.via
        for _ in range(8):  # wrappers, one after another: sudo env timeout 60 …
            head = os.path.basename(argv[0]) if argv else ""
            if head not in _WRAPPERS:
                break
            valued, rest, positional = _WRAPPERS[head], argv[1:], head in _TAKES_ONE
            while rest and (rest[0].startswith("-") or (head in ("env", "sudo") and _ASSIGN.match(rest[0]))):
                rest = rest[2:] if rest[0] in valued else rest[1:]
            if positional and rest:
                rest = rest[1:]
            via = (*via, head)
            argv = rest
        if argv and os.path.basename(argv[0]) in _MULTICALL and argv[1:2] and argv[1] not in SHELLS:
            argv, via = argv[1:], (*via, os.path.basename(argv[0]))  # `busybox sed -i …`: the applet it names
        if not argv:
            if simple.argv or simple.reads or simple.writes:
                yield simple  # `done < /eval.sh`, `} > f`: a compound command's redirections
            return
        simple = Simple(argv, simple.text, via, simple.writes, simple.reads, simple.stdin, simple.exported)
        head = os.path.basename(argv[0])
        if depth < MAX_DEPTH:
            if head in self.aliases and not any(v == f"alias {head}" for v in via):
                yield from self.run(f"{self.aliases[head]} {_join(argv[1:])}", depth=depth + 1, via=(*via, f"alias {head}"))
                return
            if head in self.functions and not any(v == f"function {head}" for v in via):
                body = self.functions[head].replace('"$@"', _join(argv[1:])).replace("$@", _join(argv[1:]))
                body = body.replace("$*", _join(argv[1:]))
                for k, arg in enumerate(argv[1:10], start=1):
                    body = body.replace(f'"${k}"', _join([arg])).replace(f"${k}", _join([arg]))
                yield from self.run(body, depth=depth + 1, via=(*via, f"function {head}"))
                return
            if head == "eval":
                yield simple
                yield from self.run(" ".join(argv[1:]), depth=depth + 1, via=(*via, "eval"))
                return
            if head in SHELLS or head == "su":
                yield simple
                yield from self._shell(simple, previous, depth)
                return
            if head in ("source", "."):
                yield simple
                if len(argv) > 1 and (sourced := self._file(argv[1])) is not None:
                    yield from self.run(sourced, depth=depth + 1, via=(*via, f"source {argv[1]}"))
                return
            if _PYTHON.fullmatch(head):
                yield simple
                yield from self._python(simple, previous, depth)
                return
            if head == "find":
                yield simple
                yield from self._find_exec(simple, depth)
                return
            if head in _INLINE_CODE and (code := _inline_code(argv)) is not None:
                yield simple
                yield from self._python_strings(code, depth, (*via, f"{head} -e"))
                return
        yield simple

    def _find_exec(self, simple: Simple, depth: int) -> Iterator[Simple]:
        """The commands `find … -exec CMD {} ;` (or `+`, `-execdir`, `-ok`) runs, with `{}` the
        files it selects as its tests name them (`-path '*/_pytest/runner.py'`, else the root
        and `-name`)."""
        argv = simple.argv
        roots = [a for a in argv[1:] if not a.startswith(("-", "(", "!"))][:1]
        root = roots[0] if roots else "."
        selected = next((argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-path", "-ipath", "-wholename")), None)
        if selected is None:
            selected = posixpath.join(
                root, "**", next((argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-name", "-iname")), "*")
            )
        elif selected.startswith("*"):  # `-path '*_pytest/runner.py'`: somewhere under the root
            selected = posixpath.join(root, "**", selected.lstrip("*/"))
        k = 0
        for _ in range(8):  # -exec clauses, one after another
            k = next((j for j in range(k, len(argv)) if argv[j] in ("-exec", "-execdir", "-ok", "-okdir")), len(argv))
            end = next((j for j in range(k + 1, len(argv)) if argv[j] in (";", "+", "\\;")), len(argv))
            words = [selected if w == "{}" else w.replace("{}", selected) for w in argv[k + 1 : end]]
            if not words:
                return
            inner = Simple(words, " ".join(words)[:2000], (*simple.via, f"find {argv[k]}"))
            yield from self._unwrap(inner, None, depth + 1)
            k = end + 1

    def _shell(self, simple: Simple, previous: _Raw | None, depth: int) -> Iterator[Simple]:
        argv, via = simple.argv, simple.via
        name = os.path.basename(argv[0])
        args = argv[1:]
        if name == "busybox" and args and args[0] in SHELLS:
            args = args[1:]
        for k, arg in enumerate(args):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
                if k + 1 < len(args):
                    yield from self.run(args[k + 1], depth=depth + 1, via=(*via, f"{name} -c"))
                return
            if arg.startswith(("-", "+")):
                continue
            body = self._file(arg)
            if body is not None:
                yield from self.run(body, depth=depth + 1, via=(*via, f"{name} {arg}"))
            return
        body = self._stdin_of(simple, previous)
        if body is not None:
            yield from self.run(body, depth=depth + 1, via=(*via, name))

    # -- python --------------------------------------------------------------------------

    def _python(self, simple: Simple, previous: _Raw | None, depth: int) -> Iterator[Simple]:
        argv, via = simple.argv, simple.via
        name = os.path.basename(argv[0])
        args = argv[1:]
        code, label = None, name
        for k, arg in enumerate(args):
            if arg == "-c":
                code, label = (args[k + 1] if k + 1 < len(args) else ""), f"{name} -c"
                break
            if arg in ("-m", "-W", "-X"):
                return
            if arg == "-":
                code = self._stdin_of(simple, previous)
                break
            if arg.startswith("-"):
                continue
            code, label = self._file(arg), f"{name} {arg}"
            break
        else:
            code = self._stdin_of(simple, previous)
        if code:
            yield from self.python(code, depth=depth + 1, via=(*via, label))

    def python(self, code: str, *, depth: int = 0, via: tuple[str, ...] = ()) -> Iterator[Simple]:
        """Pseudo commands of Python source: the shell commands it starts, the files it reads
        (``view``), writes (``create``), copies (``cp``), links (``ln -s``) or lists (``ls``),
        the URLs it fetches (``curl``), and IPython's ``!command`` lines."""
        if depth > MAX_DEPTH or self.budget <= 0 or not code:
            return
        code = code[:MAX_SCRIPT]
        self.budget -= len(code)
        lines = code.split("\n")
        for k, line in enumerate(lines):
            stripped = line.lstrip()
            if stripped.startswith(("!", "%sx ", "%system ")):
                yield from self.run(
                    stripped.lstrip("!").split(" ", 1)[-1] if stripped.startswith("%") else stripped[1:],
                    depth=depth + 1,
                    via=(*via, "!"),
                )
                lines[k] = ""
            elif stripped.startswith(("%%bash", "%%sh")):
                yield from self.run("\n".join(lines[k + 1 :]), depth=depth + 1, via=(*via, "%%bash"))
                lines[k:] = []
                break
        source = "\n".join(lines)
        if source in self._read:
            nodes = self._read[source]
        else:
            nodes = _py_nodes(source) if _may_run(source) else []
            if self._read_size + len(source) <= MAX_MEMO:
                self._read[source] = nodes
                self._read_size += len(source)
        if nodes is None:
            yield from self._python_strings(source, depth, via)
            return
        writes = False
        located: set[str] = set()  # modules whose own file the code finds: unittest.case.__file__
        imported: dict[str, str] = {}  # import … as name, from … import name
        modules: set[str] = set()  # every module imported
        searched: list[str] = []  # directories put on sys.path: sys.path.insert(0, "/…/site-packages")
        gits, others = _git_library_names(nodes) if _GIT_LIBRARY_WORD.search(source) else (set(), set())
        hosts: list[str] = []  # hosts an HTTP connection object was opened to
        paths: list[str] = []  # paths requested of such a connection
        looked_up: set[int] = set()  # ref tables indexed by one name
        for node in nodes:
            if isinstance(node, ast.Call):
                fname = _py_name(node.func)
                last = fname.rsplit(".", 1)[-1]
                writes = writes or last in _PY_WRITES
                if fname in ("sys.path.insert", "sys.path.append", "site.addsitedir") and len(searched) < 20:
                    where = _py_str(node.args[-1]) if node.args else None
                    if where and where.startswith(("/", "~")):
                        searched.append(where.rstrip("/"))
                if gits and (argv := _git_library_call(node, fname, gits, others)):
                    yield from self._unwrap(Simple(argv, " ".join(argv)[:2000], (*via, fname or "git")), None, depth)
                    continue
                if last in _HTTP_CONNECTIONS and (host := _py_str(node.args[0]) if node.args else None):
                    hosts.append(host.split("://", 1)[-1].strip("/"))  # http.client.HTTPSConnection('host')
                elif last in ("request", "putrequest", "urlopen") and len(node.args) >= 2:
                    if (path := _py_str(node.args[1])) and path.startswith("/") and len(paths) < 20:
                        paths.append(path)  # conn.request('GET', '/o/r/…'): a path on the host connected to
                if (argv := _pip_main(node, fname, source)) is not None:
                    yield from self._unwrap(Simple(argv, " ".join(argv)[:2000], (*via, fname)), None, depth)
                    continue
                if last == "input" and fname.split(".", 1)[0] == "fileinput" and _inplace(node):
                    writes = True  # fileinput.input(f, inplace=True) rewrites f
                if last not in _PY_CALLS:  # no branch of _python_call can take it
                    continue
                for simple in self._python_call(node, source, depth, via):
                    writes = writes or simple.argv[:1] in (["create"], ["cp"], ["ln"]) or _edits_in_place(simple.argv)
                    yield simple
            elif isinstance(node, ast.Attribute) and node.attr in ("__file__", "__path__"):
                located.add(_py_name(node.value))
            elif isinstance(node, ast.Subscript):
                looked_up.add(id(node.value))  # `repo.refs[b"HEAD"]` looks one ref up: no listing of them all
                if gits and (argv := _git_library_lookup(node, gits, others)):
                    yield from self._unwrap(Simple(argv, " ".join(argv), (*via, _py_name(node.value) or "[]")), None, depth)
            elif (
                isinstance(node, ast.Attribute)
                and gits
                and id(node) not in looked_up
                and (argv := _git_library_refs(node, others))
            ):
                yield Simple(argv, " ".join(argv), (*via, _py_name(node) or node.attr))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                module = f"{node.module}." if isinstance(node, ast.ImportFrom) and node.module else ""
                modules.update((node.module or "",) if isinstance(node, ast.ImportFrom) else (a.name for a in node.names[:50]))
                for alias in node.names[:50]:
                    if alias.asname or module:
                        imported[alias.asname or alias.name] = module + alias.name
        for host in hosts[:5]:  # a connection's host and the paths requested of it: the URLs fetched
            for path in paths:
                yield Simple(["curl", f"https://{host}{path}"], f"{host} {path}", (*via, "http.client"))
        for folder in searched:  # modules imported after another directory was put on sys.path: read from there
            for module in sorted(m for m in modules if m)[:20]:
                yield Simple(
                    ["view", f"{folder}/{module.replace('.', '/')}"], f"import {module} from {folder}", (*via, "sys.path")
                )
        if writes:  # a module located by its __file__ and a file written: that module's file, likely
            named = {imported.get(m.split(".", 1)[0], m.split(".", 1)[0]) + m[len(m.split(".", 1)[0]) :] for m in located if m}
            for module in sorted(named)[:20]:
                found = f"$(python -c 'import {module}; print({module}.__file__)')"
                yield Simple(["create", found], f"{module}.__file__ written", (*via, "python"))

    def _python_call(self, node: ast.Call, source: str, depth: int, via: tuple[str, ...]) -> Iterator[Simple]:
        fname = _py_name(node.func)
        last = fname.rsplit(".", 1)[-1]
        first = _py_str(node.args[0]) if node.args else None
        here = (*via, fname or "call")
        if last in _PY_RUN and (fname.split(".", 1)[0] in _PY_RUN_MODULES or "subprocess" in source):
            arg0 = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
            if isinstance(arg0, (ast.List, ast.Tuple)):
                argv = [(_py_str(e) or "?") for e in arg0.elts[:200]]
                if argv:
                    yield from self._unwrap(Simple(argv, " ".join(argv)[:2000], here), None, depth)
            elif (script := _py_str(arg0)) is not None:
                yield from self.run(script, depth=depth + 1, via=here)
            return
        target = None
        if isinstance(node.func, ast.Attribute):
            target = _py_str(node.func.value)
        if fname in ("open", "io.open", "codecs.open") and first is not None:
            mode = (
                _py_str(node.args[1])
                if len(node.args) > 1
                else _py_str(next((k.value for k in node.keywords if k.arg == "mode"), None))
            )
            verb = "create" if mode and any(ch in mode for ch in "wax+") else "view"
            yield Simple([verb, first], f"open({first!r})", here)
        elif last in ("read_text", "read_bytes", "open") and target is not None:
            yield Simple(["view", target], f"{target}.{last}()", here)
        elif last in ("write_text", "write_bytes", "touch", "unlink", "chmod", "symlink_to") and target is not None:
            yield Simple(["create", target], f"{target}.{last}()", here)
        elif last in _PY_COPY and fname.split(".", 1)[0] in ("shutil", "os", "") and len(node.args) >= 2:
            src, dst = first or "?", _py_str(node.args[1]) or "?"
            yield Simple(["cp", "-r", src, dst], f"{fname}({src!r}, {dst!r})", here)
        elif last == "symlink" and len(node.args) >= 2:
            src, dst = first or "?", _py_str(node.args[1]) or "?"
            yield Simple(["ln", "-s", src, dst], f"{fname}({src!r}, {dst!r})", here)
        elif last in ("remove", "unlink", "chmod", "rename", "replace") and fname.startswith("os") and first is not None:
            yield Simple(["create", first], f"{fname}({first!r})", here)
        elif last in _PY_LIST and first is not None:
            yield Simple(["ls", first], f"{fname}({first!r})", here)
        elif last in _PY_FETCH and first is not None and "://" in first:
            if any(part in _PY_FETCH_MODULES for part in fname.split(".")) or any(m in source for m in _PY_FETCH_MODULES):
                yield Simple(["curl", first], f"{fname}({first!r})", here)

    def _python_strings(self, source: str, depth: int, via: tuple[str, ...]) -> Iterator[Simple]:
        """Source that does not parse (or another interpreter's): its string literals that read
        like commands, paths or URLs."""
        for m in _PY_STRING.finditer(source[:MAX_SCRIPT]):
            text = m.group(1) or m.group(2) or ""
            head = text.split(" ", 1)[0]
            if head in _STRING_HEADS and " " in text:
                yield from self.run(text, depth=depth + 1, via=(*via, "string"))
            elif text.startswith(("/", "~")) and " " not in text:
                yield Simple(["view", text], text, (*via, "string"))
            elif text.startswith(("https://", "http://")) and " " not in text:
                yield Simple(["curl", text], text, (*via, "string"))  # `fetch('https://…')`


def _join(words: list[str]) -> str:
    return " ".join("'" + w.replace("'", "'\\''") + "'" if not w or re.search(r"[^\w@%+=:,./-]", w) else w for w in words)
