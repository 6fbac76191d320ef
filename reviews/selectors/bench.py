"""Reads for the grader bench: several graders' verdicts and people's judgments on one run.

Any `Verdict.grader` value is a grader on the bench, juries (`jury:<name>@<version>`)
included. The people's word follows docs/method.md §5 (an adjudication where there is one,
else the reviews); the ceiling uses the reviews. Five queries whatever the number of
graders and judgments (six with `hidden_from`: the groups withheld from them), and five more for what each grader's fitted
mapping would move on the run (would_move), also whatever the number of graders.

A verdict with an uncited judgment (RolloutGrade.uncited: it speaks against a rollout without a
citation, as a grader that runs elsewhere may post) counts in every figure like any other; each
grader's row also says how many of its compared verdicts are uncited and gives its figures on
its cited and its uncited verdicts apart (reviews.stats.bench.by_citation), read with the grades.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import Count, Q

from grading.jobs.policy import auto_grader_name
from grading.method.advantage import MappingSpec
from grading.models import CheatDecision, Project, RolloutGrade, Run, Verdict
from reviews.models import Judgment, JudgmentItem
from reviews.selectors.blind import Withheld, withheld_groups
from reviews.selectors.calibration import ADJUDICATED, _figure, activation_impacts, ceiling, fitted_mapping
from reviews.stats.agreement.frame import GRADER
from reviews.stats.bench import JURY_PREFIX, by_citation, compare, jury_n_eff, usage_per_group

MAX_GRADERS = 8
N_BOOT = 1000


@dataclass(frozen=True)
class BenchFrames:
    frame: pd.DataFrame  # every grader (rater = its name) and the people's word
    reviews: pd.DataFrame  # the reviews alone: the ceiling's material
    usage: dict[str, dict[int, dict]]  # grader -> group id -> Verdict.raw["usage"]
    members: dict[str, list[str]]  # jury -> its members (from its verdicts' raw["jury"]["members"])
    uids: dict[int, str]
    withheld: Withheld  # the groups left out for the viewer (reviews.selectors.blind.withheld_groups)
    uncited: dict[str, dict[int, int]] = field(default_factory=dict)  # grader -> group id -> uncited judgments

    @property
    def hidden(self) -> frozenset[int]:
        return self.withheld.groups


_COLUMNS = ["group", "rollout", "rater", "tier", "rank", "cheat", "audit"]


def _members(raw: Any) -> list[str]:
    jury = raw.get("jury") if isinstance(raw, dict) else None
    members = jury.get("members") if isinstance(jury, dict) else None
    return [m for m in members if isinstance(m, str)] if isinstance(members, list) else []


def bench_frames(*, project: Project, run: Run, graders: list[str], hidden_from=None) -> BenchFrames:
    withheld = withheld_groups(project=project, user=hidden_from) if hidden_from is not None else Withheld()
    hidden = withheld.groups
    items = JudgmentItem.objects.filter(judgment__group__run=run)
    if hidden:
        items = items.exclude(judgment__group_id__in=hidden)
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
            )
        ),
        columns=["group", "uid", "rollout", "rollout_id", "rater", "kind", "tier", "rank", "cheat"],
    )
    empty = pd.DataFrame({c: pd.Series(dtype=object) for c in _COLUMNS})
    if human.empty:
        return BenchFrames(empty, empty, {g: {} for g in graders}, {}, {}, withheld)
    group_ids = human["group"].unique().tolist()
    verdict_rows = list(
        Verdict.objects.by_graders()
        .filter(group_id__in=group_ids, status=Verdict.Status.VALID, grader__in=graders)
        .order_by("id")
        .values_list("id", "group_id", "grader", "raw")
    )
    members: dict[str, list[str]] = {}
    usage: dict[str, dict[int, dict]] = {g: {} for g in graders}
    for _, group_id, name, raw in verdict_rows:
        raw = raw if isinstance(raw, dict) else {}
        got = raw.get("usage")
        usage[name][group_id] = got if isinstance(got, dict) else {}
        if name.startswith(JURY_PREFIX):
            for member in _members(raw):
                members.setdefault(name, [])
                if member not in members[name]:
                    members[name].append(member)
    extra = sorted({m for ms in members.values() for m in ms} - set(graders))
    grade_filter = RolloutGrade.objects.filter(verdict__group_id__in=group_ids, verdict__status=Verdict.Status.VALID)
    machine = pd.DataFrame(
        list(
            grade_filter.filter(verdict__grader__in=[*graders, *extra]).values_list(
                "verdict__group_id", "rollout__index", "rollout_id", "verdict__grader", "tier", "rank", "cheat", "uncited"
            )
        ),
        columns=["group", "rollout", "rollout_id", "rater", "tier", "rank", "cheat", "uncited"],
    )
    uncited: dict[str, dict[int, int]] = {g: {} for g in graders}
    for name, group_id in machine.loc[machine["uncited"].astype(bool), ["rater", "group"]].itertuples(index=False, name=None):
        counts = uncited.setdefault(name, {})
        counts[group_id] = counts.get(group_id, 0) + 1
    audits: dict[int, bool] = {}
    for rollout_id, confirmed in (
        CheatDecision.objects.filter(rollout_id__in=human["rollout_id"].unique().tolist(), confirmed__isnull=False)
        .order_by("rollout_id", "-decided_at", "-id")
        .values_list("rollout_id", "confirmed")
    ):
        if confirmed is not None:
            audits.setdefault(rollout_id, confirmed)
    reviews = human[human["kind"] == Judgment.Kind.REVIEW]
    adjudications = human[human["kind"] == Judgment.Kind.ADJUDICATION].assign(rater=ADJUDICATED)
    settled = set(adjudications["group"])
    word = pd.concat([reviews[~reviews["group"].isin(settled)], adjudications], ignore_index=True)

    def finish(data: pd.DataFrame) -> pd.DataFrame:
        data = data.copy()
        data["audit"] = data["rollout_id"].map(audits).astype(object)
        data["cheat"] = data["cheat"].astype(bool)
        data["rank"] = data["rank"].astype(float)
        return data[_COLUMNS].sort_values(["group", "rollout", "rater"], kind="stable").reset_index(drop=True)

    uids = dict(human.drop_duplicates("group")[["group", "uid"]].itertuples(index=False, name=None))
    frame = finish(pd.concat([machine, word], ignore_index=True))
    return BenchFrames(frame, finish(reviews), usage, members, uids, withheld, uncited)


def _plain(x: float) -> float | None:
    return None if x is None or np.isnan(x) else round(float(x), 6)


def _interval(figure) -> dict:
    f = _figure(figure)
    return {"value": f["value"], "low": f["lo"], "high": f["hi"], "n": f["n"]}


def comparison(*, project: Project, run: Run, graders: list[str], hidden_from=None, n_boot: int = N_BOOT) -> dict:
    """The compare API's body (and the bench page's material)."""
    data = bench_frames(project=project, run=run, graders=graders, hidden_from=hidden_from)
    frame = data.frame
    members_only = {m for ms in data.members.values() for m in ms} - set(graders)  # fetched for n_eff alone
    compared = frame[~frame["rater"].isin(members_only)]
    bench = compare(compared, graders, n_boot=n_boot, seed=0)
    groups = bench.group_keys
    citations = by_citation(compared, graders, groups, data.uncited, n_boot=n_boot, seed=0)
    rows = []
    for grader in graders:
        row: dict[str, Any] = {"grader": grader, "groups": bench.groups}
        row.update({name: _interval(figure) for name, figure in bench.graders[grader].items()})
        split = citations[grader]
        row["citations"] = {
            "uncited_verdicts": split.uncited_groups,
            "uncited_judgments": split.uncited_judgments,
            "cited": {"groups": split.cited_groups, **{name: _interval(f) for name, f in split.cited.items()}},
            "uncited": {"groups": split.uncited_groups, **{name: _interval(f) for name, f in split.uncited.items()}},
        }
        row["usage_per_group"] = {k: _plain(v) for k, v in usage_per_group(data.usage[grader], groups).items()}
        if grader.startswith(JURY_PREFIX):
            jury = jury_n_eff(frame, data.members.get(grader, []), groups)
            row["jury"] = {**jury, "mean_kappa": _plain(jury["mean_kappa"]), "n_eff": _plain(jury["n_eff"])}
        rows.append(row)
    moves = would_move(run=run, data=data, graders=graders)
    for row in rows:
        row["would_move"] = moves[row["grader"]]
    people = data.reviews[data.reviews["group"].isin(set(groups))]
    return {
        "project": project.name,
        "run": run.name,
        "n_boot": n_boot,
        "groups": bench.groups,
        "withheld_open_blind_groups": len(data.withheld.open_blind),
        "withheld_queued_groups": len(data.withheld.queued),
        "run_grader": auto_grader_name(run),
        "graders": rows,
        "human_ceiling": ceiling(people, n_boot=n_boot) if len(people) else {"n_groups": 0, "figures": {}},
        "paired": [
            {"a": a, "b": b, **{name: _interval(f) for name, f in figures.items()}} for (a, b), figures in bench.paired.items()
        ],
        "between_graders": [
            {"a": a, "b": b, **{name: _interval(f) for name, f in figures.items()}} for (a, b), figures in bench.between.items()
        ],
    }


def would_move(*, run: Run, data: BenchFrames, graders: list[str]) -> dict[str, dict]:
    """Per grader: the mapping fitted on its verdicts and people's judgments of the run (what
    the calibration page fits for the run and that grader: every judged group it graded, not
    only the groups all compared graders share), what activating it would move on the run
    (Σ|A* − A| against the stored numbers of the active mapping, activation_impacts) and the
    T1 share of its tiers over its valid verdicts on the run. The groups withheld from the
    viewer count in none of it. Five queries whatever the number of graders (four when the
    impacts are in the cache)."""
    machine = data.frame["rater"].isin(graders) | data.frame["rater"].isin({m for ms in data.members.values() for m in ms})
    word = data.frame[~machine]
    fits = {}
    for grader in graders:
        own = pd.concat([data.frame[data.frame["rater"] == grader].assign(rater=GRADER), word], ignore_index=True)
        fitted = fitted_mapping(own, n_boot=0)
        if fitted.n_judgments:
            fits[grader] = fitted
    impacts = activation_impacts(
        run=run, proposed={g: MappingSpec.from_dict(f.bands()) for g, f in fits.items()}, hidden=set(data.hidden)
    )
    grades = RolloutGrade.objects.filter(
        verdict__group__run=run, verdict__status=Verdict.Status.VALID, verdict__grader__in=graders
    )
    if data.hidden:
        grades = grades.exclude(verdict__group_id__in=data.hidden)
    shares = {
        name: (t1 / n if n else None)
        for name, n, t1 in grades.order_by()
        .values("verdict__grader")
        .annotate(n=Count("id"), t1=Count("id", filter=Q(tier="T1")))
        .values_list("verdict__grader", "n", "t1")
    }
    out = {}
    for grader in graders:
        share = shares.get(grader)
        move: dict[str, Any] = {"t1_share": None if share is None else round(float(share), 6), "mapping": None}
        if grader in fits:
            impact = impacts[grader]
            move.update(
                mapping=fits[grader].bands(),
                n_pairs=int(fits[grader].n_judgments),
                credit_moved=round(impact.credit_moved, 6),
                n_changed=impact.n_changed,
                n_groups_changed=impact.n_groups_changed,
                n_rows=impact.n_rows,
                n_steps_pending=impact.n_steps_pending,
            )
        else:
            move.update(n_pairs=0, credit_moved=None)
        out[grader] = move
    return out


def bench_runs(project: Project) -> list[Run]:
    return list(Run.objects.filter(project=project).order_by("name"))


def run_graders(run: Run, *, hidden_from=None) -> list[str]:
    """Every grader (any `Verdict.grader`, juries included) with a valid verdict on a group of
    `run` that people judged: the names the bench page offers. Verdicts on the groups withheld
    from `hidden_from` (withheld_groups) are left out, so a grader seen only there is not named."""
    verdicts = Verdict.objects.by_graders().filter(group__run=run, status=Verdict.Status.VALID, group__judgments__isnull=False)
    if hidden_from is not None:
        hidden = withheld_groups(project=run.project, user=hidden_from).groups
        if hidden:
            verdicts = verdicts.exclude(group_id__in=hidden)
    return sorted(set(verdicts.values_list("grader", flat=True)))
