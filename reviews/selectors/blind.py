"""Who must not see grader fields yet: open blind assignments, and verdicts a person has not been shown."""

from __future__ import annotations

from django.db.models import QuerySet

from grading.models import Group, Project, Run, Verdict
from reviews.models import Assignment, Reveal


def open_blind_group_ids(*, project: Project, user) -> QuerySet:
    """Groups of the project this person still has to judge blind: an open, blind assignment
    they have not asked to reveal. No figure derived from the grader's verdict on these may
    reach them, however aggregated (a step or repo slice can hold just their group). Lazy:
    used as a subquery it costs no query of its own."""
    if user is None or not getattr(user, "is_authenticated", False):
        return Assignment.objects.none().values_list("group_id", flat=True)
    return Assignment.objects.filter(reviewer=user, group__run__project=project).open_blind().values_list("group_id", flat=True)


def open_blind_count(*, project: Project, user, run: Run) -> int:
    """How many groups of `run` this person still has to judge blind (open_blind_group_ids)."""
    return open_blind_group_ids(project=project, user=user).filter(group__run=run).count()


def open_blind_groups(*, project: Project, user) -> set[int]:
    return set(open_blind_group_ids(project=project, user=user))


def needs_browse_reveal(*, user, group: Group, verdict: Verdict | None) -> bool:
    """Grader fields about to be shown to someone who has not seen this verdict yet."""
    if verdict is None:
        return False
    return not Reveal.objects.filter(group=group, user=user, verdict=verdict).exists()
