from django.core.management.base import BaseCommand, CommandError
from django.utils.text import slugify

from grading.models import Role
from grading.projects.tokens import issue_api_token


class Command(BaseCommand):
    help = "Create (if needed) USERNAME and its membership in --project with --role, then print a new API token (only the token)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--project", required=True)
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--name", default="", help="a label for the token, e.g. the script using it")

    def handle(self, *args, username, project, role, name, **options):
        if slugify(project) != project:
            raise CommandError(f"project name {project!r} must be a slug (letters, digits, - and _)")
        _, secret = issue_api_token(username=username, project_name=project, role=role, token_name=name)
        self.stdout.write(secret)
