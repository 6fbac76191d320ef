"""The grader's verdict of a group as people see it, its grades, the checks it ran and the
per-token weights it gave."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import QuerySet

from grading.method.services.computation import policy_verdicts
from grading.method.services.mappings import active_mapping
from grading.method.turn_weights import cited_turns
from grading.models import AdvantageResult, Group, RolloutGrade, Run, Verdict, VerdictCheck


def _shown_from(made: QuerySet, run: Run) -> list[QuerySet]:
    """Where shown_verdict looks, in order, among `made` (verdicts by graders, of `run`'s
    groups): the verdicts the run's method reads, then — a jury still waiting — its members'."""
    read = policy_verdicts(made, run)
    return [read] if run.jury_id is None else [read, made.filter(bench_only=False)]


def shown_verdict(group: Group) -> Verdict | None:
    """The grader's verdict of `group` as people see it (the group page, a reveal, a reviewer's
    disagreement with the grader): the newest the run's method reads (policy_verdicts: its
    jury's when it names one; never a campaign's bench-only verdict), else — a jury still
    waiting — its members' newest; never one a person settled (Verdict.objects.by_graders).
    `group.run` is read (select it with the group). Many groups at once: shown_verdict_ids."""
    made = Verdict.objects.by_graders().filter(group=group)  # ordered newest first
    for where in _shown_from(made, group.run):
        if (verdict := where.first()) is not None:
            return verdict
    return None


def shown_verdict_ids(groups: Iterable[Group]) -> dict[int, int]:
    """shown_verdict's id for each of `groups` that has one (their `run` read: select it with
    them), by group id: one query a run, two on a run whose jury still waits on some."""
    by_run: dict[int, tuple[Run, list[int]]] = {}
    for group in groups:
        by_run.setdefault(group.run_id, (group.run, []))[1].append(group.pk)
    out: dict[int, int] = {}
    for run, ids in by_run.values():
        for where in _shown_from(Verdict.objects.by_graders(), run):
            left = [i for i in ids if i not in out]
            if not left:
                break
            for group_id, verdict_id in (
                where.filter(group_id__in=left).order_by("group_id", "-created_at", "-id").values_list("group_id", "id")
            ):
                out.setdefault(group_id, verdict_id)
    return out


def settled_without_grader(group: Group) -> Verdict | None:
    """The verdict that settled `group` without a model call (settled_by identical-patches,
    grading.verdicts.identical) when it is the newest the run's method reads, else None: what
    the group page says in place of a grader's verdict. `group.run` is read; one query."""
    newest = policy_verdicts(Verdict.objects.on_record().filter(group=group), group.run).first()
    return newest if newest is not None and newest.settled_by == Verdict.SettledBy.IDENTICAL_PATCHES else None


def latest_verdict(group: Group):
    """The group's verdict as people see it (shown_verdict) and its grades by rollout index."""
    verdict = shown_verdict(group)
    if verdict is None:
        return None, {}
    grades = {
        g.rollout.index: g
        for g in RolloutGrade.objects.filter(verdict=verdict)
        .select_related("rollout")
        .only("tier", "rank", "scores", "cheat", "evidence", "uncited", "rollout__index")
    }
    return verdict, grades


CHECK_FIELDS = ("number", "command", "exit_status", "seconds", "output", "truncated", "killed", "sandbox", "rollout")


def verdict_checks(verdict: Verdict) -> list[VerdictCheck]:
    """The commands `verdict`'s grader ran in its sandbox, in order, with their rollouts' indexes
    (one query; none for a verdict that ran none)."""
    if not verdict.n_checks:
        return []
    return list(
        VerdictCheck.objects.filter(verdict=verdict)
        .select_related("rollout")
        .only(*CHECK_FIELDS, "rollout__index")
        .order_by("number")
    )


def turn_weights_of(group: Group, grades: dict) -> dict[int, list[tuple[int, float, str]]]:
    """Per-token advantages (docs/method.md §9) of a run that gives them: for each graded rollout
    (`grades`, by index), the turns its rows carry a weight below 1 for, with the category the
    verdict cited each for: {index: [(turn, weight, category)]}; [] is uniform. As the trainer's
    rows were last computed under the run's active mapping; {} when the run gives none. Three
    queries (the active mapping takes two)."""
    if not grades or not group.run.turn_weights:
        return {}
    stored = AdvantageResult.objects.filter(
        step_id=group.step_id, uid=group.uid, mapping=active_mapping(group.run), index__in=list(grades)
    ).values_list("index", "turn_weights")
    out = {}
    for index, weights in stored:
        cited = cited_turns(grades[index].evidence, rollout=index, n_messages=10**9)
        out[index] = sorted((int(turn), float(weight), cited.get(int(turn), "")) for turn, weight in (weights or {}).items())
    return out
