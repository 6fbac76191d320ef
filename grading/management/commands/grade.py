import sys
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from grading.jobs.grade import queue_step
from grading.models import GradingJob, Step, Verdict
from grading.registry.backends import BACKENDS, GraderUnavailable, grader_for, grader_name


class Command(BaseCommand):
    help = "Grade the mixed groups of a step (one Celery job per group), wait for them and print a summary."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--run", required=True)
        parser.add_argument("--step", type=int, required=True)
        parser.add_argument("--backend", choices=BACKENDS, default="heuristic")
        parser.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the step's jobs")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args, project, run, step, backend, timeout, no_progress, **options):
        step_obj = Step.objects.filter(run__project__name=project, run__name=run, number=step).select_related("run").first()
        if step_obj is None:
            raise CommandError(f"no step {step} of run {run!r} in project {project!r}")
        try:
            grader_for(backend)
            name = grader_name(backend, step_obj.run.project_id)  # the LLM grader's carries the project's guide version
            queue_step(step=step_obj, backend=backend)
        except GraderUnavailable as exc:
            raise CommandError(str(exc)) from None
        jobs = GradingJob.objects.filter(group__step=step_obj, grader=name)
        total = jobs.count()
        bar = tqdm(total=total, unit="group", disable=no_progress, file=sys.stderr, desc=f"{name} step {step}")
        deadline = time.monotonic() + timeout
        finished = 0
        while True:
            finished_now = jobs.filter(status__in=[GradingJob.Status.DONE, GradingJob.Status.FAILED]).count()
            bar.update(finished_now - finished)
            finished = finished_now
            if finished >= total or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        bar.close()
        verdicts = Verdict.objects.filter(group__step=step_obj, grader=name)
        counts = {status: verdicts.filter(status=status).count() for status in Verdict.Status.values}
        latencies = sorted(j.latency_s for j in jobs if j.latency_s is not None)
        median = f"{latencies[len(latencies) // 2]:.2f} s" if latencies else "–"
        self.stdout.write(
            f"step {step}: {total} mixed groups · verdicts valid {counts['valid']}, invalid {counts['invalid']}, "
            f"timeout {counts['timeout']} · median latency {median}"
        )
        for job in jobs.exclude(error="").select_related("group")[:20]:
            self.stdout.write(f"  {job.group.uid}: {job.error[:200]}")
        if finished < total:
            raise CommandError(f"{total - finished} jobs still running after {timeout:.0f} s; is a worker up?")
