"""Demo data for `make run`: runs and groups (grading), a heuristic grading, and reviewers' judgments
(reviews) -- so it lives in reviews, which may import grading."""

import orjson
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from grading.comparisons.services import ComparisonError, create_comparison
from grading.ingest.demo import demo_groups
from grading.ingest.service import ingest_group_lines
from grading.jobs.grade import grade_group
from grading.models import Comparison, Group, Membership, Project, Role, Run
from reviews.demo import REVIEWERS, demo_evidence, seed_judgments

SIMULATED_RUN = "simulated-rl"
DEMO_COMPARISON = "blind-eval"


class Command(BaseCommand):
    help = "Create a demo project, a demo user (demo/demo, admin of it) and realistic demo groups. Safe to run twice."

    def add_arguments(self, parser):
        parser.add_argument("--project", default="demo")
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", default="demo")
        # 8 steps give the demo run more judged mixed groups than the default calibration
        # minimum asks for (30), so its calibration page shows a fit with enough evidence.
        parser.add_argument("--steps", type=int, default=8)
        parser.add_argument("--groups-per-step", type=int, default=8)
        parser.add_argument("--rollouts", type=int, default=8)
        parser.add_argument("--no-grade", action="store_true", help="leave the mixed groups ungraded (fallback)")
        parser.add_argument(
            "--no-simulate",
            action="store_true",
            help="skip the simulated training run (it serves HTTP from this process, so it needs committed data)",
        )

    def handle(
        self, *args, project, username, password, steps, groups_per_step, rollouts, no_grade=False, no_simulate=False, **options
    ):
        with transaction.atomic():
            project_obj, _ = Project.objects.get_or_create(
                name=project,
                defaults={"description": "Generated demo groups: SWE-bench-like tasks, multi-file patches, long trajectories."},
            )
            user, created = get_user_model().objects.get_or_create(
                username=username, defaults={"is_staff": True, "is_superuser": True}
            )
            if created:
                user.set_password(password)
                user.save(update_fields=["password"])
            Membership.objects.get_or_create(project=project_obj, user=user, defaults={"role": Role.ADMIN})
        lines = (
            (n, orjson.dumps(group))
            for n, group in enumerate(demo_groups(steps=steps, groups_per_step=groups_per_step, n_rollouts=rollouts), start=1)
        )
        report = ingest_group_lines(project=project_obj, lines=lines)
        self.stdout.write(
            f"demo project {project!r}: {report.groups_created} groups created, {report.groups_unchanged} unchanged, "
            f"{report.rollouts_created} rollouts created, {report.refused} refused"
        )
        for err in report.errors:
            self.stdout.write(f"  line {err.line}: {err.error}")
        if not no_grade:
            # The heuristic grader needs no server, so a fresh machine shows verdicts, evidence
            # and redistributed credit rather than fallbacks everywhere.
            mixed = Group.objects.filter(run__project=project_obj, run__name="demo-run", is_mixed=True).values_list(
                "id", flat=True
            )
            statuses = [grade_group(group_id=group_id, backend="heuristic").status for group_id in mixed]
            self.stdout.write(
                f"graded {len(statuses)} mixed groups with the heuristic grader ({statuses.count('valid')} valid verdicts)"
            )
            counts = seed_judgments(project=project_obj, password=password)
            self.stdout.write(
                f"demo reviewers {', '.join(REVIEWERS)} (password {password!r}): "
                f"{counts['stored']} judgments stored, {counts['kept']} already there"
            )
            self.stdout.write(demo_evidence(project=project_obj, run_name="demo-run"))
            self._comparison(project_obj, steps)
            if not no_simulate and not Run.objects.filter(project=project_obj, name=SIMULATED_RUN).exists():
                # A run a trainer drove through the client: policy set first, steps posted, waited for, taken.
                call_command("simulate_training", project=project, run=SIMULATED_RUN, steps=3, stdout=self.stdout)
        self.stdout.write(self.style.SUCCESS(f"Log in at http://127.0.0.1:8000/ as {username!r} with password {password!r}"))

    def _comparison(self, project: Project, steps: int) -> None:
        """A blind comparison of the demo run's early and late checkpoints, graded by the
        heuristic grader, its groups in the review queue for people (grading.comparisons)."""
        if steps < 2 or Comparison.objects.filter(project=project, name=DEMO_COMPARISON).exists():
            return
        half = steps // 2
        try:
            comparison = create_comparison(
                project=project,
                body={
                    "name": DEMO_COMPARISON,
                    "a": {"run": "demo-run", "steps": [1, half]},
                    "b": {"run": "demo-run", "steps": [half + 1, steps]},
                    "per_side": 3,
                },
            )
        except ComparisonError as exc:
            self.stdout.write(f"no demo comparison: {exc.field}: {exc}")
            return
        groups = list(comparison.run.groups.values_list("id", flat=True))
        statuses = [grade_group(group_id=group_id, backend="heuristic").status for group_id in groups]
        self.stdout.write(
            f"comparison {DEMO_COMPARISON!r} of {comparison.label_a} and {comparison.label_b}: {len(groups)} cross-run "
            f"groups, {statuses.count('valid')} graded by the heuristic grader"
        )
