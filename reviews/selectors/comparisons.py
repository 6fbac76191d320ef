"""Blind comparisons as pages and the API read them: the list, one comparison's figures by the
judge asked for (people, or one grader), and its judgments as a dataset.

Who sees what: a comparison's sides and figures are withheld from a person who judges, or may
still be served, any of its groups blind (reviews.selectors.blind.withheld_groups) — the figures
would tell them which side a lane is on — until they have judged, skipped or revealed them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from django.db.models import Count, Q

from grading.comparisons.figures import FIGURES, Candidate, Interval, candidate_score, counts, figures
from grading.models import Comparison, ComparisonEntry, Group, Project, RolloutGrade, Verdict
from reviews.models import Judgment, JudgmentItem
from reviews.selectors.blind import withheld_groups

PEOPLE = "people"
CONTENT_TYPE = "application/x-ndjson"


def comparison_list(project: Project) -> list[Comparison]:
    """The project's comparisons, newest first, each with `n_groups` and `n_judged` (groups with a review). One query."""
    return list(
        Comparison.objects.filter(project=project)
        .select_related("project", "run")
        .annotate(
            n_groups=Count("run__groups", distinct=True),
            n_judged=Count("run__groups", filter=Q(run__groups__judgments__kind=Judgment.Kind.REVIEW), distinct=True),
        )
    )


def comparison_in(project: Project, name: str) -> Comparison | None:
    related = ("project", "run", "run_a", "run_b", "created_by")
    return Comparison.objects.filter(project=project, name=name).select_related(*related).first()


def withheld_runs(project: Project, user) -> frozenset[int]:
    """The runs of the project's comparisons this person may not see the sides and figures of
    yet: those holding a group they judge, or may still be served, blind. Two queries at most."""
    hidden = withheld_groups(project=project, user=user).groups
    if not hidden:
        return frozenset()
    return frozenset(Group.objects.filter(pk__in=hidden, in_comparison=True).values_list("run_id", flat=True).distinct())


def withheld_from(comparison: Comparison, user) -> bool:
    """Whether this person may not see the comparison's sides and figures yet."""
    return comparison.run_id in withheld_runs(comparison.project, user)


def group_count(comparison: Comparison) -> int:
    return Group.objects.filter(run_id=comparison.run_id).count()


def judges(comparison: Comparison) -> list[str]:
    """Who judged its groups: "people" first, then every grader with a verdict on one, by name."""
    graders = (
        Verdict.objects.by_graders()
        .filter(group__run=comparison.run, status=Verdict.Status.VALID)
        .values_list("grader", flat=True)
        .distinct()
        .order_by("grader")
    )
    return [PEOPLE, *graders]


def _sides(comparison: Comparison) -> dict[int, str]:
    return dict(ComparisonEntry.objects.filter(comparison=comparison).values_list("rollout_id", "side"))


def judged_groups(comparison: Comparison, judge: str) -> list[list[list[Candidate]]]:
    """Per group of the comparison (by id), its judgments by `judge` as candidates with sides:
    people's reviews, or the grader's valid verdict. Three queries."""
    sides = _sides(comparison)
    group_ids = list(Group.objects.filter(run=comparison.run).order_by("pk").values_list("pk", flat=True))
    by_judgment: dict[tuple[int, int], list[Candidate]] = defaultdict(list)
    rows: Any
    if judge == PEOPLE:
        rows = JudgmentItem.objects.filter(judgment__group__run=comparison.run, judgment__kind=Judgment.Kind.REVIEW).values_list(
            "judgment__group_id", "judgment_id", "rollout_id", "tier", "rank", "scores"
        )
    else:
        rows = RolloutGrade.objects.filter(
            verdict__group__run=comparison.run,
            verdict__grader=judge,
            verdict__status=Verdict.Status.VALID,
            verdict__settled_by=Verdict.SettledBy.GRADER,
        ).values_list("verdict__group_id", "verdict_id", "rollout_id", "tier", "rank", "scores")
    for group_id, judgment_id, rollout_id, tier, rank, scores in rows.order_by("pk"):
        side = sides.get(rollout_id)
        if side is not None:
            by_judgment[(group_id, judgment_id)].append(Candidate(side, tier, rank, candidate_score(scores)))
    per_group: dict[int, list[list[Candidate]]] = {pk: [] for pk in group_ids}
    for (group_id, _), candidates in sorted(by_judgment.items()):
        per_group.setdefault(group_id, []).append(candidates)
    return [per_group[pk] for pk in group_ids]


@dataclass(frozen=True)
class FigureRow:
    name: str
    label: str
    a: Interval
    b: Interval


@dataclass(frozen=True)
class Report:
    comparison: Comparison
    judge: str
    judges: list[str]
    counts: dict[str, int]
    rows: list[FigureRow]

    def as_dict(self) -> dict:
        return {
            "judge": self.judge,
            "judges": self.judges,
            "counts": self.counts,
            "figures": {row.name: {"a": row.a.as_dict(), "b": row.b.as_dict()} for row in self.rows},
        }


def report(comparison: Comparison, judge: str, *, offered: list[str] | None = None, n_boot: int = 2000) -> Report:
    """The comparison's figures as `judge` judged it, with 95 % bootstrap intervals over groups.
    `offered`: judges(comparison), when the caller has read it already (to check `judge`)."""
    groups = judged_groups(comparison, judge)
    computed = figures(groups, n_boot=n_boot, seed=comparison.seed)
    rows = [FigureRow(name, label, computed[name]["a"], computed[name]["b"]) for name, (label, _, _) in FIGURES.items()]
    offered = offered if offered is not None else judges(comparison)
    return Report(comparison=comparison, judge=judge, judges=offered, counts=counts(groups), rows=rows)


def dataset(comparison: Comparison) -> Iterator[dict]:
    """The comparison as a dataset, one line per cross-run group: its task and, per candidate,
    the side and source it came from and every judgment of it (each person's review and each
    grader's valid verdict). Four queries, whatever the size."""
    entries = {
        e.rollout_id: e for e in ComparisonEntry.objects.filter(comparison=comparison).select_related("rollout__group__task")
    }
    judged: dict[int, list[dict]] = defaultdict(list)
    for rollout_id, who, tier, rank, scores, cheat, blind in JudgmentItem.objects.filter(
        judgment__group__run=comparison.run, judgment__kind=Judgment.Kind.REVIEW
    ).values_list("rollout_id", "judgment__reviewer__username", "tier", "rank", "scores", "cheat", "judgment__blind"):
        judged[rollout_id].append(
            {"judge": f"person:{who}", "blind": blind, "tier": tier, "rank": rank, "scores": scores, "cheat": cheat}
        )
    for rollout_id, grader, tier, rank, scores, cheat in RolloutGrade.objects.filter(
        verdict__group__run=comparison.run, verdict__status=Verdict.Status.VALID, verdict__settled_by=Verdict.SettledBy.GRADER
    ).values_list("rollout_id", "verdict__grader", "tier", "rank", "scores", "cheat"):
        judged[rollout_id].append({"judge": grader, "tier": tier, "rank": rank, "scores": scores, "cheat": cheat})
    groups: dict[int, list[ComparisonEntry]] = defaultdict(list)
    for entry in entries.values():
        groups[entry.rollout.group_id].append(entry)
    for group_id in sorted(groups):
        members = sorted(groups[group_id], key=lambda e: e.rollout.index)
        group = members[0].rollout.group
        yield {
            "format": "gagar-comparison/1",
            "comparison": comparison.name,
            "sides": {"a": comparison.label_a, "b": comparison.label_b},
            "group": group.uid,
            "instance_id": group.task.instance_id,
            "candidates": [
                {
                    "index": e.rollout.index,
                    "side": e.side,
                    "source": e.source_label,
                    "judgments": judged.get(e.rollout_id, []),
                }
                for e in members
            ],
        }


def dataset_lines(comparison: Comparison) -> Iterator[bytes]:
    """`dataset` as JSON Lines."""
    for line in dataset(comparison):
        yield orjson.dumps(line) + b"\n"
