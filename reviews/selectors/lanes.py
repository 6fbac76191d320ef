"""How one person names a group's rollouts: by index as stored ("#3"), or, while they judge
the group blind, by lane label ("C") with the project's blind fields withheld
(grading.rollouts.blinding says which fields and why).

A blind judge's labels follow their assignment's shuffled `order` (passing first:
shuffled_order), so the page's lanes read A, B, C...; rollouts added
to the group after it was handed out come last, by index. Labels reach every place such a
person meets a rollout: lane headers and ids, the overview, cluster labels, turn and patch
anchors, partial URLs (`rollouts/C/turns/`), the judging form's field names (`tier-C`),
search hits and the group API. Storage keeps indexes: the form is mapped back
(`form_to_storage`) before a draft or judgment is stored. A blind judge's URLs and forms
take labels only: an index they send is not read, so no answer tells them which index a
label stands for. Once they submit (or skip), they see indexes again; their labels still
open what they bookmarked.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from types import EllipsisType

from django.db.models import F, QuerySet

from grading.models import Group, Project, Rollout
from grading.projects.viewers import BlindView
from grading.rollouts.blinding import BlindFields, lane_label, lane_position
from grading.rollouts.clusters import cluster_label
from reviews.models import Assignment, ReviewPolicy

_FORM_KEY = re.compile(r"(tier|rank|cheat|note|score)-([A-Za-z0-9]{1,6})((?:-[a-z_]{1,40})?)\Z")


@dataclass(frozen=True)
class Lanes:
    blind: bool  # judging blind now: labels only, blind fields withheld
    labels: dict[int, str] = field(default_factory=dict)  # index -> label, from a blind assignment's order
    fields: BlindFields = field(default_factory=BlindFields)

    def key(self, index: int) -> str:
        """The rollout's name in ids, URLs and form fields: its label when blind, else its index."""
        return self.labels.get(index, "?") if self.blind else str(index)

    def name(self, index: int) -> str:
        """The rollout's name in text: "C" when blind, else "#3"."""
        return self.labels.get(index, "?") if self.blind else f"#{index}"

    def index_of(self, key) -> int | None:
        """The rollout a URL or form names, or None. A blind judge names rollouts by label
        only; anyone else by index (or by the labels they judged under)."""
        key = str(key)
        if lane_position(key) is not None:
            return next((i for i, label in self.labels.items() if label == key), None)
        if self.blind or not (key.isascii() and key.isdigit()) or len(key) > 9:
            return None
        return int(key)

    @property
    def names(self) -> dict[int, str] | None:
        """For refusals that name rollouts (reviews.services.judgments): labels when blind."""
        return dict(self.labels) if self.blind else None

    def form_to_storage(self, data) -> dict[str, str]:
        """A judging form's fields as stored: `tier-C` becomes `tier-<index>`. A field naming
        a rollout this person may not name so (an index, when blind) is left out."""
        out: dict[str, str] = {}
        for key in data:
            value = data.get(key)
            match = _FORM_KEY.match(key) if isinstance(key, str) else None
            if match is None:
                out[key] = value
                continue
            index = self.index_of(match[2])
            if index is not None:
                out[f"{match[1]}-{index}{match[3]}"] = value
        return out

    def errors_from_storage(self, errors: dict[str, str]) -> dict[str, str]:
        """Refusals keyed by stored field names (`tier-3`), keyed as this person's form names them."""
        if not self.blind:
            return errors
        out = {}
        for key, message in errors.items():
            match = _FORM_KEY.match(key)
            if match and match[2].isdigit():
                key = f"{match[1]}-{self.key(int(match[2]))}{match[3]}"
            out[key] = message
        return out

    def blind_view(self) -> BlindView | None:
        return BlindView(dict(self.labels), self.fields) if self.blind else None


def labels_from_order(order: list[int], indexes) -> dict[int, str]:
    """Lane labels: the order's rollouts A, B, C... in its order; any others after, by index."""
    seen = [i for i in dict.fromkeys(order) if isinstance(i, int)]
    rest = sorted(set(indexes) - set(seen))
    known = set(indexes)
    return {index: lane_label(n) for n, index in enumerate([i for i in seen if i in known] + rest)}


def with_blind_fields(assignments: QuerySet[Assignment]) -> QuerySet[Assignment]:
    """Assignments read with their project's blind fields (`lanes_for` then asks no more)."""
    return assignments.annotate(project_blind_fields=F("group__run__project__review_policy__blind_fields"))


def _fields(assignment: Assignment, group: Group) -> BlindFields:
    default = ReviewPolicy._meta.get_field("blind_fields").default
    if hasattr(assignment, "project_blind_fields"):
        stored = assignment.project_blind_fields
    else:
        stored = ReviewPolicy.objects.filter(project_id=group.run.project_id).values_list("blind_fields", flat=True).first()
    try:
        return BlindFields.parse(stored if isinstance(stored, list) else default())
    except ValueError:  # a value written past the service: withhold the defaults rather than nothing
        return BlindFields.parse(default())


def lanes_for(*, user, group: Group, assignment: Assignment | EllipsisType | None = Ellipsis, indexes=None) -> Lanes:
    """This person's names for `group`'s rollouts. `assignment`: theirs, if already read
    (one query otherwise: it brings the project's blind fields along); `indexes`: the group's
    rollout indexes, if already read (one query otherwise, only for someone holding a blind
    assignment). An assignment read without `with_blind_fields` costs a query for them."""
    if isinstance(assignment, EllipsisType):  # not given: read it
        assignment = (
            with_blind_fields(Assignment.objects.filter(group=group, reviewer=user)).first()
            if getattr(user, "is_authenticated", False)
            else None
        )
    if assignment is None or not assignment.blind or not assignment.order:
        return Lanes(blind=False)
    if indexes is None:
        indexes = list(Rollout.objects.filter(group=group).values_list("index", flat=True))
    labels = labels_from_order(list(assignment.order), indexes)
    if not assignment.is_open:
        return Lanes(blind=False, labels=labels)
    return Lanes(blind=True, labels=labels, fields=_fields(assignment, group))


def blind_view_for(*, user, group: Group) -> BlindView | None:
    """grading.projects.viewers' question (the group API): how `user` must see `group`."""
    return lanes_for(user=user, group=group).blind_view()


def withhold_on_page(rollouts: list[Rollout], lanes: Lanes) -> None:
    """Blank the blind fields on the rollouts a blind judge's page renders (never saved):
    every template path that shows them then shows nothing."""
    if not lanes.blind:
        return
    fields = lanes.fields
    for rollout in rollouts:
        if fields.source:
            rollout.source_format, rollout.source_ref = "", ""
        if fields.cost:
            rollout.cost_usd = None
        rollout.stats = {k: v for k, v in (rollout.stats or {}).items() if not fields.hides_key(k)}


def cluster_text(rollout: Rollout, members: list[int], lanes: Lanes) -> str:
    """A rollout's cluster label ("same change as C, E") in this person's names, from the
    stored cluster's members (grading.rollouts.clusters.cluster_label: every member names
    all the others): labels stored before that wording read the same as new ones."""
    empty = rollout.cluster_label.startswith("no change")
    ordered = sorted(members, key=lambda i: lane_position(lanes.key(i)) or 0) if lanes.blind else sorted(members)
    return cluster_label(rollout.index, tuple(ordered), empty=empty, extra=len(rollout.extra_files or ()), name=lanes.name)


def search_lanes(*, project: Project, user) -> Callable[[Rollout], str]:
    """SearchScope.lane_of for `user`: a rollout of a group they judge blind is named by its
    lane label, any other by its index. Their open blind assignments are read when first
    asked (one query), so a search that finds nothing costs none; a rollout added to such a
    group after it was handed out costs one more (the group's indexes)."""
    orders: dict[int, list] | None = None
    labels: dict[int, dict[int, str]] = {}

    def lane_of(rollout: Rollout) -> str:
        nonlocal orders
        if orders is None:
            orders = {}
            if getattr(user, "is_authenticated", False):
                # Open and blind, revealed early or not: lane labels hold until the judge
                # submits (lanes_for), unlike the grader's fields (AssignmentQuerySet.open_blind).
                orders = {
                    g: list(order)
                    for g, order in Assignment.objects.filter(
                        reviewer=user,
                        group__run__project=project,
                        blind=True,
                        status=Assignment.Status.OPEN,
                    ).values_list("group_id", "order")
                    if order
                }
        order = orders.get(rollout.group_id)
        if order is None:
            return str(rollout.index)
        group_labels = labels.get(rollout.group_id) or labels_from_order(order, order)
        if rollout.index not in group_labels:
            group_labels = labels_from_order(
                order, Rollout.objects.filter(group_id=rollout.group_id).values_list("index", flat=True)
            )
        labels[rollout.group_id] = group_labels
        return group_labels.get(rollout.index, "?")

    return lane_of


def shuffled_order(group: Group) -> list[int]:
    """A blind judge's order of the group's rollouts: passing first, then unknown, then
    failing, each shuffled, so the page's lanes (passing first) read A, B, C... in this order
    (labels_from_order)."""
    rollouts = list(group.rollouts.order_by("index").values_list("index", "passed"))
    shuffle = random.SystemRandom().shuffle
    order = []
    for outcome in (True, None, False):
        batch = [index for index, passed in rollouts if passed is outcome]
        shuffle(batch)
        order += batch
    return order
