"""The sweep of upload folders no job owns.

`remove_orphan_uploads` (Celery beat, hourly) removes folders a day old that no queued or
running job owns (a web process or worker killed between writing and cleaning up).
"""

from __future__ import annotations

import logging
import shutil
import time
from datetime import timedelta

from django.utils import timezone

from grading.ingest.imports.uploads import upload_folder, uploads_root
from grading.models import ImportJob

logger = logging.getLogger(__name__)

ORPHAN_AGE = timedelta(days=1)


def remove_orphan_uploads(*, older_than: timedelta = ORPHAN_AGE) -> list[str]:
    """Remove upload folders older than `older_than` that no queued or running job owns; returns their names.

    A folder is left behind when its web process dies between storing an upload and
    recording its job, or a worker dies before cleaning up; a job that ended keeps no files,
    so any that remain go too, and its `disk_bytes` is set to 0. A queued job keeps its
    files however long it waits.
    """
    root = uploads_root()
    active = ImportJob.objects.filter(status__in=[ImportJob.Status.QUEUED, ImportJob.Status.RUNNING])
    owned = {folder.name for folder in (upload_folder(sources) for sources in active.values_list("sources", flat=True)) if folder}
    cutoff = time.time() - older_than.total_seconds()
    removed = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.name in owned or folder.stat().st_mtime > cutoff:
            continue
        shutil.rmtree(folder, ignore_errors=True) if folder.is_dir() else folder.unlink(missing_ok=True)
        removed.append(folder.name)
    ended = timezone.now() - older_than
    ImportJob.objects.filter(
        status__in=[ImportJob.Status.DONE, ImportJob.Status.FAILED], disk_bytes__gt=0, finished_at__lt=ended
    ).update(disk_bytes=0)
    if removed:
        logger.info("removed %s orphaned upload folder(s): %s", len(removed), ", ".join(removed[:20]))
    return removed
