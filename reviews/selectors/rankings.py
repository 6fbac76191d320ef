"""How each rater ranked a group's rollouts: the grader's valid verdict, each person's judgment."""

from __future__ import annotations

from grading.models import Group, RolloutGrade, Verdict
from grading.selectors.verdicts import shown_verdict
from reviews.models import Judgment, JudgmentItem
from reviews.stats import consensus


def grader_ranking(group: Group) -> tuple[Verdict | None, consensus.Ranking]:
    verdict = shown_verdict(group)
    if verdict is None or verdict.status != Verdict.Status.VALID:
        return verdict, {}
    grades = RolloutGrade.objects.filter(verdict=verdict).values_list("rollout__index", "tier", "rank")
    return verdict, {index: (tier, rank) for index, tier, rank in grades}


def human_rankings(group: Group) -> dict[Judgment, consensus.Ranking]:
    rankings: dict[Judgment, consensus.Ranking] = {}
    judgments = {j.pk: j for j in Judgment.objects.filter(group=group).select_related("reviewer")}
    for judgment in judgments.values():
        rankings[judgment] = {}
    for judgment_id, index, tier, rank in JudgmentItem.objects.filter(judgment__group=group).values_list(
        "judgment_id", "rollout__index", "tier", "rank"
    ):
        rankings[judgments[judgment_id]][index] = (tier, rank)
    return rankings
