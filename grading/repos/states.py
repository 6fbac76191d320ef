"""A rollout's patch applied at the base commit, recorded as a commit in the mirror. Pure: no Django.

No file is checked out: the base tree is read into a private index (`GIT_INDEX_FILE`), the
patch goes onto that index with `git apply --cached` (then `--3way` when it does not apply
as is), and the index becomes a tree and a commit whose author, committer and dates are fixed,
so one patch on one base is the same commit every time (a state is made again, identical,
after its mirror was evicted). The objects git writes for it go to a private object directory
first, in room reserved in the cache's budget (a loose file per object: a patch of thousands of
files writes thousands), then into the mirror: moved as they are when they are few, as one pack
when they are many.

`Applied.how`:
- "base": the patch is empty; the state is the base commit itself.
- "clean": the patch applied as it is (`git apply`).
- "three_way": it applied only with `git apply --3way` (its preimage blobs merged cleanly).
- "partial": it applied except for binary files it names without their data ("Binary files a/x
  and b/x differ"); `skipped` lists them, left as they are at base.
- "failed": nothing applied (`commit` is None); `error` says why: git's own message (bounded)
  for a patch that conflicts even 3-way, or ours for a patch refused before git saw it.

A mirror holds the base commit, not its history (grading.repos.source fetches commits by id). A
patch written at another commit that does not apply as it is needs, for `--3way`, the file
versions it was written against ("repository lacks the necessary blob"): then the source's
history is fetched (`history`, once per mirror) and the patch tried again. Without `history` (a
page request, which never fetches) or when that fetch fails, the patch is `failed` with a reason,
and that result is not remembered: the next grader to ask fetches and tries again.

Refused before git sees it (git refuses most of these too; we do not lean on that): a path that
is absolute, has a `..` or `.` component, goes through `.git`, or goes through a symbolic link
(one at base, or one the patch itself adds); a patch bigger than MAX_PATCH_BYTES. The scan is
one bounded pass over the patch's lines, with no regular expression. A symbolic link the patch
adds, wherever it points (`/etc/passwd`, `../..`), is stored as a link in the tree: it is data.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grading.repos.source import RepoSource, bounded, git_env, remove_tree, tree_bytes
from grading.repos.types import Applied, ApplyHow, FetchRefused, OverBudget, RepoError

MAX_PATCH_BYTES = 32 * 1024**2
MAX_PATH_CHARS = 4_096
STATE_ENV = {
    "GIT_AUTHOR_NAME": "gagar",
    "GIT_AUTHOR_EMAIL": "gagar@localhost",
    "GIT_AUTHOR_DATE": "946684800 +0000",
    "GIT_COMMITTER_NAME": "gagar",
    "GIT_COMMITTER_EMAIL": "gagar@localhost",
    "GIT_COMMITTER_DATE": "946684800 +0000",
}
STATE_MESSAGE = "gagar: a rollout's patch applied at its task's base commit\n"
MEMO_VERSION = "1"
MAX_LOOSE_MOVED = 256  # a state's objects moved into the mirror as loose files; more go in as a pack
OBJECT_BYTES = 4_096 + 512  # a loose object on disk, at least: one block and its directory entry
LACKS_BLOB = "lacks the necessary blob"  # git apply --3way, when the patch's preimage is not in the mirror
HEX = frozenset("0123456789abcdef")


class Refused(Exception):
    """A patch refused before git sees it; the message says which path and why."""


@dataclass
class Scan:
    """What one pass over a patch found: every path it names, the links it adds, the files it
    deletes, and the text to hand git (binary changes without data taken out, named in `skipped`)."""

    paths: list[str] = field(default_factory=list)
    links: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    skipped: list[str] = field(default_factory=list)
    preimages: list[str] = field(default_factory=list)  # the blob ids (abbreviated) of its `index` lines
    text: str = ""
    sections: int = 0  # file sections left for git


def unquote(name: str) -> str:
    """A path as git writes it: C-quoted ("a/\\303\\251 x") when it has unusual bytes, else as is."""
    if not name.startswith('"'):
        return name
    out = bytearray()
    i, n = 1, len(name)
    escapes = {"n": 10, "t": 9, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "r": 13, "v": 11}
    while i < n:
        ch = name[i]
        if ch == '"':
            break
        if ch == "\\" and i + 1 < n:
            nxt = name[i + 1]
            if nxt in "01234567" and i + 3 < n:
                out.append(int(name[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(escapes.get(nxt, ord(nxt) & 0xFF))
            i += 2
            continue
        out += ch.encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _header_name(rest: str, *, strip: bool) -> str | None:
    """The path of a `--- a/x` / `+++ b/x` line (None for /dev/null); `strip` drops the a/ or b/ component."""
    if rest.startswith('"'):
        name = unquote(rest)
    else:
        name = rest.split("\t", 1)[0].rstrip("\r")
        if name.endswith(" "):
            name = name.rstrip(" ")
    if name == "/dev/null":
        return None
    if strip:
        if name.startswith("/"):
            return name  # an absolute name (git would strip its "/" and write inside the tree): refused as meant
        if "/" not in name:
            return name
        name = name.split("/", 1)[1]
    return name


def _git_header_names(rest: str) -> list[str]:
    """The two names of `diff --git a/x b/x` when they can be told apart (same name, or quoted)."""
    rest = rest.rstrip("\r")
    if rest.startswith('"'):
        end = 1
        while end < len(rest) and (rest[end] != '"' or rest[end - 1] == "\\"):
            end += 1
        first, second = rest[: end + 1], rest[end + 1 :].strip()
        names = [unquote(first), unquote(second) if second.startswith('"') else second]
    else:
        half = len(rest) // 2
        if len(rest) % 2 == 1 and rest[half] == " " and rest[:half].split("/", 1)[-1] == rest[half + 1 :].split("/", 1)[-1]:
            names = [rest[:half], rest[half + 1 :]]
        else:
            return []
    return [n.split("/", 1)[1] if "/" in n else n for n in names]


def path_problem(path: str) -> str:
    """Why `path` may not be touched ("" when it may)."""
    if not path:
        return "an empty path"
    if len(path) > MAX_PATH_CHARS:
        return f"a path of {len(path)} characters"
    if "\x00" in path:
        return "a path with a NUL byte"
    if path.startswith("/"):
        return "an absolute path"
    for part in path.split("/"):
        if part in {"..", "."}:
            return f"a path with a {part!r} component"
        if part.lower().rstrip(". ") == ".git":
            return "a path inside .git"
    return ""


@dataclass
class _Section:
    lines: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    mode: str = ""
    binary_data: bool = False
    binary_without_data: bool = False
    deleted: bool = False
    preimage: str = ""


def scan(patch: str) -> Scan:
    """One bounded pass over `patch`: its paths, links and deletions, and its text for git. Refused for a
    path that leaves the tree (see the module's docstring)."""
    if len(patch) > MAX_PATCH_BYTES:
        raise Refused(f"the patch is {len(patch) / 1024**2:,.1f} MB, more than {MAX_PATCH_BYTES // 1024**2} MB")
    out = Scan()
    kept: list[str] = []
    current = _Section()

    def close(section: _Section) -> None:
        if not section.lines:
            return
        target = section.names[-1] if section.names else ""
        out.paths.extend(section.names)
        if section.binary_without_data and not section.binary_data:
            out.skipped.append(target or "(a binary file)")
            return
        kept.extend(section.lines)
        if section.names:
            out.sections += 1
        if section.mode == "120000" and target:
            out.links.add(target)
        if section.deleted and target:
            out.deleted.add(target)
        if section.preimage:
            out.preimages.append(section.preimage)

    lines = patch.split("\n")
    old_left = new_left = 0
    for number, line in enumerate(lines):
        if old_left > 0 or new_left > 0:
            # inside a hunk: a line of content, whatever it looks like ("--- x" is a removed "-- x")
            head = line[:1]
            if head == " " or line in {"", "\r"}:
                old_left -= 1
                new_left -= 1
            elif head == "-":
                old_left -= 1
            elif head == "+":
                new_left -= 1
            elif head != "\\":
                old_left = new_left = 0  # git ends the hunk here too; the line is read as a header below
            if old_left > 0 or new_left > 0 or head in {" ", "-", "+", "\\", ""}:
                current.lines.append(line)
                continue
        bare = line.rstrip("\r")
        if bare.startswith("diff --git "):
            close(current)
            current = _Section(lines=[line], names=_git_header_names(bare[len("diff --git ") :]))
            continue
        if bare.startswith("@@ "):
            old_left, new_left = _hunk_counts(bare)
            current.lines.append(line)
            continue
        if bare.startswith("--- ") and number + 1 < len(lines) and lines[number + 1].startswith("+++ "):
            plain_next_file = bool(current.lines) and not current.lines[0].startswith("diff --git ")
            if plain_next_file or any(x.startswith("@@ ") for x in current.lines):
                close(current)  # a plain unified diff's next file
                current = _Section()
            name = _header_name(bare[4:], strip=True)
            if name is not None:
                current.names.append(name)
            current.lines.append(line)
            continue
        if bare.startswith("+++ ") and current.lines and current.lines[-1].startswith("--- "):
            name = _header_name(bare[4:], strip=True)
            if name is not None:
                current.names.append(name)
            current.lines.append(line)
            continue
        for prefix in ("rename from ", "rename to ", "copy from ", "copy to "):
            if bare.startswith(prefix):
                current.names.append(unquote(bare[len(prefix) :]))
                break
        if bare.startswith(("new file mode ", "new mode ")):
            current.mode = bare.rsplit(" ", 1)[-1]
        elif bare.startswith("deleted file mode "):
            current.deleted = True
        elif bare.startswith("index ") and ".." in bare:
            old = bare[len("index ") :].split("..", 1)[0]
            if 4 <= len(old) <= 64 and set(old) <= HEX and set(old) != {"0"}:  # all zeros: a new file
                current.preimage = old
        elif bare.startswith("GIT binary patch"):
            current.binary_data = True
        elif bare.startswith("Binary files ") and bare.endswith(" differ"):
            current.binary_without_data = True
        current.lines.append(line)
    close(current)
    for name in out.paths:
        problem = path_problem(name)
        if problem:
            shown = name.encode("unicode_escape").decode("ascii")[:200]
            raise Refused(f"the patch touches {shown!r}: {problem}, which would leave the repository's tree")
    out.text = "\n".join(kept)
    return out


def _hunk_counts(header: str) -> tuple[int, int]:
    """(old, new) line counts of `@@ -a,b +c,d @@` (a count left out is 1); (0, 0) when it does not parse."""
    parts = header.split(" ")
    if len(parts) < 3 or not parts[1].startswith("-") or not parts[2].startswith("+"):
        return 0, 0

    def count(spec: str) -> int:
        _, _, n = spec[1:].partition(",")
        return int(n) if n.isdigit() else (1 if spec[1:].split(",")[0].isdigit() else 0)

    return count(parts[1]), count(parts[2])


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _links_at(source: RepoSource, git_dir: Path, commit: str, paths: list[str]) -> set[str]:
    """Which of `paths` are symbolic links at `commit` (one `git ls-tree` for all of them)."""
    if not paths:
        return set()
    found: set[str] = set()
    for start in range(0, len(paths), 500):
        chunk = paths[start : start + 500]
        done = source.git(
            git_dir,
            ["ls-tree", "-z", commit, "--", *chunk],
            env=git_env(GIT_LITERAL_PATHSPECS="1"),
        )
        for record in done.stdout.split(b"\0"):
            meta, _, name = record.partition(b"\t")
            if meta.startswith(b"120000 "):
                found.add(name.decode("utf-8", "surrogateescape"))
    return found


def through_link(source: RepoSource, git_dir: Path, base: str, found: Scan) -> str:
    """The first path of the patch that goes through a symbolic link (at base, or one the patch adds); "" if none."""
    prefixes: dict[str, str] = {}
    for path in found.paths:
        parts = path.split("/")
        for i in range(1, len(parts)):
            prefixes.setdefault("/".join(parts[:i]), path)
    if not prefixes:
        return ""
    for prefix, path in prefixes.items():
        if prefix in found.links:
            return path
    at_base = _links_at(source, git_dir, base, sorted(prefixes)) - found.deleted
    for prefix, path in prefixes.items():
        if prefix in at_base:
            return path
    return ""


def memo_key(base: str, patch: str) -> str:
    digest = hashlib.sha256()
    for part in (MEMO_VERSION, base, patch):
        digest.update(_encode(part) + b"\0")
    return digest.hexdigest()


def apply_patch(
    source: RepoSource, git_dir: Path, base: str, index: int, patch: str, *, history: Callable[[], bool] | None = None
) -> Applied:
    """Rollout `index`'s state: `patch` applied at `base` in the mirror `git_dir`, never raising for
    the patch's sake (a patch that does not apply is an Applied with how="failed"). `history` fetches
    the source's history into the mirror when a 3-way merge needs it (True when it fetched)."""
    if not patch or not patch.strip():
        return Applied(index=index, how="base", commit=base)
    memo = git_dir / "gagar-states" / f"{memo_key(base, patch)}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        saved = json.loads(memo.read_text())
        if saved["commit"] is None or source.has_commit(git_dir, saved["commit"]):
            return Applied(
                index=index, how=saved["how"], commit=saved["commit"], error=saved["error"], skipped=tuple(saved["skipped"])
            )
    applied, lacks = _apply(source, git_dir, base, index, patch)
    if lacks:
        if history is None:
            return _without_history(applied, "the history is not fetched yet (a grader fetches it when it reads the group)")
        try:
            fetched = history()
        except OverBudget:
            raise  # no room now: asking again tries again
        except FetchRefused as exc:
            return _without_history(applied, f"fetching the source's history failed: {exc}")
        if fetched:
            applied, lacks = _apply(source, git_dir, base, index, patch)
    with contextlib.suppress(OSError):
        memo.parent.mkdir(mode=0o700, exist_ok=True)
        scratch = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        said = json.dumps(
            {"how": applied.how, "commit": applied.commit, "error": applied.error, "skipped": list(applied.skipped)}
        )
        with os.fdopen(os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "w") as out:
            out.write(said)  # for the worker only, like the rest of the mirror
        scratch.replace(memo)
    return applied


def _without_history(applied: Applied, why: str) -> Applied:
    """`applied` (failed for want of the history's file versions), saying so; never remembered."""
    error = f"the patch does not apply as it is, and a 3-way merge needs file versions of other commits; {why}"
    return Applied(index=applied.index, how="failed", commit=None, error=bounded(f"{error}. git said: {applied.error}"))


def _apply(source: RepoSource, git_dir: Path, base: str, index: int, patch: str) -> tuple[Applied, bool]:
    """The state, and whether it failed only for want of file versions the mirror lacks (LACKS_BLOB)."""
    lacks = False

    def failed(error: str) -> Applied:
        return Applied(index=index, how="failed", commit=None, error=error)

    try:
        found = scan(patch)
        path = through_link(source, git_dir, base, found)
        if path:
            shown = path.encode("unicode_escape").decode("ascii")[:200]
            raise Refused(f"the patch touches {shown!r} through a symbolic link, which would leave the repository's tree")
    except Refused as exc:
        return failed(f"refused: {exc}"), lacks
    skipped = tuple(found.skipped)
    if not found.sections:
        if skipped:
            return Applied(index=index, how="partial", commit=base, skipped=skipped), lacks
        return failed("the patch names no file git can apply (no diff header or hunk in it)"), lacks
    body = _encode(found.text if found.text.endswith("\n") else found.text + "\n")
    objects = git_dir / "objects"
    incoming = objects / f"incoming-gagar-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        with (
            source.reserve(
                incoming, room=_room_for(found, body), what=f"rollout {index}'s state", mirror=git_dir.name[: -len(".git")]
            ) as held,
            tempfile.TemporaryDirectory(prefix="gagar-index-") as scratch,
        ):
            incoming.mkdir(mode=0o700)
            quarantined = git_env(
                GIT_INDEX_FILE=str(Path(scratch) / "index"),
                GIT_OBJECT_DIRECTORY=str(incoming),
                GIT_ALTERNATE_OBJECT_DIRECTORIES=str(objects),
            )
            env = {**quarantined, **STATE_ENV}
            source.git(git_dir, ["read-tree", base], env=env)
            how: ApplyHow = "clean"
            plain = source.git(git_dir, ["apply", "--cached", "--whitespace=nowarn", "-"], input=body, env=env, check=False)
            if plain.returncode != 0:
                three = source.git(
                    git_dir, ["apply", "--cached", "--3way", "--whitespace=nowarn", "-"], input=body, env=env, check=False
                )
                if three.returncode != 0:
                    said = bounded(three.stderr.decode("utf-8", "replace") or plain.stderr.decode("utf-8", "replace"))
                    lacks = LACKS_BLOB in said and _lacks_preimages(source, git_dir, found.preimages)
                    return failed(f"the patch does not apply, even 3-way: {said}"), lacks
                how = "three_way"
            tree = source.git(git_dir, ["write-tree"], env=env).stdout.decode().strip()
            commit = source.git(git_dir, ["commit-tree", tree, "-p", base, "-m", STATE_MESSAGE], env=env).stdout.decode().strip()
            held.ensure(tree_bytes(incoming))  # what git wrote, if more than foreseen
            _settle(source, git_dir, incoming, env)
    except OverBudget:
        raise  # no room now is not the patch's fault: nothing is remembered, and asking again tries again
    except RepoError as exc:
        return failed(str(exc)), lacks
    finally:
        remove_tree(incoming)
    if skipped:
        return Applied(index=index, how="partial", commit=commit, skipped=skipped), lacks
    return Applied(index=index, how=how, commit=commit), lacks


def _lacks_preimages(source: RepoSource, git_dir: Path, preimages: list[str]) -> bool:
    """Whether the mirror lacks a file version the patch's `index` lines name (a patch with none,
    or whose versions are all here, would not merge 3-way with the history either)."""
    if not preimages:
        return False
    asked = "".join(f"{blob}\n" for blob in preimages).encode()
    done = source.git(git_dir, ["cat-file", "--batch-check=%(objectname)"], input=asked, check=False)
    return done.returncode != 0 or b" missing" in done.stdout or b" ambiguous" in done.stdout


def _room_for(found: Scan, body: bytes) -> int:
    """What applying a patch may write, foreseen: a loose object per file it names and per
    directory above them, the commit, and about twice the patch's text."""
    folders = {"/".join(path.split("/")[:i]) for path in found.paths for i in range(1, path.count("/") + 1)}
    return (len(found.paths) + len(folders) + 2) * OBJECT_BYTES + 2 * len(body)


def _settle(source: RepoSource, git_dir: Path, incoming: Path, env: dict[str, str]) -> None:
    """Move the objects written to `incoming` into the mirror: as loose files when they are few, as
    one pack when they are many (thousands of loose files take a block each)."""
    loose = [obj for folder in incoming.glob("[0-9a-f][0-9a-f]") for obj in folder.iterdir() if obj.is_file()]
    if len(loose) > MAX_LOOSE_MOVED:
        ids = "".join(f"{obj.parent.name}{obj.name}\n" for obj in loose).encode()
        source.git(git_dir, ["pack-objects", "--quiet", str(git_dir / "objects" / "pack" / "pack")], input=ids, env=env)
        return
    for obj in loose:
        target = git_dir / "objects" / obj.parent.name / obj.name
        if not target.exists():  # else the same object is there already
            target.parent.mkdir(mode=0o700, exist_ok=True)
            obj.replace(target)


def apply_all(
    source: RepoSource, git_dir: Path, base: str, patches: dict[int, str], *, history: Callable[[], bool] | None = None
) -> dict[int, Applied]:
    """Every rollout's state, by index (`history` as in `apply_patch`)."""
    return {
        index: apply_patch(source, git_dir, base, index, patch or "", history=history) for index, patch in sorted(patches.items())
    }
