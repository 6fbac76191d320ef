"""Unpack an uploaded .tar(.gz/.bz2/.xz) or .zip without letting it write outside its folder. No Django.

Every member is checked before it is written; the first bad one stops the whole archive
with `UnsafeArchive` naming the member (absolute paths, `..` components, symbolic or hard
links, devices and FIFOs) and everything already unpacked is removed. Sizes are counted as bytes are actually
written, so a zip that lies about its sizes (a zip bomb) stops at the limit too.

The limits hold per upload: pass one `UnpackBudget` to every `extract_archive` of an upload (and
count its loose files into it), and all its archives together stay within them.
"""

from __future__ import annotations

import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import IO

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar", ".zip")
MAX_MEMBERS = 500_000
MAX_BYTES = 50 * 1024**3
_CHUNK = 1 << 20


class UnsafeArchive(ValueError):
    """The archive was refused; nothing of it is kept."""


def is_archive_name(name: str) -> bool:
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def archive_stem(name: str) -> str:
    lower = name.lower()
    for suffix in ARCHIVE_SUFFIXES:
        if lower.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _member_path(name: str) -> PurePosixPath:
    cleaned = name.replace("\\", "/")
    path = PurePosixPath(cleaned)
    if cleaned.startswith("/") or (len(cleaned) > 1 and cleaned[1] == ":"):
        raise UnsafeArchive(f"{name!r}: absolute path")
    if ".." in path.parts:
        raise UnsafeArchive(f"{name!r}: path leaves the archive ('..')")
    if "\x00" in name:
        raise UnsafeArchive(f"{name!r}: NUL character in name")
    return PurePosixPath(*[p for p in path.parts if p not in ("", ".")])


class UnpackBudget:
    """Members and bytes left for one upload, shared by all its archives."""

    def __init__(self, max_members: int | None = None, max_bytes: int | None = None, *, bytes_limit_is: str = ""):
        self.members = 0
        self.bytes = 0
        self.max_members = MAX_MEMBERS if max_members is None else max_members
        self.max_bytes = MAX_BYTES if max_bytes is None else max_bytes
        # what sets max_bytes when it is not the upload's own limit (a project's disk quota), for the refusal
        self.bytes_limit_is = bytes_limit_is

    def member(self) -> None:
        self.members += 1
        if self.members > self.max_members:
            raise UnsafeArchive(f"more than {self.max_members:,} members (all archives and files of the upload together)")

    def add(self, n: int) -> None:
        """Count `n` bytes about to be written; past the limit nothing more is written."""
        self.bytes += n
        if self.bytes > self.max_bytes:
            why = self.bytes_limit_is or "all archives and files of the upload together"
            raise UnsafeArchive(f"unpacks to more than {self.max_bytes:,} bytes ({why})")


def _write(source: IO[bytes], target: Path, dest: Path, budget: UnpackBudget) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.resolve().is_relative_to(dest):
        raise UnsafeArchive(f"{target.name!r}: path leaves the archive")
    with target.open("xb") as out:  # "x": a member never overwrites an earlier one
        while chunk := source.read(_CHUNK):
            budget.add(len(chunk))
            out.write(chunk)


def is_readable_archive(archive: Path) -> bool:
    """Cheap: a zip's directory or a tar's first header can be read (nothing is unpacked)."""
    try:
        return zipfile.is_zipfile(archive) or tarfile.is_tarfile(archive)
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError):
        return False


def extract_archive(
    archive: Path, dest: Path, *, max_members: int | None = None, max_bytes: int | None = None, budget: UnpackBudget | None = None
) -> int:
    """Unpack `archive` into `dest` (created). Returns the number of files; on refusal `dest` is removed.

    `budget` (shared by the archives of one upload) or else `max_members` / `max_bytes` (this archive alone).
    """
    dest.mkdir(parents=True, exist_ok=False)
    dest = dest.resolve()
    budget = budget if budget is not None else UnpackBudget(max_members, max_bytes)
    try:
        if zipfile.is_zipfile(archive):
            return _extract_zip(archive, dest, budget)
        if tarfile.is_tarfile(archive):
            return _extract_tar(archive, dest, budget)
        raise UnsafeArchive("not a readable .tar(.gz/.bz2/.xz) or .zip archive")
    except UnsafeArchive:
        shutil.rmtree(dest, ignore_errors=True)
        raise
    except FileExistsError as exc:
        shutil.rmtree(dest, ignore_errors=True)
        raise UnsafeArchive(f"{Path(exc.filename or '').name!r}: the archive holds this path twice") from None
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        shutil.rmtree(dest, ignore_errors=True)
        why = (exc.strerror or type(exc).__name__) if isinstance(exc, OSError) else exc  # no absolute paths
        raise UnsafeArchive(f"could not be read: {why}") from None


def _extract_zip(archive: Path, dest: Path, budget: UnpackBudget) -> int:
    files = 0
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        for info in infos:  # check every member before writing any
            budget.member()
            _member_path(info.filename)
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise UnsafeArchive(f"{info.filename!r}: symbolic link")
            if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # 0: no type recorded
                raise UnsafeArchive(f"{info.filename!r}: not a regular file")
        for info in infos:
            relative = _member_path(info.filename)
            if not relative.parts:
                continue
            if info.is_dir():
                (dest / relative).mkdir(parents=True, exist_ok=True)
                continue
            with zf.open(info) as source:
                _write(source, dest / relative, dest, budget)
            files += 1
    return files


def _extract_tar(archive: Path, dest: Path, budget: UnpackBudget) -> int:
    # One streaming pass (a .tar.gz is decompressed once); a refusal removes what was written.
    files = 0
    with tarfile.open(archive, "r|*") as tf:
        for member in tf:
            budget.member()
            relative = _member_path(member.name)
            if member.issym() or member.islnk():
                raise UnsafeArchive(f"{member.name!r}: {'symbolic' if member.issym() else 'hard'} link")
            if not (member.isfile() or member.isdir()):
                raise UnsafeArchive(f"{member.name!r}: not a regular file (device, FIFO or other)")
            if not relative.parts:
                continue
            if member.isdir():
                (dest / relative).mkdir(parents=True, exist_ok=True)
                continue
            source = tf.extractfile(member)
            if source is None:
                continue
            with source:
                _write(source, dest / relative, dest, budget)
            files += 1
    return files
