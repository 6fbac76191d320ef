"""An upload to import: stored as it came, then unpacked by the worker, within the project's disk quota.

`store_upload` stores an API upload under MEDIA_ROOT/imports (nothing is unpacked in the web
request); the worker unpacks its archives (`unpack_upload`, one budget for the whole
upload). What a project's jobs keep on disk meanwhile (`ImportJob.disk_bytes`) is held to
GAGAR_IMPORT_QUOTA_BYTES: an upload that would pass it is refused before it is written, and
unpacking stops where it would.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from django.conf import settings

from grading.ingest.importers import archives
from grading.ingest.importers.archives import UnsafeArchive, archive_stem, extract_archive, is_archive_name, is_readable_archive
from grading.ingest.importers.common import safe_text
from grading.models import Project
from grading.selectors.imports import disk_kept

PACKED = "uploads"  # <upload folder>/uploads/<name>: archives as uploaded, removed when the job ends


_LOOSE = "files"


class UploadRefused(ValueError):
    """The upload cannot be imported; the message says why (HTTP 400, or the failed job's error)."""


def uploads_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "imports"


def check_quota(project: Project, size: int) -> None:
    kept = disk_kept(project)
    quota = settings.GAGAR_IMPORT_QUOTA_BYTES
    if kept + size > quota:
        raise UploadRefused(
            f"upload refused: it is {size:,} bytes and project {project.name!r} keeps {kept:,} of its {quota:,}-byte import "
            f"quota on disk (imports queued or running); wait for them to finish, upload smaller parts, or ask the server's "
            f"operator to raise GAGAR_IMPORT_QUOTA_BYTES"
        )


def store_upload(*, project: Project, files) -> tuple[str, list[dict], list[dict]]:
    """Store the uploaded files under MEDIA_ROOT/imports/<new folder>; nothing is unpacked here.

    Archives are kept as uploaded (`uploads/<name>`) and unpacked by the worker
    (`unpack_upload`), within one member and size budget for the whole upload. Each archive
    becomes one PATH named after it (`run-2.tar.gz` -> refs `run-2/...`; an archive holding
    a single folder is that folder, so refs match a command-line import of it); the other
    files together form one PATH whose refs are their names. Only cheap checks happen here
    (names, a readable archive header). Returns (folder relative to MEDIA_ROOT, sources,
    uploaded file names and sizes). Raises UploadRefused; then nothing is kept. An upload the
    project's disk quota cannot hold is refused before a byte of it is written.
    """
    if not files:
        raise UploadRefused("no files: send an archive (.tar.gz, .zip) or files as multipart field 'file'")
    if len(files) > archives.MAX_MEMBERS:
        raise UploadRefused(f"more than {archives.MAX_MEMBERS:,} files in one upload")
    check_quota(project, sum(upload.size or 0 for upload in files))
    folder = uploads_root() / uuid.uuid4().hex
    folder.mkdir(parents=True)
    sources: list[dict] = []
    uploaded: list[dict] = []
    loose = folder / _LOOSE
    seen_names: set[str] = set()
    try:
        for upload in files:
            name = Path(upload.name or "").name
            if not name or name in (".", "..") or name.startswith(".") or safe_text(name) != name:
                raise UploadRefused(f"{safe_text(upload.name or '')!r}: not a usable file name")
            if name in seen_names:
                raise UploadRefused(f"{name!r} was uploaded twice")
            seen_names.add(name)
            uploaded.append({"name": name, "size": upload.size})
            if is_archive_name(name):
                stem = archive_stem(name)
                if not stem or stem in (_LOOSE, PACKED) or any(s["label"] == stem for s in sources):
                    raise UploadRefused(f"{name!r}: another upload unpacks to the same name {stem!r}")
                packed = folder / PACKED / name
                packed.parent.mkdir(exist_ok=True)
                _save(upload, packed)
                if not is_readable_archive(packed):
                    raise UploadRefused(f"archive {name!r} refused: not a readable .tar(.gz/.bz2/.xz) or .zip archive")
                sources.append({"archive": packed.relative_to(settings.MEDIA_ROOT).as_posix(), "label": stem})
            else:
                loose.mkdir(exist_ok=True)
                _save(upload, loose / name)
        if loose.exists():
            sources.append({"path": loose.relative_to(settings.MEDIA_ROOT).as_posix(), "label": ""})
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder.relative_to(settings.MEDIA_ROOT).as_posix(), sources, uploaded


def _save(upload, target: Path) -> None:
    with target.open("xb") as out:
        for chunk in upload.chunks():
            out.write(chunk)


def upload_folder(sources: list[dict]) -> Path | None:
    """The upload's own folder (MEDIA_ROOT/imports/<hex>), or None when the sources name no such folder."""
    root = uploads_root().resolve()
    for source in sources:
        relative = source.get("archive") or source.get("path") or ""
        parts = Path(relative).parts
        if len(parts) < 2:
            continue
        folder = (Path(settings.MEDIA_ROOT) / parts[0] / parts[1]).resolve()
        if folder.parent == root and folder.is_dir():
            return folder
    return None


def unpack_upload(sources: list[dict], *, quota_left: int | None = None) -> tuple[list[dict], int]:
    """In the worker: unpack the upload's archives next to them (the caller removes them once the sources are saved).

    Returns the sources as PATHs to import and the bytes they hold on disk. One `UnpackBudget`
    holds for the whole upload: its loose files and every member of every archive count
    against the same member and byte limits, and against `quota_left` (what the project's
    disk quota leaves beside its other jobs), counted as bytes are written. Unpacking again
    (a redelivered task) starts from a clean folder. Raises UploadRefused naming the archive.
    """
    media = Path(settings.MEDIA_ROOT)
    budget = archives.UnpackBudget()
    packed_bytes = sum((media / s["archive"]).stat().st_size for s in sources if "archive" in s)
    if quota_left is not None and quota_left - packed_bytes < budget.max_bytes:
        budget.max_bytes = max(0, quota_left - packed_bytes)
        budget.bytes_limit_is = (
            f"what the project's {settings.GAGAR_IMPORT_QUOTA_BYTES:,}-byte import quota, "
            "GAGAR_IMPORT_QUOTA_BYTES, leaves beside its other imports on disk"
        )
    for source in sources:
        if "archive" not in source and source.get("path"):
            for path in (media / source["path"]).rglob("*"):
                if path.is_file():
                    budget.member()
                    budget.add(path.stat().st_size)
    resolved: list[dict] = []
    labels: set[str] = set()
    for source in sources:
        if "archive" not in source:
            resolved.append(source)
            continue
        packed = media / source["archive"]
        name = packed.name
        stem = archive_stem(name)
        dest = packed.parent.parent / stem
        shutil.rmtree(dest, ignore_errors=True)  # what an earlier, interrupted attempt left
        try:
            extract_archive(packed, dest, budget=budget)
        except UnsafeArchive as exc:
            raise UploadRefused(f"archive {name!r} refused: {exc}") from None
        root = dest
        entries = list(root.iterdir())
        if len(entries) == 1 and entries[0].is_dir() and entries[0].name not in labels:
            # `tar czf run-3.tar.gz run-3/`: refs start at run-3/, as `import_runs run-3/` gives them.
            root = entries[0]
        labels.add(root.name)
        resolved.append({"path": root.relative_to(media).as_posix(), "label": root.name, "unpacked_from": source["archive"]})
    return resolved, budget.bytes
