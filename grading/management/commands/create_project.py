from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from grading.projects.create import ProjectError, create_project


class Command(BaseCommand):
    help = "Create the project NAME (a slug), optionally with --admin USERNAME (an existing account) as its first admin."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--description", default="")
        parser.add_argument("--admin", metavar="USERNAME", help="an existing account to make the project's first admin")

    def handle(self, *args, name, description, admin, **options):
        user = None
        if admin:
            user = get_user_model().objects.filter(username=admin).first()
            if user is None:
                raise CommandError(f"no account is called {admin!r} (create it first, e.g. with createsuperuser)")
        try:
            project = create_project(name=name, description=description, admin=user)
        except ProjectError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"project {project.name} created"
            + (
                f", {user.username} is its admin"
                if user
                else "; give it an admin with create_api_token USERNAME --project NAME --role admin, or in the Django admin"
            )
        )
