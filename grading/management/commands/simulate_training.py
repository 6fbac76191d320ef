"""Play a trainer against this service through the trainer client, step after step.

    python manage.py simulate_training --project demo --steps 5
    python manage.py simulate_training --project demo --steps 5 --url http://127.0.0.1:8000 --token gagar_...

Each step: generate realistic groups (SWE-bench-like tasks, multi-file patches, long
trajectories), post them, wait until the step is final, pull A* and print one line. With
no --url the service is served from this process on a free loopback port (real HTTP,
through Django's WSGI application), so the command also works where nothing is running.
"""

from __future__ import annotations

import random
import threading
import time
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.core.wsgi import get_wsgi_application
from django.db import connections

from grading.ingest.demo import make_group
from grading.models import Membership, Project, Role
from grading.projects.tokens import issue_api_token


class _ThreadingWSGIServer(WSGIServer):
    daemon_threads = True

    def process_request(self, request, client_address):  # one thread per request, like a threaded server
        thread = threading.Thread(target=self._handle, args=(request, client_address), daemon=True)
        thread.start()

    def _handle(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        except Exception:  # noqa: BLE001  reported as socketserver's ThreadingMixIn reports it
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            connections.close_all()  # this request's thread ends here; its database connection with it


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


class Command(BaseCommand):
    help = "Play a trainer through the trainer client: post steps, wait until final, pull the redistributed advantages."

    def add_arguments(self, parser):
        parser.add_argument("--project", default="demo")
        parser.add_argument("--run", default="simulated-rl")
        parser.add_argument("--steps", type=int, default=5)
        parser.add_argument("--groups", type=int, default=8, help="groups (tasks) per step")
        parser.add_argument("--rollouts", type=int, default=8, help="rollouts per group")
        parser.add_argument("--auto-grade", default="heuristic", choices=["heuristic", "llm"])
        parser.add_argument("--deadline", type=int, default=600, help="the run's grading deadline in seconds")
        parser.add_argument("--url", default="", help="a running service; default: serve one from this process")
        parser.add_argument("--token", default="", help="an admin API token of the project (made for you without --url)")
        parser.add_argument("--timeout", type=float, default=900, help="seconds to wait for a step before giving up")
        parser.add_argument("--seed", type=int, default=11)

    def handle(self, *args, project, run, steps, groups, rollouts, auto_grade, deadline, url, token, timeout, seed, **options):
        try:  # the trainer's client is a package of its own (./client), maybe not installed
            from gagar_client import Client, GagarError
        except ImportError:
            raise CommandError("the trainer client is not installed: pip install -e ./client") from None
        if steps < 1 or groups < 1 or rollouts < 2:
            raise CommandError("--steps and --groups must be at least 1 and --rollouts at least 2")
        server = None
        if not url:
            if not Project.objects.filter(name=project).exists():
                raise CommandError(f"no project {project!r} (run seed_demo, or create it)")
            token = token or self._token(project)
            server = make_server(
                "127.0.0.1", 0, get_wsgi_application(), server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
            )
            threading.Thread(target=server.serve_forever, daemon=True).start()
            url = f"http://127.0.0.1:{server.server_port}"
        elif not token:
            raise CommandError("--url needs --token (an admin API token of the project)")
        try:
            self._play(
                Client(url, token, project=project, timeout=120),
                GagarError,
                run=run,
                steps=steps,
                groups=groups,
                rollouts=rollouts,
                auto_grade=auto_grade,
                deadline=deadline,
                timeout=timeout,
                seed=seed,
            )
        finally:
            if server is not None:
                server.shutdown()
                server.server_close()

    def _token(self, project: str) -> str:
        """An admin token for a 'trainer-bot' user (posting groups needs ingest rights)."""
        user, _ = get_user_model().objects.get_or_create(username="trainer-bot")
        Membership.objects.get_or_create(project=Project.objects.get(name=project), user=user, defaults={"role": Role.ADMIN})
        return issue_api_token(username="trainer-bot", project_name=project, role=Role.ADMIN)[1]

    def _play(self, gagar, GagarError, *, run, steps, groups, rollouts, auto_grade, deadline, timeout, seed):
        try:
            policy = gagar.ensure_run(run, auto_grade=auto_grade, grading_deadline_seconds=deadline)
        except GagarError as exc:
            raise CommandError(f"cannot set up run {run!r}: {exc}") from None
        first = policy.get("steps", 0) + 1  # a second simulation continues the run
        self.stdout.write(
            f"run {run!r}: auto_grade={policy['auto_grade']} ({policy.get('grader')}), "
            f"deadline {policy['grading_deadline_seconds']} s, steps {first}..{first + steps - 1}"
        )
        rng = random.Random(seed + first)
        for step in range(first, first + steps):
            batch = [make_group(rng, run=run, step=step, task_number=t, n_rollouts=rollouts) for t in range(groups)]
            started = time.monotonic()
            report = gagar.post_step(run, step, batch)
            posted = time.monotonic()
            rows = gagar.wait_for_step(run, step, timeout=timeout)
            final = time.monotonic()
            a_star = gagar.advantages(run, step, inputs_version=rows.inputs_version)
            status = gagar.step_status(run, step)
            moved = sum(abs(a_star[(r["uid"], r["index"])] - r["advantage"]) for r in rows)
            self.stdout.write(
                f"step {step}: {status['groups']} groups, {status['mixed']} mixed, {status['graded']} graded, "
                f"{status['fallback']} fell back; posted in {posted - started:.2f} s, final {final - posted:.2f} s later "
                f"(inputs_version {rows.inputs_version}); {len(a_star)} advantages, credit moved {moved:.3f}; "
                f"{report['grading']['queued']} groups queued for grading"
            )
