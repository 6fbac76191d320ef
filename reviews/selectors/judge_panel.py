"""The judge panel: where the grader differs from this person, and the rankings an adjudication starts from."""

from __future__ import annotations

from reviews.models import Judgment
from reviews.selectors.lanes import Lanes


def grader_says(mine: dict, grade) -> str:
    """What the grader says of a rollout where it differs from this person's judgment ("T2",
    "cheat", "T2, no cheat"), or "" where it agrees: the same tier and the same cheat call.
    `mine`: the person's item as the page holds it (tier, cheat); `grade`: a RolloutGrade."""
    tier_differs = grade.tier != mine.get("tier")
    cheat_differs = bool(grade.cheat) != bool(mine.get("cheat"))
    if not (tier_differs or cheat_differs):
        return ""
    parts = [grade.tier] if tier_differs else []
    if cheat_differs:
        parts.append("cheat" if grade.cheat else "no cheat")
    return ", ".join(parts)


def start_rankings(*, others: list[Judgment], grades: dict, lanes: Lanes) -> tuple[dict, list[dict]]:
    """The rankings an adjudication form can start from: each reviewer's, then the grader's.
    ({source key: {lane key: {"tier", "rank", "cheat"}}}, [{"key", "label"}] in that order),
    from what the page already read (`others` with their items prefetched, the verdict's
    `grades` by rollout index): no query."""
    rankings: dict[str, dict] = {}
    sources: list[dict] = []
    reviews = sorted((j for j in others if j.kind == Judgment.Kind.REVIEW), key=lambda j: j.reviewer.username)
    for n, judgment in enumerate(reviews, 1):
        key = f"reviewer-{n}"
        rankings[key] = {
            lanes.key(item.rollout.index): {"tier": item.tier, "rank": item.rank, "cheat": item.cheat}
            for item in judgment.items.all()
        }
        sources.append({"key": key, "label": f"{judgment.reviewer.username}'s ranking"})
    if grades:
        rankings["grader"] = {
            lanes.key(index): {"tier": g.tier, "rank": g.rank, "cheat": bool(g.cheat)} for index, g in grades.items()
        }
        sources.append({"key": "grader", "label": "the grader's ranking"})
    return rankings, sources


def passing_indexes(group) -> list[int]:
    """The indexes of the group's passing rollouts: the ones a judgment tiers."""
    return list(group.rollouts.filter(passed=True).order_by("index").values_list("index", flat=True))
