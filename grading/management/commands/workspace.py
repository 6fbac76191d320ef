"""Look at a group's grader workspace by hand: what read_file, search_code and run_check return."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from grading.registry.checks import check_settings_for, configured_sandbox
from grading.registry.workspaces import find_group, load_workspace
from grading.repos.types import BASE, At, RepoError


class Command(BaseCommand):
    help = (
        "Print what the grader's workspace tools return for one group: a file (--cat, its bytes as stored; a directory "
        "lists its entries), the lines matching a pattern (--grep, path:line:text), or a command's output in the check "
        "sandbox under the project's check limits (--exec; the last line is exit=<status>), at the base commit (--base, "
        "the default) or at a rollout's state (--rollout N)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--run", required=True)
        parser.add_argument("--uid", required=True, help="the group's uid")
        where = parser.add_mutually_exclusive_group()
        where.add_argument("--rollout", type=int, help="a rollout's state: its patch applied at the base commit")
        where.add_argument("--base", action="store_true", help="the task's base commit (the default)")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--cat", metavar="PATH")
        what.add_argument("--grep", metavar="PATTERN", help="a POSIX extended regular expression")
        what.add_argument("--exec", metavar="COMMAND", dest="command", help="a shell command line, run in the sandbox")

    def handle(self, *args, project, run, uid, rollout, base, cat, grep, command, **options):
        group = find_group(project=project, run=run, uid=uid)
        if group is None:
            raise CommandError(f"no group {uid!r} in run {run!r} of project {project!r}")
        workspace = load_workspace(group)
        view = workspace.repo_view
        if view is None:
            raise CommandError(f"group {uid!r} has no repository: its task names none, or GAGAR_REPO_CACHE is empty")
        at: At = BASE if rollout is None else rollout
        if rollout is not None and all(r.index != rollout for r in workspace.rollouts):
            raise CommandError(f"group {uid!r} has no rollout {rollout}; it has {[r.index for r in workspace.rollouts]}")
        try:
            if cat is not None:
                self._cat(view, at, cat)
            elif grep is not None:
                found = view.grep(at, grep, max_matches=10_000)
                for m in found.matches:
                    self.stdout.write(f"{m.path}:{m.line}:{m.text}")
                if found.truncated:
                    self.stderr.write(
                        "(more matches than shown" + (": the search hit its time bound)" if found.timed_out else ")")
                    )
            else:
                sandbox = configured_sandbox()
                result = sandbox.run(view.checkout(at), command, check_settings_for(group.run.project_id).limits())
                self.stdout.write(result.output, ending="" if result.output.endswith("\n") or not result.output else "\n")
                if result.truncated:
                    self.stdout.write(f"(output cut at {len(result.output)} of {result.output_bytes} bytes)")
                status = result.exit_status if result.exit_status is not None else f"none (stopped: {result.killed})"
                self.stdout.write(f"exit={status}")
        except RepoError as exc:
            raise CommandError(str(exc)) from None

    def _cat(self, view, at: At, path: str) -> None:
        path = path.strip().strip("/")
        try:
            data = None if not path else view.read(at, path)
        except RepoError as exc:
            if "directory" not in str(exc):
                raise
            data = None
        if data is None:
            for entry in view.list(at, path):
                self.stdout.write(entry.name + ("/" if entry.kind == "directory" else ""))
            return
        binary = getattr(self.stdout._out, "buffer", None)  # the file as stored, byte for byte, on a real stdout
        if binary is None:
            self.stdout.write(data.decode("utf-8", errors="replace"), ending="")
            return
        self.stdout.flush()
        binary.write(data)
        binary.flush()
