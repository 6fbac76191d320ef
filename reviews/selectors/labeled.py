"""Reads of the labeled-groups export: which groups, and each one's judgments, in chunks.

A group is *labeled* when at least one person judged it (a review or an adjudication).
Groups come ordered by (step, uid) and are read CHUNK_GROUPS at a time with a fixed set of
queries per chunk, so patches (and, for SFT, test logs) of a whole run are never in memory
at once and the number of queries does not grow with the groups of a chunk. Trajectories
are never read: a rollout's summary carries their length.

`since`: a group is included when its `changed_at` is strictly later, where `changed_at`
is the latest of: its judgments' created_at (reviews and adjudications), its verdicts'
created_at, its cheat signals' created_at and decided_at, and their audits' created_at.
Those are all the things a line is made of that can change after ingest (groups and
rollouts are immutable), so passing the largest `changed_at` seen as the next `since`
fetches exactly the lines that changed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime

import orjson
from django.db.models import Exists, OuterRef, Q

from grading.grader.workspace import GroupWorkspace, RolloutView
from grading.method.guide import Guide
from grading.method.project_guides import guide_for
from grading.models import CheatDecision, Group, Rollout, RolloutContent, RolloutGrade, Run, Verdict, VerdictCheck
from grading.registry.workspaces import workspace_for
from reviews.formats import labeled
from reviews.models import CheatAudit, Judgment, JudgmentItem

CHUNK_GROUPS = 50  # JSON Lines: groups (with their patches) per round of queries
SFT_CHUNK_GROUPS = 20  # SFT also reads test outcomes and logs
FORMATS = ("jsonl", "sft")
LABELS = ("consensus", "adjudicated")


def labeled_group_ids(*, run: Run, since: datetime | None = None, adjudicated_only: bool = False) -> list[int]:
    """Ids of the run's judged groups in export order (step, uid). One query."""
    judged = Judgment.objects.filter(group=OuterRef("pk"))
    if adjudicated_only:
        judged = judged.filter(kind=Judgment.Kind.ADJUDICATION)
    groups = Group.objects.filter(run=run).filter(Exists(judged))
    if since is not None:
        # Uncorrelated: each set of changed groups is read once (a hashed subplan on
        # PostgreSQL), not probed once per group of the run as OR'd EXISTS would be.
        groups = groups.filter(
            Q(pk__in=Judgment.objects.filter(group__run=run, created_at__gt=since).values("group_id"))
            | Q(pk__in=Verdict.objects.filter(group__run=run, created_at__gt=since).values("group_id"))
            | Q(
                pk__in=CheatDecision.objects.filter(
                    Q(created_at__gt=since) | Q(decided_at__gt=since), rollout__group__run=run
                ).values("rollout__group_id")
            )
            | Q(
                pk__in=CheatAudit.objects.filter(decision__rollout__group__run=run, created_at__gt=since).values(
                    "decision__rollout__group_id"
                )
            )
        )
    return list(groups.order_by("step__number", "uid").values_list("pk", flat=True))


def _chunks(ids: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def _load_chunk(ids: list[int], *, sft: bool) -> list[dict]:
    """Everything the lines of these groups need, in nine queries; one dict per group, in `ids` order."""
    groups = Group.objects.filter(pk__in=ids).select_related("step", "task").defer("task__extra")
    if not sft:
        groups = groups.defer("task__gold_patch", "task__test_patch")
    by_id = {g.pk: g for g in groups}

    rollouts: dict[int, list[Rollout]] = defaultdict(list)
    for rollout in Rollout.objects.filter(group_id__in=ids).order_by("group_id", "index").defer("source_ref", "content_hash"):
        rollouts[rollout.group_id].append(rollout)
    bodies = ("rollout_id", "patch", "tests", "test_log") if sft else ("rollout_id", "patch")
    contents = {row[0]: row[1:] for row in RolloutContent.objects.filter(rollout__group_id__in=ids).values_list(*bodies)}

    judgments: dict[int, list[dict]] = defaultdict(list)
    by_judgment: dict[int, dict] = {}
    for j in (
        Judgment.objects.filter(group_id__in=ids)
        .select_related("reviewer")
        .only("id", "group_id", "kind", "blind", "created_at", "note", "reason", "reviewer__username")
        .order_by("created_at", "id")
    ):
        entry = {
            "reviewer": j.reviewer.username,
            "kind": j.kind,
            "blind": j.blind,
            "created_at": j.created_at,
            "note": j.note,
            "reason": j.reason or None,
            "items": [],
        }
        judgments[j.group_id].append(entry)
        by_judgment[j.pk] = entry
    for item in (
        JudgmentItem.objects.filter(judgment__group_id__in=ids)
        .order_by("judgment_id", "rollout__index")
        .values("judgment_id", "rollout__index", "tier", "rank", "cheat", "scores", "note")
    ):
        by_judgment[item["judgment_id"]]["items"].append(
            {
                "index": item["rollout__index"],
                "tier": item["tier"],
                "rank": item["rank"],
                "cheat": item["cheat"],
                "scores": item["scores"] or {},
                "note": item["note"],
            }
        )

    decisions: dict[int, list[dict]] = defaultdict(list)
    by_decision: dict[int, dict] = {}
    for d in (
        CheatDecision.objects.filter(rollout__group_id__in=ids)
        .select_related("decided_by", "rollout")
        .only(
            "id",
            "source",
            "author",
            "evidence",
            "confirmed",
            "reason",
            "created_at",
            "decided_at",
            "decided_by__username",
            "rollout__index",
            "rollout__group_id",
        )
        .order_by("rollout__index", "created_at", "id")
    ):
        entry = {
            "id": d.pk,
            "index": d.rollout.index,
            "source": d.source,
            "author": d.author,
            "evidence": d.evidence if isinstance(d.evidence, list) else [],
            "confirmed": d.confirmed,
            "reason": d.reason,
            "decided_by": d.decided_by.username if d.decided_by else None,
            "decided_at": d.decided_at,
            "created_at": d.created_at,
            "audits": [],
        }
        decisions[d.rollout.group_id].append(entry)
        by_decision[d.pk] = entry
    for audit in (
        CheatAudit.objects.filter(decision__rollout__group_id__in=ids)
        .select_related("auditor")
        .only("id", "decision_id", "confirmed", "reason", "created_at", "auditor__username")
        .order_by("created_at", "id")
    ):
        by_decision[audit.decision_id]["audits"].append(
            {
                "auditor": audit.auditor.username,
                "confirmed": audit.confirmed,
                "reason": audit.reason,
                "created_at": audit.created_at,
            }
        )

    verdicts: dict[int, list[dict]] = defaultdict(list)
    by_verdict: dict[int, dict] = {}
    checks_run: dict[int, int] = {}
    for v in Verdict.objects.on_record().filter(group_id__in=ids).defer("raw").order_by("-created_at", "-id"):
        entry = {
            "grader": v.grader,
            "status": v.status,
            "settled_by": v.settled_by,
            "created_at": v.created_at,
            "errors": v.errors or [],
            "grades": [],
            "checks": [],
        }
        verdicts[v.group_id].append(entry)
        by_verdict[v.pk] = entry
        checks_run[v.pk] = v.n_checks
    for grade in (
        RolloutGrade.objects.filter(verdict__group_id__in=ids)
        .order_by("verdict_id", "rank", "rollout__index")
        .values("verdict_id", "rollout__index", "tier", "rank", "scores", "cheat", "evidence", "uncited")
    ):
        by_verdict[grade["verdict_id"]]["grades"].append(
            {
                "index": grade["rollout__index"],
                "tier": grade["tier"],
                "rank": grade["rank"],
                "scores": grade["scores"] or {},
                "cheat": grade["cheat"],
                "evidence": grade["evidence"] or [],
                "uncited": grade["uncited"],
            }
        )
    # What the grader ran in its sandbox, cited by its evidence as check:<number> (no query
    # when no verdict of the chunk ran a check).
    with_checks = [pk for pk, n in checks_run.items() if n]
    for check in (
        VerdictCheck.objects.filter(verdict_id__in=with_checks)  # [] runs no query
        .order_by("verdict_id", "number")
        .values("verdict_id", "number", "rollout__index", "command", "exit_status", "seconds", "output", "truncated", "killed")
    ):
        row: dict = dict(check)
        by_verdict[row.pop("verdict_id")]["checks"].append({"rollout": row.pop("rollout__index"), **row})

    return [
        {
            "group": by_id[pk],
            "rollouts": rollouts[pk],
            "contents": contents,
            "judgments": judgments[pk],
            "cheat_decisions": decisions[pk],
            "verdicts": verdicts[pk],
        }
        for pk in ids
        if pk in by_id
    ]


def _changed_at(loaded: dict) -> datetime | None:
    stamps = [j["created_at"] for j in loaded["judgments"]] + [v["created_at"] for v in loaded["verdicts"]]
    for d in loaded["cheat_decisions"]:
        stamps += [d["created_at"], d["decided_at"], *(a["created_at"] for a in d["audits"])]
    return max((s for s in stamps if s is not None), default=None)


def _line(loaded: dict, run_name: str) -> dict:
    group = loaded["group"]
    rollouts = []
    for r in loaded["rollouts"]:
        patch = (loaded["contents"].get(r.pk) or ("",))[0]
        rollouts.append(
            {
                "index": r.index,
                "reward": r.reward,
                "passed": r.passed,
                "exit_status": r.exit_status,
                "patch": patch,
                "summary": {
                    "n_messages": r.n_messages,
                    "tokens": r.tokens,
                    "patch_files": r.patch_files,
                    "patch_added": r.patch_added,
                    "patch_removed": r.patch_removed,
                    "patch_parses": r.patch_parses,
                    "tests_passed": r.tests_passed,
                    "tests_failed": r.tests_failed,
                },
                "cluster": r.cluster,
                "extra_files": r.extra_files,
            }
        )
    label = labeled.final_label(loaded["judgments"])
    return {
        "format": labeled.FORMAT,
        "run": run_name,
        "step": group.step.number,
        "uid": group.uid,
        "instance_id": group.task.instance_id,
        "repo": group.task.repo,
        "problem_statement": group.task.problem_statement,
        "changed_at": _changed_at(loaded),
        "distinct_solutions": group.distinct_solutions,
        "rollouts": rollouts,
        "judgments": loaded["judgments"],
        "consensus": label
        and {
            "source": label["source"],
            "reviewers": label["reviewers"],
            "items": [{k: item[k] for k in ("index", "tier", "rank", "cheat", "scores")} for item in label["items"]],
        },
        "cheat_decisions": [{k: v for k, v in d.items() if k != "id"} for d in loaded["cheat_decisions"]],
        "verdicts": loaded["verdicts"],
    }


def _workspace(loaded: dict, guide: Guide) -> GroupWorkspace:
    """The grader's view of the group (grading.registry.workspaces.load_workspace), from the
    chunk's rows and without the trajectories' text: the tools the SFT example calls
    (labeled.reading_rounds) return the same JSON on it as on the loader's workspace."""
    group = loaded["group"]
    views = []
    for r in loaded["rollouts"]:
        patch, tests, test_log = loaded["contents"].get(r.pk) or ("", {}, "")
        views.append(
            RolloutView(
                index=r.index,
                passed=r.passed,
                patch=patch,
                messages=labeled.UnreadTrajectory(r.n_messages),
                tests=tests or {},
                test_log=test_log,
                exit_status=r.exit_status,
                stats=r.stats,
            )
        )
    return workspace_for(group, views, guide=guide)


# Characters JSON allows raw inside strings but Python's str.splitlines() (and JavaScript
# before ES2019) take for line breaks: a consumer splitting the export that way would cut
# a line inside a patch. They can only occur inside strings, so escaping them is lossless.
_LINE_BREAKS_IN_STRINGS = ((b"\xc2\x85", b"\\u0085"), (b"\xe2\x80\xa8", b"\\u2028"), (b"\xe2\x80\xa9", b"\\u2029"))


def _dumps(value) -> bytes:
    try:
        data = orjson.dumps(value)
    except TypeError:  # what orjson refuses (lone surrogates from SQLite text) gets the stdlib's escapes
        return json.dumps(value, default=lambda v: v.isoformat()).encode()
    for raw, escaped in _LINE_BREAKS_IN_STRINGS:
        data = data.replace(raw, escaped)
    return data


def labeled_lines(*, run: Run, since: datetime | None = None, adjudicated_only: bool = False) -> Iterator[dict]:
    """`gagar-labeled-group/1` lines as dicts, in export order."""
    for ids in _chunks(labeled_group_ids(run=run, since=since, adjudicated_only=adjudicated_only), CHUNK_GROUPS):
        for loaded in _load_chunk(ids, sft=False):
            yield _line(loaded, run.name)


def sft_examples(*, run: Run, since: datetime | None = None, adjudicated_only: bool = False) -> Iterator[dict]:
    """Grader fine-tuning examples, one per labeled group whose label fills the verdict schema
    and that no verdict settled without a model call (identical patches).
    Their system prompt carries the project's rubric guide, as the live grader's does."""
    guide = guide_for(run.project_id)
    for ids in _chunks(labeled_group_ids(run=run, since=since, adjudicated_only=adjudicated_only), SFT_CHUNK_GROUPS):
        for loaded in _load_chunk(ids, sft=True):
            label = labeled.final_label(loaded["judgments"])
            if label is None or any(v["settled_by"] == Verdict.SettledBy.IDENTICAL_PATCHES for v in loaded["verdicts"]):
                continue  # a group settled without a model call teaches no grader (grading.verdicts.identical)
            group = loaded["group"]
            example = labeled.sft_example(
                _workspace(loaded, guide),
                label,
                cheats=labeled.audited_cheats(loaded["cheat_decisions"]),
                metadata={"run": run.name, "step": group.step.number, "uid": group.uid},
            )
            if example is not None:
                yield example


def export_stream(
    *, run: Run, fmt: str = "jsonl", since: datetime | None = None, adjudicated_only: bool = False
) -> Iterator[bytes]:
    """The export's body: one JSON object per line (`fmt` "jsonl" or "sft"), yielded line by line."""
    rows = sft_examples if fmt == "sft" else labeled_lines
    for row in rows(run=run, since=since, adjudicated_only=adjudicated_only):
        yield _dumps(row) + b"\n"


def empty_reason(*, run: Run, fmt: str = "jsonl", since: datetime | None = None, adjudicated_only: bool = False) -> str:
    """Why the export of `run` has no line (ASCII: it goes into a response header)."""
    n = len(labeled_group_ids(run=run, since=since, adjudicated_only=adjudicated_only))
    if not n:
        if since is not None:
            return f"no judged group of run {run.name!a} changed after {since.isoformat()}"
        if adjudicated_only:
            return f"no group of run {run.name!a} is adjudicated yet"
        return f"no group of run {run.name!a} has a human judgment yet: judge its groups on the review desk first"
    return (
        f"{n} judged group{'s' if n != 1 else ''} in run {run.name!a}, but no label fills the grader's verdict schema: "
        "an SFT example needs a tier and all five rubric scores (1-5) on every passing rollout, and scores are "
        "never invented; ask reviewers to give the rubric scores"
    )
