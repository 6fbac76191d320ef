"""A patch as files of hunks of lines, parsed once per text for every detector. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError


@dataclass(frozen=True)
class PatchLine:
    kind: str  # "+", "-", " "
    new_no: int | None
    text: str


@dataclass(frozen=True)
class PatchFile:
    path: str
    status: str  # added | removed | modified | renamed | binary
    hunks: tuple[tuple[PatchLine, ...], ...]
    old_path: str = ""  # the path before the patch ("" for an added file)
    sections: tuple[str, ...] = ()  # each hunk's section header (the def or class above it)

    def anchor(self, near: tuple[int, int] | None = None) -> str | None:
        """A citable "path:line" on the new side: the row nearest `near` (hunk, line), else
        the first added row, else the first context row."""
        if near is not None:
            rows = self.hunks[near[0]]
            for i in sorted(range(len(rows)), key=lambda i: (abs(i - near[1]), i < near[1])):
                if rows[i].new_no is not None:
                    return f"{self.path}:{rows[i].new_no}"
        for kinds in ("+", " "):
            for rows in self.hunks:
                for row in rows:
                    if row.kind == kinds and row.new_no is not None:
                        return f"{self.path}:{row.new_no}"
        return None


def strip_prefix(path: str) -> str:  # as grading.rollouts.diffs does, so locators resolve there
    return path[2:] if path.startswith(("a/", "b/")) else path


@lru_cache(maxsize=1024)
def patch_files(text: str) -> tuple[PatchFile, ...] | None:
    """The patch as files of hunks of lines; None when it does not parse."""
    if not text or not text.strip():
        return ()
    try:
        patch_set = PatchSet(text)
    except (UnidiffParseError, ValueError, IndexError):
        return None
    if not len(patch_set):
        return None
    files = []
    for pf in patch_set:
        if pf.is_binary_file:
            status = "binary"
        elif pf.is_added_file:
            status = "added"
        elif pf.is_removed_file:
            status = "removed"
        elif strip_prefix(pf.source_file) != strip_prefix(pf.target_file):
            status = "renamed"
        else:
            status = "modified"
        hunks = tuple(
            tuple(
                PatchLine(line.line_type, line.target_line_no, line.value.rstrip("\n").rstrip("\r"))
                for line in hunk
                if line.line_type in ("+", "-", " ")
            )
            for hunk in pf
        )
        old = "" if status == "added" else strip_prefix(pf.source_file)
        sections = tuple(str(hunk.section_header or "") for hunk in pf)
        files.append(PatchFile(strip_prefix(pf.path), status, hunks, old, sections))
    return tuple(files)
