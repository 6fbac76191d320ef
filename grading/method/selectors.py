"""Reads of the method's inputs and outputs: the factor mappings for the API (which a project
sees, which runs each is in force for, a run's activation history), and what cheats confirmed
after a trainer took their step were served (`late_cheat_credit`, grading.method.late_credit)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.db.models import CharField, Exists, F, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from grading.method import late_credit
from grading.method.export import neutralise_cell
from grading.method.services.mappings import active_mapping, default_mapping
from grading.models import CheatDecision, FactorMapping, MappingActivation, Project, Rollout, Run, StepExport


def visible_mappings(project: Project) -> QuerySet[FactorMapping]:
    """The built-in default(s) and the project's own, as `resolve_mapping` sees them."""
    return FactorMapping.objects.filter(Q(project__isnull=True) | Q(project=project)).select_related(
        "project", "created_by__service_account__created_by"
    )


def with_active_runs(project: Project, mappings: list[FactorMapping]) -> list[FactorMapping]:
    """Set `active_runs` on each mapping: the runs of `project` it is in force for now.

    One query, plus one when the built-in default is not among `mappings` (or must be recreated).
    """
    latest = MappingActivation.objects.filter(run=OuterRef("pk")).order_by("-created_at", "-id").values("mapping_id")[:1]
    runs = (
        Run.objects.filter(project=project).annotate(active_id=Subquery(latest)).order_by("name").values_list("name", "active_id")
    )
    by_mapping: dict[int, list[str]] = {}
    default_id = None
    for name, active_id in runs:
        if active_id is None:  # never activated: the built-in default applies (active_mapping)
            if default_id is None:
                default_id = next(
                    (m.pk for m in mappings if m.project_id is None and (m.name, m.version) == ("default", 1)), None
                )
                default_id = default_id or default_mapping().pk
            active_id = default_id
        by_mapping.setdefault(active_id, []).append(name)
    for mapping in mappings:
        # not a model field: MappingListItemSerializer reads it
        mapping.active_runs = by_mapping.get(mapping.pk, [])  # type: ignore[attr-defined]
    return mappings


def visible_mapping(project: Project, pk: int) -> FactorMapping | None:
    """The mapping of that id if `project` sees it (visible_mappings), None otherwise."""
    return visible_mappings(project).filter(pk=pk).first()


def mapping_list(project: Project) -> list[FactorMapping]:
    """Every mapping `project` sees, each with its `active_runs` (with_active_runs)."""
    return with_active_runs(project, list(visible_mappings(project)))


def activation_history(run: Run) -> list[MappingActivation]:
    """Every activation of the run, newest first, with what the API shows of each."""
    return list(
        run.mapping_activations.select_related(
            "run",
            "mapping__project",
            "mapping__created_by__service_account__created_by",
            "activated_by__service_account__created_by",
        )
    )


def run_mapping(run: Run, history: list[MappingActivation]) -> FactorMapping:
    """The mapping in force for the run: the latest activation's, or the built-in default."""
    return history[0].mapping if history else active_mapping(run)  # the built-in default: no project, no author


# Served bodies one run page reads at most: a body is one step (25,088 rows of JSON Lines,
# 10 MB, read in about 40 ms; Parquet 2 ms); past this the page names the steps it left unread.
MAX_SERVED_READ = 40


def late_cheat_credit(run: Run, *, read_first: Collection[int] = ()) -> late_credit.LateCredit:
    """Per step, the positive credit (A* and A as served) that went to rollouts confirmed as
    cheats after the trainer took the step (grading.method.late_credit), with the scanner
    that would have caught each. What the trainer took is the step's first export served
    while the step was final (a waiting trainer's answer: `wait_for_step` fetches until then),
    else its first export. A rollout counts when the decision in force on it is a confirmed
    cheat decided after that export, and the served row gave it credit as no cheat.

    One query when no cheat was confirmed after an export; four otherwise (the late
    rollouts, their scanner findings, when those scanner versions first stored a finding,
    the served bodies), whatever the number of steps or rollouts. At most MAX_SERVED_READ
    bodies are read, the steps in `read_first` (the page's) first."""
    served = StepExport.objects.filter(step=OuterRef("group__step_id")).order_by("-final", "created_at", "id")
    in_force = CheatDecision.objects.filter(rollout=OuterRef("pk"), confirmed__isnull=False).order_by("-decided_at", "-id")
    who = Coalesce("decided_by__username", "author", output_field=CharField())
    rows = list(
        Rollout.objects.filter(group__run=run)
        .filter(Exists(CheatDecision.objects.filter(rollout=OuterRef("pk"), confirmed=True)))
        .annotate(
            cheat_in_force=Subquery(in_force.values("confirmed")[:1]),
            cheat_decided_at=Subquery(in_force.values("decided_at")[:1]),
            cheat_decided_by=Subquery(in_force.annotate(who=who).values("who")[:1]),
            served_id=Subquery(served.values("id")[:1]),
            served_at=Subquery(served.values("created_at")[:1]),
        )
        .filter(cheat_in_force=True, cheat_decided_at__gt=F("served_at"))
        .order_by("group__step_number", "group__uid", "index")
        .values_list(
            "id",
            "group__step_number",
            "group__uid",
            "index",
            "served_id",
            "served_at",
            "cheat_decided_at",
            "cheat_decided_by",
        )
    )
    if not rows:
        return late_credit.LateCredit()
    findings = _scanner_findings([r[0] for r in rows], served_at={r[0]: r[5] for r in rows})
    steps: dict[int, tuple[int, datetime]] = {}  # step number -> (served export, served at)
    for row in rows:
        steps.setdefault(row[1], (row[4], row[5]))
    first = set(read_first)
    order = sorted(steps, key=lambda n: (n not in first, n))
    read, unread = order[:MAX_SERVED_READ], order[MAX_SERVED_READ:]
    wanted: dict[int, list[tuple]] = {}
    for row in rows:
        if row[1] in read:
            wanted.setdefault(row[4], []).append(row)
    served_by_rollout: dict[int, late_credit.Served] = {}
    failed: list[int] = []
    bodies = StepExport.objects.filter(pk__in=list(wanted)).values_list("id", "format", "body", "step__number")
    for export_id, fmt, body, number in bodies.iterator(chunk_size=1):
        keys = {(neutralise_cell(r[2]) if fmt == "csv" else r[2], r[3]): r[0] for r in wanted[export_id]}
        try:
            served_by_rollout.update(late_credit.served_rows(bytes(body), fmt, keys))
        except late_credit.Unreadable:
            failed.append(number)
    credits = []
    for number in read:
        if number in failed:
            continue
        late = [
            late_credit.LateRollout(
                rollout_id=pk,
                uid=uid,
                index=index,
                served=served_by_rollout[pk],
                confirmed_by=by or "",
                confirmed_at=decided_at,
                scanner=late_credit.scanner_call(findings.get(pk, []), served_at),
            )
            for pk, step, uid, index, _, served_at, decided_at, by in rows
            if step == number and pk in served_by_rollout
        ]
        credit = late_credit.step_credit(number, steps[number][1], late)
        if credit.n_rollouts:
            credits.append(credit)
    credits.sort(key=lambda c: c.number)
    return late_credit.LateCredit(tuple(credits), tuple(sorted([*failed, *unread])))


def _scanner_findings(rollout_ids: list[int], *, served_at: dict[int, datetime]) -> dict[int, list[late_credit.Finding]]:
    """The scanner findings on these rollouts, each with when its scanner version first stored
    a finding anywhere (asked only for the versions that found them after the export)."""
    stored = list(
        CheatDecision.objects.filter(rollout_id__in=rollout_ids, source=CheatDecision.Source.PRESCREEN)
        .order_by("created_at", "id")
        .values_list("rollout_id", "author", "created_at")
    )
    later = {author for pk, author, at in stored if at > served_at[pk]}
    since: dict[str, datetime] = {}
    if later:
        before = max(served_at.values())
        since = dict(
            CheatDecision.objects.filter(source=CheatDecision.Source.PRESCREEN, author__in=later, created_at__lte=before)
            .order_by()
            .values("author")
            .annotate(first=Min("created_at"))
            .values_list("author", "first")
        )
    findings: dict[int, list[late_credit.Finding]] = {}
    for pk, author, at in stored:
        findings.setdefault(pk, []).append(late_credit.Finding(author, stored_at=at, version_since=since.get(author)))
    return findings
