"""The scanners against the project's validation set: per category of the catalogue, its
current version and every older version with findings stored here, each counted against the
labeled rollouts (grading.grader.prescreen.validation.figures; docs/scanners.md#validation-sets).

Which rollouts a version read decides what a miss is. The current version is run again, here,
on every labeled rollout (the pure `screen_rollout`; the labeled set is small), so it read them
all: a labeled cheat it does not flag is a miss. An older version's code is gone: only its
stored findings say what it flagged, and nothing says which rollouts it read and passed, so its
misses — and its recall — are unknown; its precision stands.

Labels and findings on groups the reader still judges blind stay out (a scanner finding is a
grader field there, as in the audit). Four queries whatever the number of labels: the labels,
the findings per version, the stored versions' findings on labeled rollouts, the labeled
rollouts with their bodies and tasks (read in chunks).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, QuerySet

from grading.grader.prescreen import screen_rollout, task_of
from grading.grader.prescreen.catalogue import BY_SLUG, CATEGORIES
from grading.grader.prescreen.signals import Task
from grading.grader.prescreen.validation import Figures, figures, finding_category
from grading.grader.workspace import GroupWorkspace, RolloutView
from grading.models import CheatDecision, Project, ProjectScanner, Rollout, RolloutContent, ScanLabel
from reviews.selectors.blind import open_blind_group_ids

logger = logging.getLogger(__name__)

# The current versions run again on at most this many labeled rollouts (the most recently
# labeled): a page read stays bounded whatever is uploaded (about 9 ms a real rollout of
# 33-157 kB, so some 5 s at the cap).
MAX_RESCREENED = 500
CHUNK = 50


@dataclass(frozen=True)
class VersionFigures:
    scanner: str  # the versioned name its findings are stored under, e.g. "history_search@1"
    version: int
    current: bool
    findings: int  # findings of it stored in the project
    figures: Figures

    @property
    def recall_known(self) -> bool:
        return self.figures.fn is not None


@dataclass(frozen=True)
class ScannerRow:
    number: int
    slug: str
    title: str
    kind: str
    version: int  # the current version
    labeled: int
    labeled_cheat: int
    versions: list[VersionFigures]  # the current one first, then older ones, newest first

    @property
    def current(self) -> VersionFigures:
        return self.versions[0]


@dataclass(frozen=True)
class ScannerReport:
    rows: list[ScannerRow]
    labeled_rollouts: int
    rescreened: int  # labeled rollouts the current versions were run on
    capped: bool  # more labeled rollouts than MAX_RESCREENED


def _labels(project: Project, hidden_from) -> QuerySet[ScanLabel]:
    labels = ScanLabel.objects.filter(project=project)
    if hidden_from is not None:
        labels = labels.exclude(rollout__group_id__in=open_blind_group_ids(project=project, user=hidden_from))
    return labels


def _findings(project: Project, hidden_from) -> QuerySet[CheatDecision]:
    found = CheatDecision.objects.filter(rollout__group__run__project=project, source=CheatDecision.Source.PRESCREEN)
    if hidden_from is not None:
        found = found.exclude(rollout__group_id__in=open_blind_group_ids(project=project, user=hidden_from))
    return found


def _rescreen(rollout_ids: list[int]) -> tuple[set[int], dict[str, set[int]]]:
    """Run the current scanners on these rollouts: (the rollouts read, slug -> rollouts flagged).
    One query, read in chunks; a rollout the scanners fail on counts as not read."""
    read: set[int] = set()
    flagged: dict[str, set[int]] = defaultdict(set)
    tasks: dict[int, Task] = {}
    rows = (
        Rollout.objects.filter(pk__in=rollout_ids)
        .select_related("group__task", "content")
        .only(
            "id",
            "index",
            "passed",
            "exit_status",
            "group__id",
            "group__uid",
            "group__task__instance_id",
            "group__task__repo",
            "group__task__base_commit",
            "group__task__gold_patch",
            "group__task__test_patch",
            "group__task__fail_to_pass",
            "group__task__pass_to_pass",
            "content__messages",
            "content__patch",
            "content__tests",
            "content__test_log",
        )
        .order_by("pk")
    )
    for rollout in rows.iterator(chunk_size=CHUNK):
        group, stored = rollout.group, getattr(rollout, "content", None) or RolloutContent()
        if group.pk not in tasks:
            task = group.task
            tasks[group.pk] = task_of(
                GroupWorkspace(
                    uid=group.uid,
                    instance_id=task.instance_id,
                    repo=task.repo,
                    base_commit=task.base_commit,
                    gold_patch=task.gold_patch,
                    test_patch=task.test_patch,
                    fail_to_pass=list(task.fail_to_pass or []),
                    pass_to_pass=list(task.pass_to_pass or []),
                )
            )
        view = RolloutView(
            index=rollout.index,
            passed=rollout.passed,
            patch=stored.patch,
            messages=stored.messages or [],
            tests=stored.tests or {},
            test_log=stored.test_log,
            exit_status=rollout.exit_status,
        )
        try:
            signals = screen_rollout(view, task=tasks[group.pk])
        except Exception:  # one rollout the scanners cannot read must not take the page down
            logger.exception("scanners failed on rollout %s", rollout.pk)
            continue
        read.add(rollout.pk)
        for signal in signals:
            if signal.signal in BY_SLUG:
                flagged[signal.signal].add(rollout.pk)
    return read, flagged


def scanner_report(project: Project, *, hidden_from=None) -> ScannerReport:
    """Every category of the catalogue with its versions' figures on the project's labels."""
    by_category: dict[str, dict[int, bool]] = defaultdict(dict)
    newest: dict[int, datetime] = {}
    for rollout_id, slug, label, created_at in _labels(project, hidden_from).values_list(
        "rollout_id", "category", "label", "created_at"
    ):
        by_category[slug][rollout_id] = label == ScanLabel.Label.CHEAT
        newest[rollout_id] = max(newest.get(rollout_id, created_at), created_at)
    labeled = sorted(newest, key=lambda pk: (newest[pk], pk), reverse=True)
    rescreen = labeled[:MAX_RESCREENED]

    counts: dict[tuple[str, int], int] = {}
    for author, n in _findings(project, hidden_from).filter(author__contains="@").values_list("author").annotate(n=Count("id")):
        found = finding_category(author, "")
        if found is not None and found[1] is not None:
            counts[(found[0], found[1])] = counts.get((found[0], found[1]), 0) + n
    stored: dict[tuple[str, int], set[int]] = defaultdict(set)
    if labeled:
        on_labeled = _findings(project, hidden_from).filter(
            author__contains="@", rollout_id__in=_labels(project, hidden_from).values("rollout_id")
        )
        for rollout_id, author in on_labeled.values_list("rollout_id", "author"):
            found = finding_category(author, "")
            if found is not None and found[1] is not None:
                stored[(found[0], found[1])].add(rollout_id)
    read, flagged = _rescreen(rescreen) if rescreen else (set(), {})

    rows = []
    for category in CATEGORIES:
        labels = by_category.get(category.slug, {})
        current = VersionFigures(
            scanner=f"{category.slug}@{category.version}",
            version=category.version,
            current=True,
            findings=counts.get((category.slug, category.version), 0),
            figures=figures(labels, flagged.get(category.slug, set()), scanned=read),
        )
        older = [
            VersionFigures(
                scanner=f"{category.slug}@{version}",
                version=version,
                current=False,
                findings=n,
                figures=figures(labels, stored.get((category.slug, version), set()), scanned=None),
            )
            for (slug, version), n in sorted(counts.items(), key=lambda item: -item[0][1])
            if slug == category.slug and version != category.version
        ]
        rows.append(
            ScannerRow(
                number=category.number,
                slug=category.slug,
                title=category.title,
                kind=category.kind,
                version=category.version,
                labeled=len(labels),
                labeled_cheat=sum(labels.values()),
                versions=[current, *older],
            )
        )
    return ScannerReport(rows=rows, labeled_rollouts=len(labeled), rescreened=len(read), capped=len(labeled) > MAX_RESCREENED)


@dataclass(frozen=True)
class LabelRow:
    id: int
    run: str
    group: str
    rollout: int
    category: str
    label: str
    source: str
    author: str
    note: str
    created_at: datetime


def scan_labels_page(project: Project, *, before: int | None, limit: int, hidden_from=None) -> list[LabelRow]:
    """The project's labels, newest first (by id), at most `limit`, those with an id below
    `before` when given: one query."""
    labels = _labels(project, hidden_from)
    if before is not None:
        labels = labels.filter(pk__lt=before)
    return [
        LabelRow(*row)
        for row in labels.order_by("-pk").values_list(
            "pk",
            "rollout__group__run__name",
            "rollout__group__uid",
            "rollout__index",
            "category",
            "label",
            "source",
            "author",
            "note",
            "created_at",
        )[:limit]
    ]


@dataclass(frozen=True)
class OwnScannerRow:
    scanner: ProjectScanner
    findings: int  # stored by this version, on groups the reader may see


def own_scanners(project: Project, *, hidden_from=None) -> list[OwnScannerRow]:
    """Every version of the project's own scanners (grading.jobs.project_scanners), newest
    version first per name, with the findings it stored (two queries)."""
    versions = list(ProjectScanner.objects.filter(project=project).order_by("name", "-version"))
    if not versions:
        return []
    counts = dict(
        _findings(project, hidden_from)
        .filter(author__in=[v.author for v in versions])
        .order_by()
        .values("author")
        .annotate(n=Count("id"))
        .values_list("author", "n")
    )
    return [OwnScannerRow(v, counts.get(v.author, 0)) for v in versions]
