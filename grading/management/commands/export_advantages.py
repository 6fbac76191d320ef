import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.method import export
from grading.method.services.computation import refresh_stale_steps
from grading.method.services.mappings import resolve_mapping
from grading.models import FactorMapping, Project


class Command(BaseCommand):
    help = "Export gagar-advantage/1 rows of a run (or one step) as jsonl, csv or parquet, like GET /api/v1/advantages/."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--run", required=True)
        parser.add_argument("--step", type=int)
        parser.add_argument("--mapping", help="id or name@version; the run's active mapping when omitted")
        parser.add_argument("--format", choices=export.FORMATS, default="jsonl")
        parser.add_argument("--output", "-o", help="file to write; standard output when omitted (not for parquet)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, project, run, step, mapping, format, output, no_progress, **options):
        project_obj = Project.objects.filter(name=project).first()
        if project_obj is None:
            raise CommandError(f"no project {project!r}")
        run_obj = project_obj.runs.filter(name=run).first()
        if run_obj is None:
            raise CommandError(f"no run {run!r} in {project}")
        steps = run_obj.steps.order_by("number")
        if step is not None:
            steps = steps.filter(number=step)
        steps = list(steps)
        if not steps:
            raise CommandError(f"run {run!r} has no step {step}" if step is not None else f"run {run!r} has no steps")
        try:
            mapping_obj = resolve_mapping(run_obj, mapping)
        except FactorMapping.DoesNotExist as exc:
            raise CommandError(str(exc) or f"no mapping {mapping!r}") from None
        if format == "parquet" and not output:
            raise CommandError("parquet needs --output FILE")
        computations = refresh_stale_steps(steps=steps, mapping=mapping_obj)
        total = sum(c.n_rows for c in computations.values())
        sink = Path(output).open("wb") if output else sys.stdout.buffer
        bar = tqdm(total=total, unit="rows", disable=no_progress, file=sys.stderr, desc=f"{run} {mapping_obj.label}")
        try:
            if format == "parquet":
                with export.parquet_file(steps, mapping_obj) as spool:
                    while chunk := spool.read(1 << 20):
                        sink.write(chunk)
                bar.update(total)
            else:
                stream = export.jsonl_stream(steps, mapping_obj) if format == "jsonl" else export.csv_stream(steps, mapping_obj)
                for chunk in stream:
                    sink.write(chunk)
                    bar.update(chunk.count(b"\n"))
        finally:
            bar.close()
            if output:
                sink.close()
        if output:
            self.stderr.write(f"wrote {total} rows ({mapping_obj.label}) to {output}")
