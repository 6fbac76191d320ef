"""The review queue page and the adjudication queue as view models: every list read and
evaluated here, so the templates (reviews/queue.html, adjudication.html) issue no query."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from django.core.paginator import Page, Paginator
from django.shortcuts import get_object_or_404
from django.utils import timezone

from grading.models import Capability, Membership, Project, Run
from reviews.access import sees_why_next
from reviews.models import GroupReview
from reviews.selectors.adjudication import adjudication_counts, adjudication_queue, adjudication_rows
from reviews.selectors.progress import my_assignments, my_progress, project_review_totals, team_progress
from reviews.selectors.queue import policy_for, queue_groups, why_next

UPCOMING = 10
ADJUDICATION_PER_PAGE = 50


def run_filter(project: Project, name: str) -> Run | None:
    """The run a queue is narrowed to (`?run=`), 404 when the project has none of that name."""
    return get_object_or_404(Run, project=project, name=name) if name else None


@dataclass(frozen=True)
class QueuePage:
    project: Project
    membership: Membership
    run: Run | None
    runs: tuple[Run, ...]
    policy: Any
    progress: dict
    assignments: tuple
    upcoming: tuple  # (group, why it is next: "" unless the viewer sees_why_next)
    explained: bool  # the viewer is told why each group is next
    totals: dict
    team: list | None

    def context(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def queue_page(*, project: Project, membership: Membership, reviewer, run: Run | None) -> QueuePage:
    """The next groups for `reviewer`, their progress and recent assignments, the project's
    totals, and the team's progress for those who manage the project."""
    policy = policy_for(project)
    runs = tuple(project.runs.all())
    groups = list(queue_groups(project=project, reviewer=reviewer, run=run, policy=policy)[:UPCOMING])
    explained = sees_why_next(membership)  # none of these is theirs yet, so none is judged blind
    now = timezone.now()
    upcoming = tuple((g, why_next(g, policy=policy, now=now) if explained else "") for g in groups)
    return QueuePage(
        project=project,
        membership=membership,
        run=run,
        runs=runs,
        policy=policy,
        progress=my_progress(project=project, reviewer=reviewer),
        assignments=tuple(my_assignments(project=project, reviewer=reviewer)),
        upcoming=upcoming,
        explained=explained,
        totals=project_review_totals(project),
        team=team_progress(project) if Capability.MANAGE in membership.capabilities else None,
    )


def adjudication_page(*, project: Project, include_done: bool, number) -> tuple[Page, list[GroupReview], dict]:
    """A page of the adjudication queue, its rows (read in full) and the queue's totals.
    The page is counted from the totals, not by a second count."""
    totals = adjudication_counts(project)
    paginator = Paginator(adjudication_queue(project, include_done=include_done), ADJUDICATION_PER_PAGE)
    paginator.count = totals["needs_adjudication"] + (totals["adjudicated"] if include_done else 0)  # known: no second count
    page = paginator.get_page(number)
    rows: list[GroupReview] = adjudication_rows(list(page.object_list))
    page.object_list = rows
    return page, rows, totals
