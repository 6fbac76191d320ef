"""Verdicts from a grader that runs elsewhere: what POST /api/v1/verdicts/ stores.

The body is the shape the LLM grader submits (grading.grader.llm.VERDICT_SCHEMA) with the group
named by run, step and uid and the grader by "name@version"; evidence is optional. It is checked
the same way -- the schema, then grading.grader.evidence.find_problems on the group's workspace
-- but for one rule: a judgment that speaks against its rollout (a tier below T1, a low score, a
cheat flag) need not cite, since the grader runs elsewhere and its reasons with it. Such a
judgment is stored marked uncited (RolloutGrade.uncited), shown so and counted apart on the
bench; a citation that is given must resolve, and a refusal names where it is
("judgments[1].evidence[0]"). The verdict is stored all or nothing through
grading.verdicts.store.record_verdict, so calibration and the bench treat it as any grader's.
The method reads it only when the run's policy names its grader, as a member of the run's jury
(grading.method.services.computation.policy_verdicts); otherwise it is stored bench-only. The
same verdict posted again is unchanged; a different one from the same grader version on the same
group is a conflict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction

from grading.formats import params
from grading.grader.evidence import find_problems, is_uncited
from grading.grader.llm import parse_verdict
from grading.models import Group, Project, Verdict
from grading.registry.versions import GraderNameError, check_external_name, ensure_version
from grading.registry.workspaces import load_workspace
from grading.verdicts.store import GradeInput, record_verdict

FIELDS = ("run", "step", "uid", "grader", "judgments")
MAX_JUDGMENTS = 1000
# Citations a judgment, and a verdict, may hold. Each is resolved on the group in the request
# (a "file" citation reads the repository with git), so they are bounded before any is.
MAX_EVIDENCE = 50
MAX_CITATIONS = 200


class ExternalVerdictError(ValueError):
    """A refused verdict: `field` names what is wrong, `status` is the HTTP status to answer with."""

    def __init__(self, field: str, message: str, status: int = 400, errors: list[str] | None = None):
        super().__init__(message)
        self.field, self.status, self.errors = field, status, errors or []


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    result: str  # "stored" or "unchanged"
    uncited: list[int]  # the rollouts whose judgment is uncited, by index


def _text(body: dict, name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value or not params.usable_name(value) or len(value) > 500:
        raise ExternalVerdictError(name, f"{name} must be a non-empty string without NUL")
    return value


def _canonical(judgments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(
        (
            {
                "rollout": j["rollout"],
                "tier": j["tier"],
                "rank": j["rank"],
                "scores": dict(sorted(j["scores"].items())),
                "cheat": j["cheat"],
                "evidence": j.get("evidence", []),
            }
            for j in judgments
        ),
        key=lambda j: j["rollout"],
    )


def _check_evidence_counts(raw_judgments: list[dict]) -> None:
    """Refuse more citations than a judgment or a verdict may hold, before any is looked at."""
    total = 0
    for j in raw_judgments:
        evidence = j.get("evidence")
        if not isinstance(evidence, list):
            continue  # the schema names it
        if len(evidence) > MAX_EVIDENCE:
            rollout = j.get("rollout")
            which = f"rollout {rollout}" if isinstance(rollout, int) and not isinstance(rollout, bool) else "a judgment"
            raise ExternalVerdictError(
                "judgments.evidence",
                f"{which} cites {len(evidence)} pieces of evidence; a judgment may cite at most {MAX_EVIDENCE}",
            )
        total += len(evidence)
    if total > MAX_CITATIONS:
        raise ExternalVerdictError(
            "judgments.evidence", f"the verdict cites {total} pieces of evidence; a verdict may cite at most {MAX_CITATIONS}"
        )


def _known(verdicts, group: Group, canonical: list[dict[str, Any]], uncited: list[int]) -> Outcome | None:
    """The answer when `verdicts` (one grader version's on `group`) holds one already:
    unchanged when it is this one, else ExternalVerdictError 409; None when there is none."""
    existing = verdicts.first()
    if existing is None:
        return None
    if (existing.raw or {}).get("verdict") != {"judgments": canonical}:
        raise ExternalVerdictError(
            "grader",
            f"{existing.grader} already gave group {group.uid!r} a different verdict; post it under a new version",
            status=409,
        )
    existing.group = group
    return Outcome(existing, "unchanged", uncited)


def record_external_verdict(*, project: Project, body: object, posted_by: str | None) -> Outcome:
    if not isinstance(body, dict):
        raise ExternalVerdictError("body", "the body must be a JSON object")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise ExternalVerdictError(unknown[0], f"unknown field {unknown[0]!r}; a verdict has {', '.join(FIELDS)}")
    for name in FIELDS:
        if name not in body:
            raise ExternalVerdictError(name, f"{name} is required")
    run, uid = _text(body, "run"), _text(body, "uid")
    step = body["step"]
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ExternalVerdictError("step", "step must be a whole number")
    try:
        check_external_name(body["grader"])
    except GraderNameError as exc:
        raise ExternalVerdictError("grader", str(exc)) from None
    grader: str = body["grader"]
    raw_judgments = body["judgments"]
    if not isinstance(raw_judgments, list) or not all(isinstance(j, dict) for j in raw_judgments):
        raise ExternalVerdictError("judgments", "judgments must be a list of objects")
    if len(raw_judgments) > MAX_JUDGMENTS:
        raise ExternalVerdictError("judgments", f"at most {MAX_JUDGMENTS} judgments")
    _check_evidence_counts(raw_judgments)
    submitted = [{**j, "evidence": j.get("evidence", [])} for j in raw_judgments]
    judgments, errors = parse_verdict({"judgments": submitted})
    if errors:
        raise ExternalVerdictError("judgments", "the judgments do not match the verdict schema", errors=errors)
    group = (
        Group.objects.select_related("task", "step", "run")
        .filter(run__project=project, run__name=run, step__number=step, uid=uid)
        .first()
    )
    if group is None:
        raise ExternalVerdictError("uid", f"no group {uid!r} in step {step} of run {run!r}", status=404)
    canonical = _canonical(submitted)
    uncited = sorted(j.index for j in judgments if is_uncited(j.tier, j.cheat, j.scores, j.evidence))
    # A verdict this grader version already gave is answered before anything is resolved: the
    # same again was checked when it was stored, a different one is refused whatever it cites.
    if (known := _known(Verdict.objects.filter(group=group, grader=grader), group, canonical, uncited)) is not None:
        return known
    found = find_problems(load_workspace(group), judgments, citations_required=False)
    if found:
        raise ExternalVerdictError(found[0].field, "the verdict does not hold for this group", errors=[p.text for p in found])
    with transaction.atomic():
        # Posts on one group take turns from here, so a verdict posted meanwhile is seen (FOR
        # UPDATE on a row that is not there yet locks nothing: the group's row is the one locked).
        Group.objects.select_for_update().filter(pk=group.pk).values_list("pk").first()
        if (known := _known(Verdict.objects.filter(group=group, grader=grader), group, canonical, uncited)) is not None:
            return known
        try:
            ensure_version(project_id=project.pk, name=grader, backend="external")
        except GraderNameError as exc:
            raise ExternalVerdictError("grader", str(exc)) from None
        # Read by the method only as a member of the jury the run's policy names
        # (grading.method.services.computation.policy_verdicts); otherwise it is on the bench alone and
        # leaves the step's advantages, and their inputs version, as they are.
        jury = group.run.jury
        verdict, created = record_verdict(
            group=group,
            grader=grader,
            status=Verdict.Status.VALID,
            grades=[
                GradeInput(j.index, j.tier, j.rank, cheat=j.cheat, scores=j.scores, evidence=[e.as_dict() for e in j.evidence])
                for j in judgments
            ],
            raw={"verdict": {"judgments": canonical}, "external": {"posted_by": posted_by or ""}},
            bench_only=jury is None or grader not in jury.members,
        )
        if not created:  # never "stored" for a row this post did not write
            return _known(Verdict.objects.filter(pk=verdict.pk), group, canonical, uncited) or Outcome(
                verdict, "unchanged", uncited
            )
    return Outcome(verdict, "stored", uncited)
