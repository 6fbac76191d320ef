from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from grading.models import ApiToken
from grading.projects.accounts import forged_tokens


class Command(BaseCommand):
    help = (
        "List live API tokens made on a project's Team page that act as someone other than the admin who made them "
        "and not as a service account of that project (another person, staff, a superuser). Exits 1 when there are "
        "any, unless --revoke revokes them. Tokens from create_api_token are the operator's and never listed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--revoke", action="store_true", help="revoke the tokens listed")

    def handle(self, *args, revoke: bool, **options):
        found = forged_tokens()
        for f in found:
            t = f.token
            self.stdout.write(
                f"{t.project.name}: token {t.prefix}…{f' ({t.name})' if t.name else ''} acts as "
                f"{t.user.username}, {f.why}; made by {f.maker.username} on the team page, "
                f"{t.created_at:%Y-%m-%d %H:%M}"
            )
        if not found:
            self.stdout.write("No token acts as someone other than its maker.")
            return
        if revoke:
            with transaction.atomic():
                n = ApiToken.objects.filter(pk__in=[f.token.pk for f in found], revoked_at__isnull=True).update(
                    revoked_at=timezone.now()
                )
            self.stdout.write(
                f"Revoked {n} token{'s' if n != 1 else ''}. Check the memberships they were given on each project's Team page."
            )
            return
        raise CommandError(
            f"{len(found)} token{'s' if len(found) != 1 else ''} act as someone other than their maker; "
            "revoke them on the Team page, or run again with --revoke",
            returncode=1,
        )
