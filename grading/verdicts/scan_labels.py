"""Write the scanners' validation set (grading.ScanLabel): labels from the cheat audit and by
upload. A label says, for one rollout and one category of the scanners' catalogue, whether the
rollout is a cheat of it; a newer label of the same rollout and category replaces the older,
with its own author and time (docs/scanners.md#validation-sets)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from grading.formats.scanlabels import LabelError, LabelLine, LabelsRefused, parse_labels
from grading.grader.prescreen.catalogue import BY_SLUG
from grading.grader.prescreen.validation import finding_category
from grading.models import Group, Project, Rollout, Run, ScanLabel

__all__ = ["LabelsRefused", "label_audited", "upload_scan_labels"]


def _store(labels: Iterable[ScanLabel]) -> int:
    """Insert, or replace the label of the same rollout and category: one statement."""
    rows = list(labels)
    if rows:
        ScanLabel.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["rollout", "category"],
            update_fields=["project", "label", "source", "author", "note", "created_at"],
        )
    return len(rows)


def label_audited(*, findings: Iterable[tuple[int, int, str, str]], confirmed: bool, author: str, note: str = "") -> int:
    """Label each category a scanner found on rollouts an auditor just settled: a cheat when
    they confirmed the rollout, honest when they overturned it. `findings` are the scanner
    findings on those rollouts, as (project id, rollout id, finding's author, finding's reason)
    (grading.CheatDecision rows of source prescreen); a finding of no catalogue category
    (`test_modified`, a retired rule) labels nothing. Call it inside the transaction that
    decides them. Returns how many labels were written."""
    now = timezone.now()
    label = ScanLabel.Label.CHEAT if confirmed else ScanLabel.Label.HONEST
    rows: dict[tuple[int, str], ScanLabel] = {}
    for project_id, rollout_id, finder, reason in findings:
        found = finding_category(finder, reason)
        if found is not None:
            rows[(rollout_id, found[0])] = ScanLabel(
                project_id=project_id,
                rollout_id=rollout_id,
                category=found[0],
                label=label,
                source=ScanLabel.Source.AUDIT,
                author=author[:150],
                note=note[:2000],
                created_at=now,
            )
    return _store(rows.values())


def _missing(project: Project, lines: list[LabelLine], found: set[tuple[str, str, int]]) -> list[LabelError]:
    """Why each label's rollout was not found: no such run, group or rollout (two queries,
    only when something is missing)."""
    wanted = [line for line in lines if (line.run, line.group, line.rollout) not in found]
    if not wanted:
        return []
    runs = set(Run.objects.filter(project=project, name__in={line.run for line in wanted}).values_list("name", flat=True))
    groups = set(
        Group.objects.filter(
            run__project=project, run__name__in=runs, uid__in={line.group for line in wanted if line.run in runs}
        ).values_list("run__name", "uid")
    )
    errors = []
    for line in wanted:
        if line.run not in runs:
            errors.append(LabelError(line.line, "run", f"no run {line.run!r:.80} in {project.name}"))
        elif (line.run, line.group) not in groups:
            errors.append(LabelError(line.line, "group", f"no group {line.group!r:.80} in run {line.run!r:.80}"))
        else:
            errors.append(LabelError(line.line, "rollout", f"group {line.group!r:.80} has no rollout {line.rollout}"))
    return errors


def upload_scan_labels(*, project: Project, body: bytes, author: str) -> int:
    """Store every label of an upload (grading.formats.scanlabels) in `project`, all or none:
    LabelsRefused naming each refused line and field (a malformed label, a category outside the
    catalogue, a run, group or rollout the project does not have). Returns how many were stored."""
    lines = parse_labels(body, categories=BY_SLUG)
    rollouts = {
        (run, uid, index): (pk, project_id)
        for pk, run, uid, index, project_id in Rollout.objects.filter(
            group__run__project=project,
            group__run__name__in={line.run for line in lines},
            group__uid__in={line.group for line in lines},
            index__in={line.rollout for line in lines},
        ).values_list("pk", "group__run__name", "group__uid", "index", "group__run__project_id")
    }
    errors = _missing(project, lines, set(rollouts))
    if errors:
        raise LabelsRefused(sorted(errors, key=lambda e: e.line))
    now = timezone.now()
    with transaction.atomic():
        return _store(
            ScanLabel(
                project_id=rollouts[(line.run, line.group, line.rollout)][1],
                rollout_id=rollouts[(line.run, line.group, line.rollout)][0],
                category=line.category,
                label=line.label,
                source=ScanLabel.Source.UPLOAD,
                author=author[:150],
                note=line.note,
                created_at=now,
            )
            for line in lines
        )
