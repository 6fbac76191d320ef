"""Reads of the `gagar-grader-bench/1` export (reviews/formats/grader_bench.py): the run's
judged groups in (step, uid) order, CHUNK_GROUPS at a time in six queries per chunk, so the
number of queries does not grow with a chunk's groups and the run is never in memory at once.
Every verdict is exported, of any grader and any status; patches and trajectories are not."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from grading.models import CheatDecision, Group, Rollout, RolloutGrade, Run, Verdict
from reviews.formats.grader_bench import FORMAT
from reviews.models import JudgmentItem
from reviews.selectors.labeled import _chunks, _dumps, labeled_group_ids

CHUNK_GROUPS = 200
FORMATS = ("jsonl", "parquet")


def _jury(raw) -> dict | None:
    jury = raw.get("jury") if isinstance(raw, dict) else None
    return jury if isinstance(jury, dict) else None


def _usage(raw) -> dict:
    usage = raw.get("usage") if isinstance(raw, dict) else None
    return usage if isinstance(usage, dict) else {}


def _chunk_lines(ids: list[int], run_name: str) -> list[dict]:
    groups = {
        g.pk: g
        for g in Group.objects.filter(pk__in=ids)
        .select_related("step", "task")
        .only("uid", "step__number", "task__instance_id", "task__repo")
    }
    rollouts: dict[int, list[dict]] = defaultdict(list)
    for group_id, index, reward, passed in (
        Rollout.objects.filter(group_id__in=ids)
        .order_by("group_id", "index")
        .values_list("group_id", "index", "reward", "passed")
    ):
        rollouts[group_id].append({"index": index, "reward": reward, "passed": passed})
    verdicts: dict[int, list[dict]] = defaultdict(list)
    by_verdict: dict[int, dict] = {}
    for verdict_id, group_id, grader, status, raw in (
        Verdict.objects.by_graders()
        .filter(group_id__in=ids)
        .order_by("group_id", "grader", "id")
        .values_list("id", "group_id", "grader", "status", "raw")
    ):
        entry: dict[str, Any] = {"grader": grader, "status": status, "usage": _usage(raw), "jury": _jury(raw), "grades": []}
        verdicts[group_id].append(entry)
        by_verdict[verdict_id] = entry
    for verdict_id, index, tier, rank, cheat, uncited in (
        RolloutGrade.objects.filter(verdict_id__in=list(by_verdict))
        .order_by("verdict_id", "rollout__index")
        .values_list("verdict_id", "rollout__index", "tier", "rank", "cheat", "uncited")
    ):
        by_verdict[verdict_id]["grades"].append({"index": index, "tier": tier, "rank": rank, "cheat": cheat, "uncited": uncited})
    judgments: dict[int, dict[int, dict]] = defaultdict(dict)
    for judgment_id, group_id, rater, kind, index, tier, rank, cheat in (
        JudgmentItem.objects.filter(judgment__group_id__in=ids)
        .order_by("judgment__group_id", "judgment__created_at", "judgment_id", "rollout__index")
        .values_list(
            "judgment_id",
            "judgment__group_id",
            "judgment__reviewer__username",
            "judgment__kind",
            "rollout__index",
            "tier",
            "rank",
            "cheat",
        )
    ):
        judgment = judgments[group_id].setdefault(judgment_id, {"rater": rater, "kind": kind, "items": []})
        judgment["items"].append({"index": index, "tier": tier, "rank": rank, "cheat": cheat})
    audits: dict[int, dict[int, bool]] = defaultdict(dict)
    for group_id, index, confirmed in (
        CheatDecision.objects.filter(rollout__group_id__in=ids, confirmed__isnull=False)
        .order_by("rollout_id", "-decided_at", "-id")
        .values_list("rollout__group_id", "rollout__index", "confirmed")
    ):
        audits[group_id].setdefault(index, bool(confirmed))
    lines = []
    for group_id in ids:
        group = groups[group_id]
        lines.append(
            {
                "format": FORMAT,
                "run": run_name,
                "step": group.step.number,
                "uid": group.uid,
                "instance_id": group.task.instance_id,
                "repo": group.task.repo,
                "rollouts": rollouts[group_id],
                "verdicts": verdicts[group_id],
                "judgments": list(judgments[group_id].values()),
                "audits": [{"index": i, "confirmed": c} for i, c in sorted(audits[group_id].items())],
            }
        )
    return lines


def bench_lines(*, run: Run) -> Iterator[dict]:
    """`gagar-grader-bench/1` lines as dicts: every judged group of the run, by (step, uid)."""
    for ids in _chunks(labeled_group_ids(run=run), CHUNK_GROUPS):
        yield from _chunk_lines(ids, run.name)


def bench_stream(*, run: Run) -> Iterator[bytes]:
    for line in bench_lines(run=run):
        yield _dumps(line) + b"\n"
