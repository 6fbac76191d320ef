"""`manage.py scan PATH...`: the reward-hack scanners over files, before import, with no database."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from grading.grader.prescreen.offline import BadInput, Scanner, encode, inert

NO_FINDING, FINDING, BAD_INPUT = 0, 1, 2


class Command(BaseCommand):
    help = (
        "Run the reward-hack scanners over gagar-group/1 JSON Lines (.jsonl, .jsonl.gz) and agent runs (what "
        "import_runs reads: mini-swe-agent run folders, SWE-agent .traj, SWE-bench predictions, OpenHands "
        "output.jsonl, verl dumps) without a database. Prints one JSON line per finding on standard output and "
        "each bad input on standard error. Exit status: 0 no finding, 1 some finding, 2 some input could not be "
        "read or scanned (2 wins over 1)."
    )
    # Nothing here touches the database: no system checks (some read it), no migration check.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="run folder, trajectory, predictions or group lines")
        parser.add_argument("--cheats-only", action="store_true", help="print only cheat findings; exit 1 only for those")
        parser.add_argument(
            "--future-history",
            action="store_true",
            help="the benchmark's images hold history past the base commit (commit0): reading it is no leak",
        )

    def handle(self, *args, paths, cheats_only, future_history, **options):
        started = time.monotonic()
        findings = cheats = bad = 0
        scanner = Scanner(future_history=future_history, max_line_bytes=settings.GAGAR_MAX_LINE_BYTES)
        for item in scanner.scan(paths):
            if isinstance(item, BadInput):
                bad += 1
                self.stderr.write(f"scan: {inert(str(item))}")
                continue
            if cheats_only and not item.signal.cheat:
                continue
            findings += 1
            cheats += item.signal.cheat
            self.stdout.write(encode(item.as_dict()))
        summary = (
            f"{scanner.rollouts} rollout(s) in {scanner.groups} group(s): {findings} finding(s), {cheats} cheat(s), "
            f"{bad} bad input(s) in {time.monotonic() - started:.1f} s" + (" (cheats only)" if cheats_only else "")
        )
        code = BAD_INPUT if bad else FINDING if findings else NO_FINDING
        if code != NO_FINDING:
            raise CommandError(summary, returncode=code)
        self.stderr.write(f"scan: {summary}")
