"""Patch clusters: which rollouts of a group make the same change. Pure: no Django.

A rollout's *change key* is what its patch changes in the files that matter, normalised:

- per file, the lines the patch removes and adds, each with its leading and trailing
  whitespace stripped and inner runs of whitespace read as one space; blank lines are
  dropped, and a line both removed and added (a re-indent, trailing spaces) cancels out.
  A file whose change is then empty (whitespace only, a mode change) does not count;
- what a file's lines are compared as is a multiset, so hunks in any order and files in
  any order give the same key. The key says *what* lines change in which file, not
  where in the file (two rollouts adding the same line to different functions of one
  file share a key; hunk offsets move with any other edit, so they cannot be compared);
- a file's status is part of it (added / removed / renamed from / binary): deleting a
  file is not the same change as emptying it; a binary file is compared by its path only
  (its content is not in a text diff).

*Extra files* are counted apart and are not part of the key: files the patch adds that
no test of the task names and that either

- carry one of the agent's scratch names (`SCRATCH_*` below, picked from the real
  trajectories under tests/fixtures: mini-swe-agent writes `reproduce_issue.py`,
  `reproduction_script.py`, `verify_fix.py`, `apply_fix.py`, `test_fix.py`, and at the
  repository root `run_repro.py`, `check_*.py`, `inspect_issue.py`, `modify_latex.py`,
  `patch_models.py`, `test_<something>.py`, `reproduction/` and `test_fk_app/` apps; other
  runs add `debug_*.py`, `final_test.py`, `*_SUMMARY.md`, `FIX_*.md`, `scratch/`), or
- no other rollout of the group touches (a helper only this rollout wrote).

A file the patch modifies or deletes always matters, whatever its name: it was in the
repository before the agent came.

Clusters: rollouts with the same key form one cluster, numbered by its first (lowest)
member's index, and each rollout gets a label naming every other member, such as "same
change as #3, #5, +2 extra files" (cluster_label: one wording for all members).

Cost is bounded on untrusted patches: no regular expression runs on patch text here
(names are matched with str methods); a patch longer than MAX_PATCH_CHARS characters or
MAX_ROWS lines is not parsed (the diff parser reads all of a patch before
diffs.parse_patch's row caps apply), and is not compared line by line: its key is a digest
of its whole text, normalised line by line in one pass, so identical huge patches still
share a cluster. A patch the diff
parser refuses is keyed the same way.

>>> a = "--- a/m.py\\n+++ b/m.py\\n@@ -1,2 +1,2 @@\\n x = 0\\n-y = 1\\n+y = 2\\n"
>>> b = a.replace("+y = 2", "+y  =  2   ") + "--- /dev/null\\n+++ b/debug_issue.py\\n@@ -0,0 +1 @@\\n+print(1)\\n"
>>> g = cluster_patches([(0, a), (1, b), (2, a.replace("2", "3"))])
>>> [(r.index, r.cluster, r.extra_files, r.label) for r in g.rollouts]
[(0, 0, (), 'same change as #1'), (1, 0, ('debug_issue.py',), 'same change as #0, +1 extra file'), (2, 2, (), 'unique change')]
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grading.rollouts.diffs import PatchRead, read_patch

MAX_PATCH_CHARS = 1_000_000  # longer: keyed by a digest of its text, never parsed (2x the group page's 500,000 shown)
MAX_ROWS = 20_000  # more lines: the same (2.5x the 8,000 rows the group page shows; ~0.2 s of parsing)
MAX_ROW_CHARS = MAX_PATCH_CHARS  # characters of hunk rows compared line by line
MAX_TEST_NAMES = 20_000  # test names read for the files they touch
MAX_PATH_CHARS = 4_096  # a longer path is compared as it is, never matched against names

# Scratch names, matched case-insensitively on a file the patch adds (see the module doc).
SCRATCH_DIRS = ("scratch",)  # a path with one of these as a directory, at any depth
SCRATCH_PREFIXES = ("debug_", "reproduce", "reproduction", "final_test")  # a file name, at any depth
SCRATCH_STEMS = ("test_fix", "verify_fix", "apply_fix")  # the file name without suffix, or it + "_..."
SCRATCH_MD_SUFFIXES = ("_summary.md",)  # IMPLEMENTATION_SUMMARY.md, FIX_SUMMARY.md
SCRATCH_MD_PREFIXES = ("fix_",)  # FIX_NOTES.md
# At the repository root only (a file, or the first directory of its path):
SCRATCH_ROOT_PREFIXES = (
    "repro",
    "run_",
    "debug",
    "verify_",
    "check_",
    "test_",
    "scratch",
    "inspect_",
    "modify_",
    "patch_",
    "apply_",
)


@dataclass(frozen=True)
class FileChange:
    path: str
    source_path: str
    status: str  # added | removed | modified | renamed | binary
    removed: tuple[str, ...]  # normalised lines, sorted, after cancelling
    added: tuple[str, ...]

    @property
    def matters(self) -> bool:
        """False when nothing but whitespace (or the file mode) changed."""
        return bool(self.removed or self.added) or self.status != "modified"

    def key(self) -> list[Any]:
        source = self.source_path if self.status == "renamed" else ""
        return [self.path, self.status, source, list(self.removed), list(self.added)]


@dataclass(frozen=True)
class PatchChanges:
    files: tuple[FileChange, ...]
    raw_digest: str = ""  # set when the patch was not compared line by line
    note: str = ""  # why not (plain text)


@dataclass(frozen=True)
class RolloutCluster:
    index: int
    cluster: int  # the index of the cluster's first member
    key: str  # hex digest of the change key
    files: tuple[str, ...]  # the files that matter, sorted
    extra_files: tuple[str, ...]  # counted apart, sorted
    label: str
    note: str = ""

    @property
    def extra(self) -> int:
        return len(self.extra_files)


@dataclass(frozen=True)
class GroupClusters:
    rollouts: tuple[RolloutCluster, ...]  # in the order given
    clusters: dict[int, tuple[int, ...]]  # cluster number -> member indices, ascending

    @property
    def distinct(self) -> int:
        """Distinct solutions in the group: how many clusters."""
        return len(self.clusters)

    def of(self, index: int) -> RolloutCluster:
        return next(r for r in self.rollouts if r.index == index)


def normalise_line(text: str) -> str:
    """A line with leading/trailing whitespace stripped and inner runs of it as one space."""
    return " ".join(text.split())


def _raw_digest(text: str) -> str:
    digest = hashlib.sha256()
    for line in text.splitlines():
        line = normalise_line(line)
        if line:
            digest.update(line.encode("utf-8", "surrogatepass"))
            digest.update(b"\n")
    return digest.hexdigest()


def patch_changes(patch: str | None, read: PatchRead | None = None) -> PatchChanges:
    """The normalised per-file changes of one patch (see the module doc). `read`: the patch
    already read by diffs.read_patch (ingest reads each patch once for its counts and this)."""
    text = patch or ""
    if len(text) > MAX_PATCH_CHARS:
        return PatchChanges(
            (), _raw_digest(text), f"patch of {len(text):,} characters (over {MAX_PATCH_CHARS:,}) compared as a whole"
        )
    lines = text.count("\n")
    if lines > MAX_ROWS:
        return PatchChanges((), _raw_digest(text), f"patch of {lines:,} lines (over {MAX_ROWS:,}) compared as a whole")
    # Under both caps, so every changed line is compared: no more rows than MAX_ROWS
    # lines, no more characters than MAX_ROW_CHARS.
    parsed = read if read is not None else read_patch(text)
    if not parsed.parses:
        return PatchChanges((), _raw_digest(text), "patch does not parse as a unified diff; compared as a whole")
    by_path: dict[str, FileChange] = {}
    for f in parsed.files:
        removed: Counter[str] = Counter(line for line in map(normalise_line, f.removed) if line)
        added: Counter[str] = Counter(line for line in map(normalise_line, f.added) if line)
        # A file twice in one patch (two diffs of it) reads as one change.
        earlier = by_path.get(f.path)
        if earlier is not None:
            removed.update(earlier.removed)
            added.update(earlier.added)
        both = removed & added
        removed, added = removed - both, added - both
        by_path[f.path] = FileChange(
            path=f.path,
            source_path=f.source_path,
            status=earlier.status if earlier is not None and f.status == "modified" else f.status,
            removed=tuple(sorted(removed.elements())),
            added=tuple(sorted(added.elements())),
        )
    return PatchChanges(tuple(by_path[p] for p in sorted(by_path)))


def is_scratch_name(path: str) -> bool:
    """Whether an added file's path is one of the agent's scratch names (module doc)."""
    if len(path) > MAX_PATH_CHARS:
        return False
    parts = path.lower().split("/")
    name = parts[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    if any(d in SCRATCH_DIRS for d in parts[:-1]):
        return True
    if name.startswith(SCRATCH_PREFIXES):
        return True
    if any(stem == s or stem.startswith(s + "_") for s in SCRATCH_STEMS):
        return True
    if name.endswith(".md") and (name.endswith(SCRATCH_MD_SUFFIXES) or name.startswith(SCRATCH_MD_PREFIXES)):
        return True
    return parts[0].startswith(SCRATCH_ROOT_PREFIXES)


def test_references(tests: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(file paths, dotted module names) the task's tests name.

    Accepts paths ("pkg/tests/test_x.py"), pytest ids ("pkg/tests/test_x.py::T::test_a[1]")
    and Django/unittest labels ("test_a (app.tests.T)"); a bare test name ("test_Mod")
    names no file.
    """
    paths, modules = set(), set()
    for n, name in enumerate(tests):
        if n >= MAX_TEST_NAMES:
            break
        name = (name or "")[:MAX_PATH_CHARS]
        head = name.split("::", 1)[0].strip()
        if "/" in head or head.endswith(".py"):
            paths.add(head[2:] if head.startswith("./") else head)
        open_at = name.rfind(" (")
        if name.endswith(")") and open_at >= 0:
            dotted = name[open_at + 2 : -1].strip()
            if dotted and " " not in dotted:
                parts = dotted.split(".")
                for k in range(1, len(parts) + 1):  # app.tests.T: the module is a prefix
                    modules.add(".".join(parts[:k]))
    return frozenset(paths), frozenset(modules)


def _test_touches(path: str, refs: tuple[frozenset[str], frozenset[str]]) -> bool:
    paths, modules = refs
    if path in paths:
        return True
    if not modules or not path.endswith(".py"):
        return False
    dotted = path[:-3].replace("/", ".")
    if dotted.endswith(".__init__"):
        dotted = dotted[: -len(".__init__")]
    # app.tests.T names app/tests.py, or tests/app/tests.py in Django's own test tree.
    pieces = dotted.split(".")
    return any(".".join(pieces[k:]) in modules for k in range(len(pieces)))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


NAMED_MEMBERS = 5  # cluster members a label names; more are counted ("and 4 more")


def cluster_label(
    index: int, members: tuple[int, ...], *, empty: bool, extra: int, name: Callable[[int], str] = lambda i: f"#{i}"
) -> str:
    """The label of rollout `index` in its cluster of `members`, each rollout named by
    `name`: "#3" as stored, or a blind judge's lane label. One wording for every member:
    each names all the others, in `members`' order, up to NAMED_MEMBERS of them
    ("#1: same change as #2, #7" and "#7: same change as #1, #2"), never the first member
    naming the rest and the rest naming only it."""
    if empty:
        text = "no change"
    elif len(members) == 1:
        text = "unique change"
    else:
        others = [m for m in members if m != index]
        more = len(others) - NAMED_MEMBERS
        text = "same change as " + ", ".join(name(m) for m in others[:NAMED_MEMBERS]) + (f" and {more} more" if more > 0 else "")
    if extra:
        text += f", +{_plural(extra, 'extra file')}"
    return text


def cluster_patches(
    patches: Sequence[tuple[int, str | PatchChanges | None]] | Mapping[int, str | PatchChanges | None], tests: Iterable[str] = ()
) -> GroupClusters:
    """Clusters of one group's rollouts. `patches`: (rollout index, patch text or its
    patch_changes) pairs or a mapping; `tests`: the test names or files the task's tests
    touch (FAIL_TO_PASS and PASS_TO_PASS names), which make a new file matter whatever its name."""
    items = list(patches.items()) if isinstance(patches, Mapping) else list(patches)
    refs = test_references(tests)
    changes = [(index, patch if isinstance(patch, PatchChanges) else patch_changes(patch)) for index, patch in items]
    touched: Counter[str] = Counter()  # path -> how many rollouts touch it
    for _, ch in changes:
        touched.update({p for f in ch.files for p in (f.path, f.source_path) if p and p != "/dev/null"})

    keyed = []
    for index, ch in changes:
        matter, extra = [], []
        for f in ch.files:
            new = f.status == "added" or (f.status == "binary" and f.source_path == "/dev/null")
            if new and not _test_touches(f.path, refs) and (is_scratch_name(f.path) or touched[f.path] < 2):
                extra.append(f.path)
            elif f.matters:
                matter.append(f)
        if ch.raw_digest:
            key_data: object = ["raw", ch.raw_digest]
        else:
            key_data = [f.key() for f in matter]
        key = hashlib.sha256(json.dumps(key_data, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
        keyed.append((index, key, tuple(f.path for f in matter), tuple(sorted(extra)), ch, key_data == []))

    members: dict[str, list[int]] = {}
    for index, key, *_ in keyed:
        members.setdefault(key, []).append(index)
    by_key = {key: tuple(sorted(m)) for key, m in members.items()}
    rollouts = tuple(
        RolloutCluster(
            index=index,
            cluster=by_key[key][0],
            key=key,
            files=files,
            extra_files=extra,
            label=cluster_label(index, by_key[key], empty=empty, extra=len(extra)),
            note=ch.note,
        )
        for index, key, files, extra, ch, empty in keyed
    )
    clusters = {m[0]: m for m in sorted(by_key.values())}
    return GroupClusters(rollouts=rollouts, clusters=clusters)
