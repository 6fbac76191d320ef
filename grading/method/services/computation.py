"""Compute and store redistributed advantages per step and mapping (docs/method.md §1–4).

The math is grading.method.advantage (pure, vectorised); this module gathers a step's inputs
in a fixed number of queries, runs it once for the whole step, and stores one
`AdvantageResult` per rollout so every exported number can be traced to its group,
verdict, cheat decision and mapping version later."""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from django.db import connection, transaction
from django.utils import timezone

from grading.method import export
from grading.method.advantage import group_summary
from grading.method.partial import DROPPED, mode_of, redistribute_kept
from grading.method.services.mappings import active_mapping
from grading.method.services.staleness import queue_recompute
from grading.method.tiers import TIERS
from grading.method.turn_weights import turn_weights
from grading.models import (
    AdvantageResult,
    CheatDecision,
    FactorMapping,
    Grader,
    GraderVersion,
    Group,
    Rollout,
    RolloutGrade,
    Run,
    Step,
    StepComputation,
    Verdict,
)
from grading.models.bulk import copy_rows, jsonb

logger = logging.getLogger(__name__)


def policy_verdicts(verdicts, run: Run):
    """Those of `verdicts` (of `run`'s groups) the method may read: its jury's alone when the
    policy names one, else any grader's but a campaign's bench-only ones and those of the
    project's external graders (docs/method.md §2).

    An external grader's verdict (POST /api/v1/verdicts/, under a name its poster chooses)
    reaches the advantages only through a jury the run's policy names with it as a member:
    a name no policy chose must not move a run's credit. It is on the bench and in
    calibration like any grader's."""
    if (jury := run.jury) is not None:  # the run's policy names a jury: only its verdicts count
        return verdicts.filter(grader=jury.grader)
    # The run's project by the run's id, inside the query: a run loaded with only some of its
    # fields (the adjudication queue's) costs no query of its own for its project.
    external = GraderVersion.objects.filter(grader__backend=Grader.Backend.EXTERNAL, project__runs=run.pk)
    return verdicts.filter(bench_only=False).exclude(grader__in=external.values("name"))


@dataclass
class StepInputs:
    frame: pd.DataFrame  # one row per rollout with known reward, engine input columns + ids
    unknown: pd.DataFrame  # rollouts of groups holding an unknown reward (filtered as a whole)


def step_inputs(step: Step) -> StepInputs:
    """Everything the engine needs for one step, in five queries whatever its size."""
    rows = list(
        Rollout.objects.filter(group__step=step)
        .order_by("group_id", "index")  # groups as ascending runs: the engine's fast path
        .values_list("id", "group_id", "index", "reward", "group__uid", "group__task__instance_id", "dropped")
    )
    frame = pd.DataFrame(rows, columns=["rollout_id", "group", "index", "reward", "uid", "instance_id", "dropped"])

    latest_verdict: dict[int, tuple[int, str]] = {}
    verdicts = policy_verdicts(Verdict.objects.filter(group__step=step), step.run)
    for verdict_id, group_id, status in verdicts.order_by("group_id", "-created_at", "-id").values_list(
        "id", "group_id", "status"
    ):
        latest_verdict.setdefault(group_id, (verdict_id, status))
    valid_ids = [vid for vid, status in latest_verdict.values() if status == Verdict.Status.VALID]
    grades = {
        rollout_id: (tier, rank)
        for rollout_id, tier, rank in RolloutGrade.objects.filter(verdict_id__in=valid_ids).values_list(
            "rollout_id", "tier", "rank"
        )
    }
    cheats: dict[int, str] = {}
    seen: set[int] = set()
    for rollout_id, confirmed, source in (
        CheatDecision.objects.filter(rollout__group__step=step, confirmed__isnull=False)
        .order_by("rollout_id", "-decided_at", "-id")
        .values_list("rollout_id", "confirmed", "source")
    ):
        if rollout_id in seen:
            continue
        seen.add(rollout_id)
        if confirmed:
            cheats[rollout_id] = source

    if frame.empty:
        empty = frame.assign(cheat=[], cheat_source=[], tier=[], rank=[], graded=[], verdict_id=[])
        return StepInputs(empty, empty)
    # Dict lookups through Series.map (hashed in C), not a Python call per row.
    frame["verdict_id"] = frame["group"].map({g: v for g, (v, _) in latest_verdict.items()})
    frame["graded"] = frame["group"].map({g: st == Verdict.Status.VALID for g, (_, st) in latest_verdict.items()}).eq(True)
    frame["tier"] = pd.Categorical(frame["rollout_id"].map({r: t for r, (t, _) in grades.items()}), categories=TIERS)
    frame["rank"] = frame["rollout_id"].map({r: k for r, (_, k) in grades.items()})
    frame["cheat"] = frame["rollout_id"].isin(cheats.keys())
    frame["cheat_source"] = frame["rollout_id"].map(cheats).astype(object).fillna("")
    has_unknown = frame["reward"].isna().groupby(frame["group"]).transform("any")
    return StepInputs(frame[~has_unknown].reset_index(drop=True), frame[has_unknown].reset_index(drop=True))


def compute_step(*, step: Step, mapping: FactorMapping, unless_current: bool = False) -> StepComputation:
    """Recompute and store every rollout's numbers of `step` under `mapping`.

    The step's computation row is locked for the whole of it, so two recomputations of a
    step run one after the other, not side by side. With `unless_current`, one that finds
    the step computed at its current inputs version once it holds the lock returns that:
    when a step's last verdict lands, the worker's recomputation and the waiting trainer's
    request (which finds the step final at once) both ask, and the second reuses the first's
    numbers instead of computing the step again on the same cores (benchmarks/last_verdict.py).
    """
    with transaction.atomic():
        computation, _ = StepComputation.objects.defer("parquet").get_or_create(step=step, mapping=mapping)
        computation = StepComputation.objects.select_for_update().defer("parquet").get(pk=computation.pk)
        if (
            unless_current
            and not computation.stale
            and computation.computed_at is not None
            and computation.inputs_version == Step.objects.values_list("inputs_version", flat=True).get(pk=step.pk)
        ):
            return computation
        return _compute_step(step=step, mapping=mapping)


def _compute_step(*, step: Step, mapping: FactorMapping) -> StepComputation:
    run = step.run
    version = Step.objects.values_list("inputs_version", flat=True).get(pk=step.pk)
    inputs = step_inputs(step)
    now = timezone.now()
    result = (
        redistribute_kept(inputs.frame, policy=run.drop_policy or {}, mapping=mapping.spec, baseline=run.baseline)
        if not inputs.frame.empty
        else inputs.frame
    )
    rows: list[dict[str, Any]] = []  # AdvantageResult fields by attname, one dict a row
    common = {
        "mapping_id": mapping.pk,
        "step_id": step.pk,
        "run_name": run.name,
        "step_number": step.number,
        "baseline": run.baseline,
        "mapping_label": mapping.label,
        "computed_at": now,
    }
    weights = step_turn_weights(result) if run.turn_weights and not inputs.frame.empty else {}
    uniform: dict[str, float] | None = {} if run.turn_weights else None  # null: the run gives no turn weights
    # A row's fields are the frame's columns, whose types pandas-stubs cannot know.
    rec: Any
    # `lambda` is a keyword, so itertuples would rename the column positionally.
    for rec in result.rename(columns={"lambda": "lambda_value"}).itertuples(index=False):
        graded = rec.status == "graded"
        rows.append(
            dict(
                rollout_id=int(rec.rollout_id),
                verdict_id=_int_or_none(rec.verdict_id),
                uid=rec.uid,
                index=rec.index,
                instance_id=rec.instance_id,
                reward=float(rec.reward_used),
                passed=bool(rec.passed),
                cheat=bool(rec.cheat),
                cheat_source=rec.cheat_source if rec.cheat else "",
                advantage=float(rec.advantage),
                tier=rec.tier if graded and rec.passed and isinstance(rec.tier, str) else "",
                rank=_int_or_none(rec.rank) if graded and rec.passed else None,
                factor=float(rec.factor),
                lambda_value=float(rec.lambda_value),
                redistributed_advantage=float(rec.redistributed_advantage),
                discount_only_advantage=float(rec.discount_only_advantage),
                status=rec.status,
                dropped=rec.dropped or "",
                drop_mode=rec.drop_mode or "",
                turn_weights=weights.get(rec.rollout_id, uniform),
                **common,
            )
        )
    for rec in inputs.unknown.itertuples(index=False):
        rows.append(
            dict(
                rollout_id=int(rec.rollout_id),
                verdict_id=None,
                uid=rec.uid,
                index=rec.index,
                instance_id=rec.instance_id,
                reward=None if pd.isna(rec.reward) else float(rec.reward),
                passed=None if pd.isna(rec.reward) else rec.reward == 1.0,
                cheat=False,
                cheat_source="",
                advantage=0.0,
                tier="",
                rank=None,
                factor=1.0,
                lambda_value=1.0,
                redistributed_advantage=0.0,
                discount_only_advantage=0.0,
                status="filtered",
                dropped=rec.dropped or "",
                drop_mode=mode_of(rec.dropped, run.drop_policy or {}) or "",
                turn_weights=uniform,
                **common,
            )
        )
    summary = step_balance(result) if not inputs.frame.empty else step_balance(None)
    summary["unknown_reward_groups"] = int(inputs.unknown["group"].nunique()) if not inputs.unknown.empty else 0
    with transaction.atomic():
        # The computation row is the lock: two recomputations of a step write one at a time.
        computation, _ = StepComputation.objects.defer("parquet").get_or_create(step=step, mapping=mapping)
        computation = StepComputation.objects.select_for_update().defer("parquet").get(pk=computation.pk)
        AdvantageResult.objects.filter(step=step, mapping=mapping).delete()
        store_results(rows)
        if mapping.pk == active_mapping(run).pk:
            store_credit_moved(step=step, result=result)
        changed_meanwhile = Step.objects.values_list("inputs_version", flat=True).get(pk=step.pk) != version
        if changed_meanwhile:  # inputs moved on while we computed: one more round
            queue_recompute([step.pk])
        computation.stale = changed_meanwhile
        computation.computed_at = now
        computation.n_rows = len(rows)
        computation.summary = summary
        computation.inputs_version = version
        computation.recompute_queued = changed_meanwhile
        computation.parquet = export.step_snapshot(step, mapping)
        computation.save(
            update_fields=["stale", "computed_at", "n_rows", "summary", "parquet", "inputs_version", "recompute_queued"]
        )
    return computation


def store_results(rows: list[dict[str, Any]]) -> None:
    """Insert AdvantageResult rows (dicts of field attnames) in the caller's transaction.

    On PostgreSQL by COPY: a step's 25,088 rows through bulk_create cost about 1.0 s of the
    1.5 s its recomputation took, most of it Django building and psycopg quoting each
    INSERT's 640k parameters in Python (benchmarks/last_verdict.py); COPY hands the
    tuples over as one stream. Elsewhere (SQLite in development) one INSERT run over every
    row by executemany: bulk_create would split a step into statements of at most 999
    parameters (Django's limit for SQLite), so the queries would grow with the step.
    """
    if not rows:
        return
    names = list(rows[0])
    field_of = {f.attname: f for f in AdvantageResult._meta.concrete_fields}
    columns = [field_of[name].column for name in names]
    if connection.vendor != "postgresql":
        fields = [field_of[name] for name in names]
        quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
        placeholders = ", ".join("%s" for _ in columns)
        sql = f"INSERT INTO {connection.ops.quote_name(AdvantageResult._meta.db_table)} ({quoted}) VALUES ({placeholders})"
        with connection.cursor() as cursor:
            cursor.executemany(
                sql, [[f.get_db_prep_save(v, connection) for f, v in zip(fields, row.values(), strict=True)] for row in rows]
            )
        return
    at = names.index("turn_weights")
    copy_rows(
        connection,
        AdvantageResult._meta.db_table,
        [f'"{c}"' for c in columns],
        (tuple(jsonb(v) if i == at and v is not None else v for i, v in enumerate(row.values())) for row in rows),
    )


def step_turn_weights(result: pd.DataFrame) -> dict[int, dict[str, float]]:
    """Rollout id -> its turn weights ({"<message index>": weight}, method §9) for the rows of
    `result` that have any: passing rollouts of graded groups whose verdict cites a turn of
    theirs as wasted. Two queries, whatever the step's size."""
    eligible = result[result["status"].astype(str).eq("graded") & result["passed"].eq(True)]
    if eligible.empty:
        return {}
    verdicts = {int(v) for v in eligible["verdict_id"].dropna().unique()}
    rollouts = set(eligible["rollout_id"].tolist())
    evidence = {
        rollout_id: items
        for rollout_id, items in RolloutGrade.objects.filter(verdict_id__in=verdicts).values_list("rollout_id", "evidence")
        if rollout_id in rollouts and items
    }
    if not evidence:
        return {}
    sizes = dict(Rollout.objects.filter(pk__in=list(evidence)).values_list("id", "n_messages"))
    indexes = dict(zip(eligible["rollout_id"].tolist(), eligible["index"].tolist()))
    out = {}
    for rollout_id, items in evidence.items():
        found = turn_weights(items, rollout=int(indexes[rollout_id]), n_messages=sizes.get(rollout_id, 0), eligible=True)
        if found:
            out[rollout_id] = {str(i): w for i, w in found.items()}
    return out


def store_credit_moved(*, step: Step, result: pd.DataFrame) -> None:
    """Each group's Σ|A* − A| (what a wrong verdict costs the trainer), which the review queue
    orders by: two queries, plus one UPDATE per hundred groups whose value changed. Groups
    missing from `result` (filtered for an unknown reward) move nothing."""
    moved: dict[Hashable, float] = {}  # group id -> Σ|A* − A|
    if not result.empty:
        moved = (result["redistributed_advantage"] - result["advantage"]).abs().groupby(result["group"]).sum().to_dict()
    changed = [
        Group(pk=group_id, credit_moved=float(moved.get(group_id, 0.0)))
        for group_id, stored in Group.objects.filter(step=step).values_list("id", "credit_moved")
        if stored != float(moved.get(group_id, 0.0))
    ]
    Group.objects.bulk_update(changed, ["credit_moved"], batch_size=100)


def refresh_stale_step(*, step: Step, mapping: FactorMapping) -> StepComputation:
    """The step's current computation under `mapping` (refresh_stale_steps: it may write)."""
    return refresh_stale_steps(steps=[step], mapping=mapping)[step.pk]


def refresh_stale_steps(*, steps: Sequence[Step], mapping: FactorMapping) -> dict[int, StepComputation]:
    """Current computations of these steps, by step id. A read that writes: the missing or
    stale ones are computed and stored first (compute_step), which is why a page that shows
    advantages calls it by name on GET; one query when all are current."""
    current = {
        c.step_id: c for c in StepComputation.objects.filter(step__in=steps, mapping=mapping, stale=False).defer("parquet")
    }
    for step in steps:
        if step.pk not in current:
            current[step.pk] = compute_step(step=step, mapping=mapping, unless_current=True)
    return current


def _int_or_none(value) -> int | None:
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    return int(value)


def step_balance(result: pd.DataFrame | None) -> dict:
    """Credit balance of a step: what the dashboard plots (plain JSON-able numbers)."""
    if result is None or result.empty:
        return {
            "groups": {"graded": 0, "fallback": 0, "filtered": 0},
            "rollouts": 0,
            "positive_credit_before": 0.0,
            "positive_credit_after": 0.0,
            "discount_only_positive_credit": 0.0,
            "dropped_credit": 0.0,
            "lambdas": [],
        }
    # Rows that left their group under the drop policy are not part of any group's numbers.
    groups = group_summary(result[result["status"].astype(str) != DROPPED])
    counts = groups["status"].value_counts().to_dict()
    graded = groups[groups["status"] == "graded"]
    discount_positive = float(result.loc[result["discount_only_advantage"] > 0, "discount_only_advantage"].sum())
    return {
        "groups": {k: int(counts.get(k, 0)) for k in ("graded", "fallback", "filtered")},
        "rollouts": len(result),
        "positive_credit_before": float(groups["positive_credit_before"].sum()),
        "positive_credit_after": float(groups["positive_credit_after"].sum()),
        "discount_only_positive_credit": discount_positive,
        "dropped_credit": float(graded["dropped_credit"].sum()),
        "lambdas": [float(x) for x in graded["lambda"].tolist()],
    }
