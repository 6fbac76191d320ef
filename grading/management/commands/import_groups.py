import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.formats.linereader import BodyError, iter_lines, open_body
from grading.ingest.service import IngestReport, ingest_group_lines
from grading.models import Project


class Command(BaseCommand):
    help = (
        "Import gagar-group/1 JSON Lines files (gzip allowed) into a project; '-' reads standard input. Exits non-zero "
        "when nothing was imported or any line or file was refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--project", required=True)
        parser.add_argument("--create-project", action="store_true", help="create the project if it does not exist")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, files, project, create_project, no_progress, **options):
        try:
            project_obj = Project.objects.get(name=project)
        except Project.DoesNotExist:
            if not create_project:
                raise CommandError(f"no project {project!r} (use --create-project to create it)") from None
            project_obj = Project.objects.create(name=project)

        failed, accepted = False, 0
        for name in files:
            report = IngestReport()
            if name == "-":
                stream, size = sys.stdin.buffer, None
            else:
                path = Path(name)
                if not path.is_file():
                    self.stderr.write(f"{name}: not a file, skipped")
                    failed = True
                    continue
                stream, size = path.open("rb"), path.stat().st_size
            bar = tqdm(total=size, unit="B", unit_scale=True, desc=Path(name).name, disable=no_progress, file=sys.stderr)
            try:
                lines = iter_lines(open_body(stream), max_line_bytes=settings.GAGAR_MAX_LINE_BYTES)
                # The bar counts decompressed bytes of lines, so for gzip it can pass the file size.
                ingest_group_lines(
                    project=project_obj, lines=lines, report=report, on_line=lambda _n, b, bar=bar: bar.update(b + 1)
                )
            except BodyError as exc:
                report.aborted = str(exc)
            finally:
                bar.close()
                if stream is not sys.stdin.buffer:
                    stream.close()
            failed |= self._summary(name, report)
            accepted += report.accepted
        if not accepted:
            raise CommandError(
                "nothing imported: no line of "
                + ("any file" if len(files) > 1 else "the file")
                + " was accepted (see above; agent runs and SWE-bench files go through import_runs)"
            )
        if failed:
            raise CommandError(f"{accepted} group(s) imported, but some lines or files were refused (see above)")

    def _summary(self, name: str, report: IngestReport) -> bool:
        self.stdout.write(
            f"{name}: {report.lines} lines · groups {report.groups_created} created, {report.groups_extended} extended, "
            f"{report.groups_unchanged} unchanged · rollouts {report.rollouts_created} created, "
            f"{report.rollouts_unchanged} unchanged · {report.refused} refused"
        )
        for err in report.errors:
            self.stdout.write(f"  line {err.line}: {err.error}")
        if report.refused > len(report.errors):
            self.stdout.write(f"  … and {report.refused - len(report.errors)} more refused lines")
        if report.aborted:
            self.stdout.write(f"  aborted: {report.aborted}")
        return bool(report.refused or report.aborted)
