from django.core.management.base import BaseCommand, CommandError

from grading.models import Project, Role
from grading.projects import create
from grading.projects.tokens import UnknownProject, issue_api_token


class Command(BaseCommand):
    help = (
        "Create (if needed) USERNAME and its membership in --project with --role, then print a new API token (only the token). "
        "The project must exist, unless --create-project is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--project", required=True)
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--name", default="", help="a label for the token, e.g. the script using it")
        parser.add_argument("--create-project", action="store_true", help="create the project when there is none of that name")

    def handle(self, *args, username, project, role, name, create_project: bool, **options):
        if create_project and not Project.objects.filter(name=project).exists():
            try:
                create.create_project(name=project)
            except create.ProjectError as exc:
                raise CommandError(str(exc)) from None
        try:
            _, secret = issue_api_token(username=username, project_name=project, role=role, token_name=name)
        except UnknownProject as exc:
            raise CommandError(f"{exc} (create it with create_project, or pass --create-project)") from None
        self.stdout.write(secret)
