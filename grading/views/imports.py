"""The import page of a run: upload agent runs or trainer dumps from the browser (admins), and watch the jobs.

Thin: the same fields, limits and refusals as POST /api/v1/imports/ (`ImportUploadSerializer`,
`store_upload`, `create_import_job`); the job list is the run page's partial, polled by
htmx while a job is queued or running.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from grading.api.imports import ImportUploadSerializer
from grading.ingest.importers.archives import ARCHIVE_SUFFIXES, MAX_BYTES, MAX_MEMBERS
from grading.ingest.importers.common import MAX_JSON_BYTES
from grading.ingest.importers.scan import FORMATS
from grading.ingest.imports.jobs import create_import_job
from grading.ingest.imports.uploads import UploadRefused, store_upload
from grading.models import Capability
from grading.projects.access import page_run
from grading.selectors.imports import import_disk, import_jobs

FORMAT_LABELS = {
    "auto": "Detect per file",
    "gagar-group": "gagar-group/1 group lines (*.jsonl, *.jsonl.gz)",
    "mini-swe-agent": "mini-swe-agent run folders (*.traj.json)",
    "swe-agent": "SWE-agent .traj files",
    "swebench": "SWE-bench predictions",
    "openhands": "OpenHands output.jsonl",
    "verl": "verl rollout dumps ({step}.jsonl)",
}


def _context(project, run, **extra) -> dict:
    return {
        "project": project,
        "run": run,
        "formats": [(f, FORMAT_LABELS.get(f, f)) for f in FORMATS],
        "archive_suffixes": ", ".join(ARCHIVE_SUFFIXES),
        "max_members": MAX_MEMBERS,
        "max_bytes": MAX_BYTES,
        "max_json_bytes": MAX_JSON_BYTES,
        "values": {"format": "auto", "step": "", "reward_threshold": ""},
        **import_jobs(run),
        **import_disk(project),
        **extra,
    }


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def import_page(request: HttpRequest, project: str, run: str) -> HttpResponse:
    # A member without the ingest capability meets the site's 403 page (gagar_web/errors.py): their role, a way back.
    project_obj, _, run_obj = page_run(request, project, run, Capability.INGEST)
    if request.method != "POST":
        return render(request, "grading/imports.html", _context(project_obj, run_obj))
    values = {key: request.POST.get(key, "") for key in ("format", "step", "reward_threshold")}
    fields = ImportUploadSerializer(
        data={
            "run": run_obj.name,
            "step": values["step"],
            "format": values["format"] or "auto",
            "reward_threshold": values["reward_threshold"] or None,
        }
    )
    errors: list[str] = []
    if not fields.is_valid():
        errors = [f"{name.replace('_', ' ')}: {' '.join(str(m) for m in problems)}" for name, problems in fields.errors.items()]
    else:
        data = fields.validated_data
        try:
            _, sources, uploaded = store_upload(project=project_obj, files=request.FILES.getlist("file"))
            job = create_import_job(
                project=project_obj,
                user=request.user,
                run=run_obj.name,
                step=data["step"],
                fmt=data["format"],
                sources=sources,
                uploaded=uploaded,
                reward_threshold=data.get("reward_threshold"),
            )
        except UploadRefused as exc:
            errors = [str(exc)]
    if errors:
        return render(request, "grading/imports.html", _context(project_obj, run_obj, errors=errors, values=values), status=400)
    messages.success(request, f"Import #{job.pk} queued: {len(uploaded)} file(s). Its progress and summary are below.")
    return redirect("import-page", project=project_obj.name, run=run_obj.name)
