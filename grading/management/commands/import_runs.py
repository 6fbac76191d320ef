import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.ingest.importers.scan import FORMATS, IGNORED, NOTICE, SKIPPED, UNKNOWN, Source
from grading.ingest.imports.runs import ImportSummary, import_runs
from grading.models import Project

LISTED = 50  # findings printed per kind; the rest are counted


class Command(BaseCommand):
    help = (
        "Import gagar-group/1 JSON Lines (.jsonl, .jsonl.gz) and agent runs — mini-swe-agent run folders, SWE-agent "
        ".traj files, SWE-bench predictions, OpenHands "
        "output.jsonl, verl rollout dumps ({step}.jsonl) — with their SWE-bench verdicts into one (run, step): one group "
        "per instance, one rollout per attempt (verl dumps: one group per uid or prompt, at the dump's own steps). "
        "Several PATHs are several runs of the same tasks. Exits non-zero when nothing was imported, or when any file, "
        "attempt or group was refused (files no importer reads, such as logs, are listed as not read and refuse nothing)."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="run folder, trajectory or predictions file")
        parser.add_argument("--project", required=True)
        parser.add_argument("--run", required=True, help="run name (created if new)")
        parser.add_argument("--step", required=True, type=int, help="step number of the groups (uid <instance_id>@<step>)")
        parser.add_argument("--format", default="auto", choices=FORMATS, help="default: detected per file")
        parser.add_argument(
            "--reward-threshold",
            type=float,
            default=None,
            metavar="X",
            help="verl dumps: a score >= X passes (without it, a score that is not 0 or 1 refuses its file)",
        )
        parser.add_argument("--create-project", action="store_true", help="create the project if it does not exist")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, paths, project, run, step, format, reward_threshold, create_project, no_progress, **options):
        if step < 0:
            raise CommandError("--step must be >= 0")
        try:
            project_obj = Project.objects.get(name=project)
        except Project.DoesNotExist:
            if not create_project:
                raise CommandError(f"no project {project!r} (use --create-project to create it)") from None
            project_obj = Project.objects.create(name=project)

        bar = tqdm(total=0, unit="instance", desc="import", disable=no_progress, file=sys.stderr)

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.update(done - bar.n)

        try:
            summary = import_runs(
                project=project_obj,
                run=run,
                step=step,
                sources=[Source(Path(p)) for p in paths],
                fmt=format,
                reward_threshold=reward_threshold,
                on_progress=progress,
            )
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        self._print(summary, run, step)
        nothing = summary.nothing_imported()
        if nothing:
            raise CommandError(nothing)
        warnings = summary.warnings()
        if warnings:
            raise CommandError(
                f"{summary.groups} group(s) imported, but {len(warnings)} file(s), attempt(s) or group(s) were refused "
                "(listed above under skipped and refused groups)"
            )

    def _print(self, s: ImportSummary, run: str, step: int) -> None:
        w = self.stdout.write
        w(f"run {run} step {step}: {s.files} files ({s.bytes / 1e6:.1f} MB), {s.instances} instances")
        w(
            f"groups: {s.groups} ({s.groups_created} created, {s.groups_extended} extended, {s.groups_unchanged} unchanged), "
            f"{s.groups_mixed} mixed"
        )
        w(
            f"rollouts: {s.rollouts} ({s.rollouts_created} created, {s.rollouts_unchanged} unchanged) · "
            f"{s.rollouts_passed} pass, {s.rollouts_failed} fail, {s.rollouts_unknown} unknown reward"
        )
        for kind, title in ((UNKNOWN, "reward unknown"), (SKIPPED, "skipped"), (IGNORED, "not read"), (NOTICE, "notes")):
            items = s.of_kind(kind)
            if not items:
                continue
            w(f"{title}: {len(items)}")
            for item in items[:LISTED]:
                w(f"  {item.ref}: {item.reason}")
            if len(items) > LISTED:
                w(f"  … and {len(items) - LISTED} more")
        if s.refused:
            w(f"refused groups: {len(s.refused)}")
            for refusal in s.refused[:LISTED]:
                w(f"  {refusal['uid']}: {refusal['error']}")
        if s.aborted:
            w(f"aborted: {s.aborted}")
