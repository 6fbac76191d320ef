"""Reads for agreement and calibration: the long judgment frame, slices, the what-if preview.

The frame is what reviews.stats.agreement takes: one row per (rollout, rater) with group, rollout,
rater, tier (T1..T3), rank, cheat and audit, plus step, repo and grader columns to slice by.
The grader's rows are one grader version's valid verdicts (or one jury's), never several
versions pooled: the chosen one, else the run's policy grader, else the version that graded
the most judged groups (judgment_frames). People's rows are their reviews; where an adjudicator settled a group, the
adjudication is the people's word for the grader comparison (`frame`), while the
reviews stay the material of the people-vs-people ceiling (`people`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from django.core.cache import cache
from django.db.models import Count, Max
from django.http import Http404
from django.shortcuts import get_object_or_404

from grading.formats import params
from grading.jobs.policy import auto_grader_name
from grading.method.advantage import MappingSpec, group_summary, redistribute
from grading.method.services.computation import step_balance, step_inputs
from grading.method.services.mappings import active_mapping
from grading.models import (
    AdvantageResult,
    CheatDecision,
    FactorMapping,
    Group,
    Project,
    RolloutGrade,
    Run,
    Step,
    StepComputation,
    Verdict,
)
from reviews.models import Judgment, JudgmentItem
from reviews.selectors.blind import Withheld, withheld_groups
from reviews.stats.agreement.frame import GRADER
from reviews.stats.agreement.groups import STATISTICS, group_statistics
from reviews.stats.agreement.report import ceiling_report, report_from_statistics
from reviews.stats.calibration import DEFAULT_K, DEFAULT_Q, FittedMapping, bootstrap_mapping, counts_from_pairs, fit_mapping

# Resamples behind the calibration page and the agreement API's defaults: both read the same
# memoised figures (_memo), so warming them once (warm_figures) serves both.
N_BOOT = 1000
N_BOOT_SLICES = 300
N_BOOT_TREND = 200

COLUMNS = ["group", "uid", "rollout", "rater", "tier", "rank", "cheat", "audit", "step", "repo", "grader"]
ADJUDICATED = "adjudicated"
MEMO_SECONDS = 24 * 3600


def _digest(frame: pd.DataFrame) -> str:
    """A fingerprint of a frame's columns and values (row order included)."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr((list(frame.columns), len(frame))).encode())
    if len(frame):
        h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.hexdigest()


def _short(value) -> str:
    """A short digest of a value's repr, for a cache key (no spaces or odd characters)."""
    return hashlib.blake2b(repr(value).encode(), digest_size=8).hexdigest()


def memo_key(name: str, frame: pd.DataFrame, **params) -> str:
    return f"gagar:calibration:{name}:{_digest(frame)}:{_short(sorted(params.items()))}"


def _memo(name: str, frame: pd.DataFrame, compute, **params):
    """`compute()` once per (figure, frame contents, parameters), kept in Django's cache.

    The figures are pure functions of the frame (the resamples are seeded), so a key made of
    the frame's contents never goes stale: a new judgment changes the frame, hence the key,
    of exactly the reports it touches. A run's calibration page then recomputes only the
    slices and steps whose judgments changed since it was last drawn, not ~3,500 resamples
    of everything on every view."""
    key = memo_key(name, frame, **params)
    found = cache.get(key)
    if found is None:
        found = compute()
        cache.set(key, found, MEMO_SECONDS)
    return found


@dataclass
class JudgmentFrames:
    frame: pd.DataFrame  # one grader version's rows + the people's word on the groups it graded
    people: pd.DataFrame  # the reviews of those groups: the ceiling's material
    graders: list[str]  # [grader] when it graded a judged group of the scope, else []
    n_judgments: int
    withheld: int = 0  # groups left out because the viewer judges them blind or may still be served them (withheld_groups)
    grader: str | None = None  # the one grader version (or jury) the frame holds: chosen, or the default
    versions: dict[str, int] = field(default_factory=dict)  # each version with a valid verdict on a judged group: its groups
    version_frames: dict[str, pd.DataFrame] = field(default_factory=dict)  # each version's own frame (every_version=True)


def _empty() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})


def policy_grader(run: Run | None, grader: str | None = None) -> str | None:
    """The grader version a fit is for when none is chosen: the run's policy grader or jury
    (grading.jobs.policy.auto_grader_name), whose verdicts its numbers rest on."""
    if grader:
        return grader
    return auto_grader_name(run) if run is not None else None


def default_version(versions: dict[str, int]) -> str | None:
    """The version that graded the most judged groups (the first name on a tie), if any."""
    return min(versions, key=lambda name: (-versions[name], name)) if versions else None


def judgment_frames(
    *,
    project: Project,
    run: Run | None = None,
    grader: str | None = None,
    step: int | None = None,
    hidden_from=None,
    hidden: set[int] | None = None,
    every_version: bool = False,
) -> JudgmentFrames:
    """Four queries whatever the number of judgments (five with `hidden_from`, one more for the
    run's policy grader when none is chosen).

    The grader's rows are one grader version's (or one jury's), never several pooled: a
    version's tiers are what a mapping fitted on them describes. `grader` when given, else
    the run's policy grader (policy_grader), else the version that graded the most judged
    groups of the scope (default_version). `versions` counts every version's judged groups,
    for a picker; `every_version` also builds each version's own frame (`version_frames`),
    for the agreement table's per-version rows.

    `hidden_from`: the person the figures are for. The groups withheld from them (their open
    blind groups and the groups the queue may still serve them blind: reviews.selectors.blind.
    withheld_groups) are left out of every frame (grader rows and people's rows alike), so no
    figure, slice or trend computed from the result carries the grader's tiers on a group they
    judge or may yet judge blind, nor moves when one is handed to them; `withheld` counts them
    so the page or API can say so. `hidden`: those groups, when the caller has already read them.
    """
    chosen = policy_grader(run, grader)
    items = JudgmentItem.objects.filter(judgment__group__run__project=project)
    if hidden is None:
        hidden = set(withheld_groups(project=project, user=hidden_from).groups) if hidden_from is not None else set()
    if hidden:
        items = items.exclude(judgment__group_id__in=hidden)
    if run is not None:
        items = items.filter(judgment__group__run=run)
    if step is not None:
        items = items.filter(judgment__group__step__number=step)
    human = pd.DataFrame(
        list(
            items.values_list(
                "judgment__group_id",
                "judgment__group__uid",
                "rollout__index",
                "rollout_id",
                "judgment__reviewer__username",
                "judgment__kind",
                "tier",
                "rank",
                "cheat",
                "judgment__group__step__number",
                "judgment__group__task__repo",
            )
        ),
        columns=["group", "uid", "rollout", "rollout_id", "rater", "kind", "tier", "rank", "cheat", "step", "repo"],
    )
    if human.empty:
        return JudgmentFrames(_empty(), _empty(), [], 0, len(hidden), chosen)
    group_ids = human["group"].unique().tolist()

    # One verdict per group per grader version (a constraint); the newest first all the same.
    verdict_of: dict[str, dict[int, int]] = {}  # version -> group -> verdict id
    for verdict_id, group_id, name in (
        Verdict.objects.by_graders()
        .filter(group_id__in=group_ids, status=Verdict.Status.VALID)
        .order_by("group_id", "-created_at", "-id")
        .values_list("id", "group_id", "grader")
    ):
        verdict_of.setdefault(name, {}).setdefault(group_id, verdict_id)
    versions = {name: len(groups) for name, groups in sorted(verdict_of.items())}
    chosen = chosen or default_version(versions)
    wanted = sorted(verdict_of) if every_version else [chosen] if chosen in verdict_of else []
    machine = pd.DataFrame(
        list(
            RolloutGrade.objects.filter(verdict_id__in=[v for name in wanted for v in verdict_of[name].values()]).values_list(
                "verdict_id", "verdict__group_id", "rollout__index", "rollout_id", "tier", "rank", "cheat"
            )
        ),
        columns=["verdict", "group", "rollout", "rollout_id", "tier", "rank", "cheat"],
    )
    group_info = human.drop_duplicates("group").set_index("group")[["uid", "step", "repo"]]
    machine = machine.join(group_info, on="group")
    machine["rater"] = GRADER

    audits: dict[int, bool] = {}
    for rollout_id, confirmed in (
        CheatDecision.objects.filter(rollout_id__in=human["rollout_id"].unique().tolist(), confirmed__isnull=False)
        .order_by("rollout_id", "-decided_at", "-id")
        .values_list("rollout_id", "confirmed")
    ):
        if confirmed is not None:  # always so (the filter); this tells mypy
            audits.setdefault(rollout_id, confirmed)

    def finish(data: pd.DataFrame) -> pd.DataFrame:
        data = data.copy()
        data["audit"] = data["rollout_id"].map(audits).astype(object)
        data["cheat"] = data["cheat"].astype(bool)
        data["rank"] = data["rank"].astype(float)
        return data[COLUMNS].sort_values(["group", "rollout", "rater"], kind="stable").reset_index(drop=True)

    def version(name: str | None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        """The version's frame, its reviews and the people's rows it rests on. A version that
        graded none of the judged groups keeps every person's rows (the page says none pairs)."""
        graded = verdict_of.get(name or "", {})
        own = human[human["group"].isin(graded.keys())] if graded else human
        rows = machine[machine["verdict"].isin(set(graded.values()))].drop(columns=["verdict"])
        reviews = own[own["kind"] == Judgment.Kind.REVIEW]
        adjudications = own[own["kind"] == Judgment.Kind.ADJUDICATION].assign(rater=ADJUDICATED)
        settled = set(adjudications["group"])
        people_word = pd.concat([reviews[~reviews["group"].isin(settled)], adjudications], ignore_index=True)
        frame = pd.concat([rows, people_word], ignore_index=True).assign(grader=name or "")
        return finish(frame), finish(reviews.assign(grader=name or "")), own

    frame, reviews, own = version(chosen)
    frames = {name: frame if name == chosen else version(name)[0] for name in wanted} if every_version else {}
    return JudgmentFrames(
        frame,
        reviews,
        [chosen] if chosen in verdict_of else [],
        int(own.shape[0]),
        len(hidden),
        chosen,
        versions,
        frames,
    )


FIGURE_LABELS = {
    "exact_agreement": "Exact tier agreement",
    "kappa": "Cohen's κ (quadratic)",
    "alpha": "Krippendorff's α (ordinal)",
    "tau": "Kendall τ-b per group",
    "pairwise_accuracy": "Pairwise preference accuracy",
    "top1": "Top-1 agreement",
    "cheat_precision": "Cheat precision",
    "cheat_recall": "Cheat recall",
    "cheat_f1": "Cheat F1",
}


def _graded_only(frame: pd.DataFrame) -> pd.DataFrame:
    """Groups that hold both a grader's rows and a person's: the only ones comparable."""
    if frame.empty:
        return frame
    is_grader = frame["rater"] == GRADER
    by_group = frame["group"]
    has_grader = is_grader.groupby(by_group).transform("any")
    has_person = (~is_grader).groupby(by_group).transform("any")
    return frame[has_grader & has_person]


_CONFUSION = [i for i, name in enumerate(STATISTICS) if name.startswith("confusion_")]
_AGREEMENT_COLUMNS = ["group", "rollout", "rater", "tier", "rank", "cheat", "audit"]


def _statistics(frame: pd.DataFrame):
    comparable = _graded_only(frame)
    return group_statistics(comparable[_AGREEMENT_COLUMNS]) if not comparable.empty else None


def report(frame: pd.DataFrame, *, n_boot: int, seed: int = 0) -> dict:
    """Figures as plain dicts, plus the confusion counts (grader rows × people's consensus
    columns) and the number of comparable groups."""
    return _memo("report", frame[_AGREEMENT_COLUMNS], lambda: _report(frame, n_boot=n_boot, seed=seed), n_boot=n_boot, seed=seed)


def _report(frame: pd.DataFrame, *, n_boot: int, seed: int) -> dict:
    stats = _statistics(frame)
    if stats is None or not len(stats):
        return {"n_groups": 0, "figures": {}, "confusion": [[0] * 3 for _ in range(3)]}
    figures = report_from_statistics(stats, n_boot=n_boot, seed=seed)
    confusion = stats.table[:, _CONFUSION].sum(axis=0).reshape(3, 3).round().astype(int)
    return {
        "n_groups": len(stats),
        "figures": {name: {"label": FIGURE_LABELS[name], **_figure(figures[name])} for name in FIGURE_LABELS},
        "confusion": confusion.tolist(),
    }


def _figure(figure) -> dict:
    def plain(x):
        return None if x is None or (isinstance(x, float) and np.isnan(x)) else round(float(x), 6)

    return {"value": plain(figure.value), "lo": plain(figure.lo), "hi": plain(figure.hi), "n": int(figure.n)}


def ceiling(people: pd.DataFrame, *, n_boot: int, seed: int = 0) -> dict:
    return _memo(
        "ceiling", people[_AGREEMENT_COLUMNS], lambda: _ceiling(people, n_boot=n_boot, seed=seed), n_boot=n_boot, seed=seed
    )


def _ceiling(people: pd.DataFrame, *, n_boot: int, seed: int) -> dict:
    counts = people.groupby("group")["rater"].nunique() if not people.empty else pd.Series(dtype=int)
    overlap = int((counts >= 2).sum())
    if not overlap:
        return {"n_groups": 0, "figures": {}}
    figures = ceiling_report(people[_AGREEMENT_COLUMNS].drop(columns=["audit"]), n_boot=n_boot, seed=seed)
    return {
        "n_groups": overlap,
        "figures": {
            name: {"label": FIGURE_LABELS[name], **_figure(figures[name])}
            for name in FIGURE_LABELS
            if not name.startswith("cheat_")
        },
    }


def slices(
    frame: pd.DataFrame, *, n_boot: int, max_repos: int = 8, versions: dict[str, pd.DataFrame] | None = None
) -> list[dict]:
    """The agreement table's rows: everything (the fitted version's), then per grader version
    (each on its own frame, `versions`, when given), per step, per repo."""
    rows = [{"slice": "all", "value": "all judgments", **report(frame, n_boot=n_boot)}]
    for name in sorted(versions or {}):
        assert versions is not None  # (the loop says so) for mypy
        rows.append({"slice": "grader", "value": name, **report(versions[name], n_boot=n_boot)})
    for column, label in (("grader", "grader"), ("step", "step"), ("repo", "repo")):
        if column == "grader" and versions:
            continue
        values = frame[column].dropna().unique().tolist()
        if column == "repo":
            sizes = frame.groupby("repo")["group"].nunique().sort_values(ascending=False)
            values = [v for v in sizes.index.tolist()[:max_repos] if v]
        for value in sorted((v for v in values if v != "" or column != "grader"), key=str):
            rows.append({"slice": label, "value": value, **report(frame[frame[column] == value], n_boot=n_boot)})
    return rows


STEP_SLICES_SHOWN = 20  # the agreement table shows the latest steps' rows unless asked for all


def latest_step_slices(rows: list[dict], keep: int | None = STEP_SLICES_SHOWN) -> tuple[list[dict], int]:
    """The agreement table's rows with only the `keep` latest steps' rows (all when None),
    and how many step rows were left out: a run of 200 steps is 200 rows of figures, which
    the trend chart already draws."""
    steps = [row for row in rows if row["slice"] == "step"]
    if keep is None or len(steps) <= keep:
        return rows, 0
    kept = {id(row) for row in sorted(steps, key=lambda row: row["value"])[-keep:]}
    return [row for row in rows if row["slice"] != "step" or id(row) in kept], len(steps) - keep


def fitted_mapping(frame: pd.DataFrame, *, n_boot: int, seed: int = 0, q=DEFAULT_Q, k: float = DEFAULT_K) -> FittedMapping:
    """docs/method.md §5 on the (grader tier, people's consensus tier) pairs, intervals resampling groups."""
    return _memo(
        "fitted",
        frame[_AGREEMENT_COLUMNS],
        lambda: _fitted_mapping(frame, n_boot=n_boot, seed=seed, q=q, k=k),
        n_boot=n_boot,
        seed=seed,
        q=q,
        k=k,
    )


def _fitted_mapping(frame: pd.DataFrame, *, n_boot: int, seed: int, q, k: float) -> FittedMapping:
    stats = _statistics(frame)
    if stats is None or not len(stats):
        pairs = pd.DataFrame({"group": [], "grader_tier": [], "human_tier": []})
    else:  # each group's 3x3 counts back into (group, g, h) rows
        counts = stats.table[:, _CONFUSION].round().astype(np.int64)
        group, cell = np.nonzero(counts)
        repeat = counts[group, cell]
        pairs = pd.DataFrame(
            {
                "group": np.repeat(group, repeat),
                "grader_tier": np.repeat(cell // 3 + 1, repeat),
                "human_tier": np.repeat(cell % 3 + 1, repeat),
            }
        )
    if not n_boot:  # asked for no intervals
        return fit_mapping(counts_from_pairs(pairs), q=q, k=k)
    return bootstrap_mapping(pairs, n_boot=n_boot, seed=seed, q=q, k=k)


def trends(frame: pd.DataFrame, *, n_boot: int) -> list[dict]:
    """Per step: κ with its interval and the T1 share of the grader's and the people's tiers."""
    out = []
    for step in sorted(frame["step"].dropna().unique().tolist()):
        part = frame[frame["step"] == step]
        figures = report(part, n_boot=n_boot)["figures"]
        grader_tiers = part.loc[part["rater"] == GRADER, "tier"]
        human_tiers = part.loc[part["rater"] != GRADER, "tier"]
        out.append(
            {
                "step": int(step),
                "kappa": figures.get("kappa", {}).get("value"),
                "kappa_lo": figures.get("kappa", {}).get("lo"),
                "kappa_hi": figures.get("kappa", {}).get("hi"),
                "grader_t1_share": round(float((grader_tiers == "T1").mean()), 6) if len(grader_tiers) else None,
                "human_t1_share": round(float((human_tiers == "T1").mean()), 6) if len(human_tiers) else None,
            }
        )
    return out


@dataclass
class Preview:
    step: Step
    active: FactorMapping
    proposed: MappingSpec
    n_rollouts: int
    n_changed: int
    n_groups_changed: int
    max_abs_change: float
    mean_abs_change: float
    balance_active: dict
    balance_proposed: dict
    lambdas_active: list[float]
    lambdas_proposed: list[float]


def preview(*, step: Step, proposed: MappingSpec) -> Preview:
    """What activating `proposed` would do to one step, computed here and stored nowhere but
    in the cache, keyed by what it is a function of: the step's inputs version (bumped by
    every verdict, cheat decision and rollout), the run's baseline, the active mapping (an
    immutable version) and the proposed bands."""
    run = step.run
    mapping = active_mapping(run)
    bands = _short(sorted(proposed.to_dict().items()))
    key = f"gagar:calibration:preview:{step.pk}:{step.inputs_version}:{run.baseline}:{mapping.pk}:{bands}"
    found = cache.get(key)
    if found is None:
        found = _preview(step=step, run=run, mapping=mapping, proposed=proposed)
        cache.set(key, found, MEMO_SECONDS)
    return found


def _preview(*, step: Step, run: Run, mapping: FactorMapping, proposed: MappingSpec) -> Preview:
    inputs = step_inputs(step)
    if inputs.frame.empty:
        empty = step_balance(None)
        return Preview(step, mapping, proposed, 0, 0, 0, 0.0, 0.0, empty, empty, [], [])
    now = redistribute(inputs.frame, mapping=mapping.spec, baseline=run.baseline)
    then = redistribute(inputs.frame, mapping=proposed, baseline=run.baseline)
    delta = (then["redistributed_advantage"] - now["redistributed_advantage"]).abs()
    changed = delta > 1e-12
    graded_now = group_summary(now)
    graded_then = group_summary(then)
    return Preview(
        step=step,
        active=mapping,
        proposed=proposed,
        n_rollouts=len(now),
        n_changed=int(changed.sum()),
        n_groups_changed=int(now.loc[changed, "group"].nunique()),
        max_abs_change=float(delta.max()),
        mean_abs_change=float(delta[changed].mean()) if changed.any() else 0.0,
        balance_active=step_balance(now),
        balance_proposed=step_balance(then),
        lambdas_active=[float(x) for x in graded_now.loc[graded_now["status"] == "graded", "lambda"]],
        lambdas_proposed=[float(x) for x in graded_then.loc[graded_then["status"] == "graded", "lambda"]],
    )


@dataclass
class Impact:
    """What activating a proposed mapping would change in a run, from the numbers stored under
    its active mapping: the rows whose A* moves and by how much (Σ|ΔA*| over the run)."""

    n_rows: int  # stored rows of the run's current steps
    n_changed: int
    n_groups_changed: int
    credit_moved: float  # Σ|ΔA*|; every group keeps its total, so half of it is gained and half lost
    n_steps: int
    n_steps_pending: int  # steps not yet computed under the active mapping: not counted


def activation_impact(*, run: Run, proposed: MappingSpec) -> Impact:
    """Three queries (and one cache read) when the run's stored numbers have not changed since
    the last look; otherwise one more for the stored rows of its graded groups. Only graded
    groups can change: a fallback or filtered group keeps A* = A under every mapping."""
    return activation_impacts(run=run, proposed={"": proposed})[""]


def activation_impacts(*, run: Run, proposed: dict[str, MappingSpec], hidden: set[int] | None = None) -> dict[str, Impact]:
    """activation_impact for several proposed mappings at once (the bench: one per grader) in
    the same queries: the stored rows are read once for every mapping not in the cache.
    `hidden`: groups left out of the rows (a viewer's open blind groups)."""
    mapping = active_mapping(run)
    n_steps = run.steps.count()
    current = list(
        StepComputation.objects.filter(step__run=run, mapping=mapping, stale=False)
        .order_by("step_id")
        .values_list("step_id", "computed_at", "n_rows")
    )
    left_out = f":{_short(sorted(hidden))}" if hidden else ""
    keys = {
        name: f"gagar:calibration:impact:{run.pk}:{run.baseline}:{mapping.pk}:{_short(sorted(spec.to_dict().items()))}"
        f":{_short(current)}{left_out}"
        for name, spec in proposed.items()
    }
    found = cache.get_many(sorted(set(keys.values())))
    missing = {name: spec for name, spec in proposed.items() if keys[name] not in found}
    if missing:
        rows = _stored_rows(mapping=mapping, step_ids=[c[0] for c in current], hidden=hidden)
        fresh = {}
        for name, spec in missing.items():
            impact = _impact(rows, run=run, proposed=spec)
            impact.n_rows = sum(c[2] for c in current)
            impact.n_steps, impact.n_steps_pending = n_steps, n_steps - len(current)
            fresh[keys[name]] = impact
        cache.set_many(fresh, MEMO_SECONDS)
        found.update(fresh)
    return {name: found[keys[name]] for name in proposed}


def _stored_rows(*, mapping: FactorMapping, step_ids: list[int], hidden: set[int] | None) -> pd.DataFrame:
    stored = AdvantageResult.objects.filter(step_id__in=step_ids, mapping=mapping, status="graded")
    if hidden:
        stored = stored.exclude(rollout__group_id__in=hidden)
    rows = pd.DataFrame(
        list(stored.values_list("step_id", "uid", "reward", "tier", "rank", "redistributed_advantage")),
        columns=["step", "uid", "reward", "tier", "rank", "stored"],
    )
    if not rows.empty:
        rows["group"] = rows.groupby(["step", "uid"], sort=False).ngroup()
    return rows


def _impact(rows: pd.DataFrame, *, run: Run, proposed: MappingSpec) -> Impact:
    if rows.empty:
        return Impact(0, 0, 0, 0.0, 0, 0)
    # Stored rewards are after cheat zeroing, and tiers are stored for passing rollouts only.
    frame = rows.assign(cheat=False, graded=True, tier=rows["tier"].where(rows["tier"] != "", None))
    then = redistribute(frame, mapping=proposed, baseline=run.baseline)
    delta = (then["redistributed_advantage"] - rows["stored"]).abs()
    changed = delta > 1e-12
    return Impact(
        n_rows=0,
        n_changed=int(changed.sum()),
        n_groups_changed=int(rows.loc[changed, "group"].nunique()),
        credit_moved=float(delta.sum()),
        n_steps=0,
        n_steps_pending=0,
    )


@dataclass
class Figures:
    """Everything the calibration page and the agreement API show for one scope: the figures
    and the fit of one grader version (`grader`), and the versions there are to choose from."""

    graders: list[str]
    n_judgments: int  # judged rollouts in the scope
    withheld: int  # the viewer's open blind groups left out
    withheld_queued: int  # and the groups the queue may still serve them blind (withheld_groups)
    overall: dict
    fitted: FittedMapping
    ceiling: dict
    trend: list[dict]
    slices: list[dict] | None
    grader: str | None = None  # the version the figures and the fit are for
    versions: dict[str, int] = field(default_factory=dict)  # every version with judged groups here: how many


def scope_fingerprint(*, project: Project, run: Run | None, grader: str | None, step: int | None, hidden: set[int]) -> str:
    """What the scope's judgment frames are made of, read in three aggregate queries: the
    judgments (immutable once submitted, with their items), the valid verdicts (immutable,
    with their grades) and the audited cheat decisions (their latest decision time). A new
    judgment, verdict or audit in the scope, or a deleted one, changes it."""
    groups = Group.objects.filter(run__project=project)
    if run is not None:
        groups = groups.filter(run=run)
    if step is not None:
        groups = groups.filter(step_number=step)
    judged = Judgment.objects.filter(group__in=groups).aggregate(n=Count("id"), last=Max("id"))
    verdicts = (
        Verdict.objects.by_graders()
        .filter(group__in=groups, status=Verdict.Status.VALID)
        .aggregate(n=Count("id"), last=Max("id"))
    )
    audited = CheatDecision.objects.filter(rollout__group__in=groups, confirmed__isnull=False).aggregate(
        n=Count("id"), last=Max("decided_at")
    )
    state = (
        project.pk,
        run.pk if run else None,
        grader,
        step,
        sorted(hidden),
        judged,
        verdicts,
        audited["n"],
        audited["last"].isoformat() if audited["last"] else None,
    )
    return hashlib.blake2b(repr(state).encode(), digest_size=20).hexdigest()


def figures(
    *,
    project: Project,
    run: Run | None = None,
    grader: str | None = None,
    step: int | None = None,
    hidden_from=None,
    n_boot: int = N_BOOT,
    with_slices: bool = True,
) -> Figures:
    """The scope's figures, kept in the cache under the scope's fingerprint: a view of
    unchanged judgments reads four small queries and one cache entry, not the frames (tens of
    thousands of rows at a run's size). On a change, the frames are read again and only the
    reports whose rows changed are resampled (the per-report memo, _memo).

    The figures are one grader version's (judgment_frames): `grader`, else the run's policy
    grader, else the version that graded the most judged groups."""
    withheld = withheld_groups(project=project, user=hidden_from) if hidden_from is not None else Withheld()
    hidden = set(withheld.groups)
    grader = policy_grader(run, grader)
    given = (n_boot, with_slices, N_BOOT_TREND, N_BOOT_SLICES)
    key = (
        f"gagar:calibration:figures:{scope_fingerprint(project=project, run=run, grader=grader, step=step, hidden=hidden)}"
        f":{_short(given)}"
    )
    found = cache.get(key)
    if found is None:
        frames = judgment_frames(project=project, run=run, grader=grader, step=step, hidden=hidden, every_version=with_slices)
        found = Figures(
            graders=frames.graders,
            n_judgments=frames.n_judgments,
            withheld=0,
            withheld_queued=0,
            overall=report(frames.frame, n_boot=n_boot),
            fitted=fitted_mapping(frames.frame, n_boot=n_boot),
            ceiling=ceiling(frames.people, n_boot=n_boot),
            trend=trends(frames.frame, n_boot=min(n_boot, N_BOOT_TREND)),
            slices=slices(frames.frame, n_boot=min(n_boot, N_BOOT_SLICES), versions=frames.version_frames)
            if with_slices
            else None,
            grader=frames.grader,
            versions=frames.versions,
        )
        cache.set(key, found, MEMO_SECONDS)
    # The same groups left out may split differently (a queued group handed out is now open):
    # the counts are this request's, not the cached entry's.
    return replace(found, withheld=len(withheld.open_blind), withheld_queued=len(withheld.queued))


def warm_figures(*, project: Project, run: Run | None) -> Figures:
    """Compute (or find) the figures the calibration page and the agreement API show for
    this scope by default, so the next view reads them from the cache. Run by a task after
    judgments change (reviews.services.calibration.schedule_warm)."""
    shown = figures(project=project, run=run)  # the calibration page
    figures(project=project, run=run, with_slices=False)  # the agreement API's default
    last = run.steps.order_by("-number").first() if run is not None else None
    if (
        run is not None and last is not None and shown.fitted.n_judgments
    ):  # (a `last` has a run) the page previews the fitted mapping on the last step
        proposed = MappingSpec.from_dict(shown.fitted.bands())
        preview(step=last, proposed=proposed)
        activation_impact(run=run, proposed=proposed)  # and its admins' confirmation says what it changes in the run
    return shown


def page_scope(project: Project, source) -> dict:
    """The run / grader / step the calibration page is about, from its query (or the
    activation form, `source`): the project's runs, and the one named (404 when there is no
    such run), or the only one."""
    runs = list(project.runs.all())
    run = None
    if source.get("run"):
        if not params.usable_name(source["run"]):
            raise Http404("No such run")
        run = get_object_or_404(Run, project=project, name=source["run"])
    elif len(runs) == 1:
        run = runs[0]
    step = source.get("step", "")
    return {
        "run": run,
        "runs": runs,
        "grader": source.get("grader", "") or None,
        "step": params.whole_or(step, "step", default=None),
    }


def run_steps(run: Run) -> list[Step]:
    return list(run.steps.order_by("number"))
