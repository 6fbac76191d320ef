"""Compute and store redistributed advantages per step and mapping (docs/method.md §1–4).

The math is grading.method.advantage (pure, vectorised); this module gathers a step's inputs
in a fixed number of queries, runs it once for the whole step, and stores one
`AdvantageResult` per rollout so every exported number can be traced to its group,
verdict, cheat decision and mapping version later.

Inputs change when a verdict lands, a cheat decision is made or a run's active mapping
changes; each of those calls `mark_stale()`, which queues `recompute_step_task` (by name:
grading.queueing) after the commit. An export of a stale or never-computed step computes it first.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, FloatField, Max, OuterRef, Q, Subquery, Sum
from django.db.models.functions import Abs, Coalesce
from django.utils import timezone

from grading.formats import params
from grading.method import export
from grading.method.advantage import group_summary
from grading.method.evidence import TooLittleEvidence
from grading.method.minimums import mapping_evidence
from grading.method.partial import DROPPED, mode_of, redistribute_kept
from grading.method.tiers import TIERS
from grading.method.turn_weights import turn_weights
from grading.models import (
    AdvantageResult,
    CheatDecision,
    FactorMapping,
    Grader,
    GraderVersion,
    GradingJob,
    Group,
    MappingActivation,
    Rollout,
    RolloutGrade,
    Run,
    Step,
    StepComputation,
    Verdict,
)
from grading.models.bulk import copy_rows, jsonb
from grading.queueing import queue

logger = logging.getLogger(__name__)

NOT_GIVEN = object()  # activate_mapping's run_grader when the caller named none
RECOMPUTE_STEP = "grading.advantage_tasks.recompute_step_task"  # grading.method.tasks


DEFAULT_BANDS = {"T1": [1.0, 1.0], "T2": [0.85, 0.70], "T3": [0.50, 0.50]}


def default_mapping() -> FactorMapping:
    """The docs/method.md §3 mapping. A migration creates it; recreated here if someone deleted it."""
    mapping, _ = FactorMapping.objects.get_or_create(
        name="default", version=1, project=None, defaults={"bands": DEFAULT_BANDS, "source": FactorMapping.Source.DEFAULT}
    )
    return mapping


def active_mapping(run: Run) -> FactorMapping:
    activation = run.mapping_activations.select_related("mapping").first()
    return activation.mapping if activation else default_mapping()


def resolve_mapping(run: Run, value: str | None) -> FactorMapping:
    """A mapping by id or `name@version` label (visible to the run's project); the active one when empty."""
    if not value:
        return active_mapping(run)
    visible = FactorMapping.objects.filter(project__isnull=True) | FactorMapping.objects.filter(project=run.project_id)
    if params.is_whole(value):
        if len(value) > 19 or int(value) > params.MAX_ID:
            raise FactorMapping.DoesNotExist(f"no mapping {value[:40]!r}")
        return visible.get(pk=int(value))
    name, _, version = value.partition("@")
    if not params.usable_name(name) or not params.is_whole(version) or len(version) > 10 or int(version) > params.MAX_INT:
        raise FactorMapping.DoesNotExist(f"mapping {value[:80]!r}: use an id or name@version")
    return visible.get(name=name, version=int(version))


def mark_stale(*, step_ids: list[int] | set[int]) -> None:
    """Inputs of these steps changed: bump their version and recompute after the commit.

    Recomputed once per burst, not once per verdict: while grading jobs of a step are still
    queued or running (no verdict yet), a verdict only bumps the version and marks the step
    stale; the verdict that leaves none in flight queues the recomputation. Other changes
    (a cheat decision, a mapping) find nothing in flight and queue it at once. compute_step
    notices a newer version when it saves and queues one more round, so the last change is
    never lost; an export or a page computes a stale step itself before reading it.
    """
    step_ids = sorted(set(step_ids))
    if not step_ids:
        return
    Step.objects.filter(pk__in=step_ids).update(inputs_version=F("inputs_version") + 1)
    mappings: dict[int, FactorMapping] = {}  # one active-mapping lookup per run, not per step
    active: dict[int, int] = {}  # step id -> its computation under the run's active mapping
    for step in Step.objects.filter(pk__in=step_ids).select_related("run"):
        mapping = mappings.get(step.run_id) or mappings.setdefault(step.run_id, active_mapping(step.run))
        computation, _ = StepComputation.objects.defer("parquet").get_or_create(step=step, mapping=mapping)
        active[step.pk] = computation.pk
    StepComputation.objects.filter(step_id__in=step_ids, stale=False).update(stale=True)
    free = [active[s] for s in set(step_ids) - steps_grading(step_ids)]
    queue = list(StepComputation.objects.filter(pk__in=free, recompute_queued=False).values_list("step_id", flat=True))
    StepComputation.objects.filter(step_id__in=queue, pk__in=free).update(recompute_queued=True)
    _queue_recompute(queue)


def steps_grading(step_ids) -> set[int]:
    """Those of these steps with a grading job still queued or running and no verdict yet
    from its grader (a verdict stored in the current transaction counts as arrived)."""
    arrived = Verdict.objects.filter(group=OuterRef("group"), grader=OuterRef("grader"))
    in_flight = GradingJob.objects.filter(status__in=[GradingJob.Status.QUEUED, GradingJob.Status.RUNNING]).exclude(
        Exists(arrived)
    )
    step_ids = set(step_ids)
    if len(step_ids) <= FEW_STEPS:
        # A verdict marks one step: stop at its first job in flight rather than list them
        # all, which made a step's grading quadratic in its groups.
        return {step_id for step_id in step_ids if in_flight.filter(group__step_id=step_id).exists()}
    return set(in_flight.filter(group__step_id__in=step_ids).values_list("group__step_id", flat=True).distinct())


FEW_STEPS = 4  # steps_grading asks step by step up to this many


def _queue_recompute(step_ids) -> None:
    step_ids = sorted(step_ids)
    if not step_ids:
        return

    def enqueue():
        for step_id in step_ids:
            queue(RECOMPUTE_STEP, step_id=step_id)

    transaction.on_commit(enqueue, robust=True)  # what committed is stored: a failed send is logged (grading.ingest)


def create_mapping(
    *,
    project,
    name: str,
    bands: dict,
    note: str = "",
    user=None,
    source: str = FactorMapping.Source.MANUAL,
    fit: dict | None = None,
    grader: str = "",
) -> FactorMapping:
    """A new mapping `name@N`, N one past the newest version of that name the project can see.

    Versions count per project: the project's own versions of the name and the built-in
    (project-less) ones, never another project's, so a name used elsewhere neither shows
    nor moves the count (a built-in mapping counts every project's). (project, name,
    version) is unique, and (name, version) among built-in mappings. Two admins creating
    the same name at once both succeed, one version apart.
    """
    mine = Q(project__isnull=True) | Q(project=project) if project is not None else Q()
    attempts = 3
    while True:
        try:
            with transaction.atomic():
                newest = FactorMapping.objects.filter(mine, name=name).aggregate(v=Max("version"))["v"] or 0
                return FactorMapping.objects.create(
                    project=project,
                    name=name,
                    version=newest + 1,
                    bands=bands,
                    note=note,
                    source=source,
                    fit=fit or {},
                    grader=grader,
                    created_by=user,
                )
        except IntegrityError:  # someone took that version meanwhile
            attempts -= 1
            if not attempts:
                raise


class GraderMismatch(ValueError):
    """A calibrated mapping fitted on one grader's verdicts, refused for a run another grader grades."""


def mapping_grader_refusal(run: Run, grader: str, *, run_grader: str | None) -> str | None:
    """Why a mapping fitted on `grader`'s verdicts may not be activated for `run`, or None when
    it may. A fit describes one grader version's tiers, so it is used only where those tiers
    are the ones the method reads: `run_grader`, the run's policy grader or jury (the caller's
    grading.jobs.policy.auto_grader_name), or,
    when the policy names none and the newest verdict of each group counts, a run whose
    valid verdicts are all `grader`'s. An empty `grader` (default and manual mappings) may
    be activated anywhere. At most one query."""
    if not grader:
        return None
    named = run_grader
    if named is not None:
        if named == grader:
            return None
        return (
            f"it was fitted on {grader}'s verdicts, but run {run.name!r} is graded by {named}: "
            f"fit a mapping on {named}'s verdicts, or make {grader} the run's grader first"
        )
    found = list(
        Verdict.objects.filter(group__run=run, status=Verdict.Status.VALID)
        .order_by()
        .values_list("grader", flat=True)
        .distinct()[:2]
    )
    if found == [grader]:
        return None
    held = "no valid verdict" if not found else "verdicts of other graders"
    return (
        f"it was fitted on {grader}'s verdicts, but run {run.name!r} names no grader in its policy and holds {held}: "
        f"make {grader} the run's grader (auto-grade or jury) first"
    )


@transaction.atomic
def activate_mapping(
    *,
    run: Run,
    mapping: FactorMapping,
    user=None,
    reason: str = "",
    override: bool = False,
    run_grader: str | object | None = NOT_GIVEN,
) -> MappingActivation:
    """Make `mapping` the run's active one. A calibrated mapping whose recorded fit is below
    the project's minimum evidence (grading.method.evidence) raises TooLittleEvidence unless
    `override`; an activation that overrode the minimum says so. A mapping fitted on one
    grader version's verdicts (`mapping.grader`) raises GraderMismatch on a run whose numbers
    rest on another grader's (mapping_grader_refusal), override or not: such a mapping needs
    `run_grader`, the grader the run's policy names (grading.jobs.policy.auto_grader_name)."""
    if mapping.project_id not in (None, run.project_id):
        raise ValueError("that mapping belongs to another project")
    if mapping.grader:
        if run_grader is NOT_GIVEN:
            raise TypeError(f"{mapping.label} was fitted on one grader's verdicts: name the run's grader (run_grader=)")
        refused = mapping_grader_refusal(run, mapping.grader, run_grader=cast("str | None", run_grader))
        if refused is not None:
            raise GraderMismatch(f"{mapping.label} cannot be activated for {run.name}: {refused}")
    evidence = mapping_evidence(mapping, project=run.project_id)
    below = evidence is not None and not evidence.sufficient
    if below and evidence is not None and not override:  # `below` already says it is not None
        raise TooLittleEvidence(evidence)
    activation = MappingActivation.objects.create(
        run=run, mapping=mapping, activated_by=user, reason=reason, overrode_minimum=below
    )
    # Until the recomputation lands, the queue orders by what is stored under the new mapping.
    stored = (
        AdvantageResult.objects.filter(step_id=OuterRef("step_id"), uid=OuterRef("uid"), mapping=mapping)
        .order_by()
        .values("step_id")
        .annotate(s=Sum(Abs(F("redistributed_advantage") - F("advantage"))))
        .values("s")
    )
    Group.objects.filter(run=run).update(credit_moved=Coalesce(Subquery(stored, output_field=FloatField()), 0.0))
    mark_stale(step_ids=list(run.steps.values_list("id", flat=True)))
    return activation


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
            _queue_recompute([step.pk])
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
