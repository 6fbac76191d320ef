"""reviews.models: the one definition of an open blind assignment, read as a queryset and as a row."""

from __future__ import annotations

import itertools

import pytest

from grading.models import Group, Role
from reviews.models import Assignment
from tests.helpers.groups import small_group
from tests.helpers.ingest import ingest_groups
from tests.helpers.people import member

pytestmark = pytest.mark.django_db


def test_open_blind_queryset_and_property_pick_the_same_assignments(acme):
    """Every mix of status, blind and early reveal, one reviewer each on one group: the rows
    AssignmentQuerySet.open_blind returns are exactly those whose is_open_blind holds, and
    that is only the open, blind one nobody revealed early."""
    ingest_groups(acme, small_group("g1@1"))
    group = Group.objects.get(uid="g1@1")
    combos = list(itertools.product(Assignment.Status.values, (True, False), (True, False)))
    for n, (status, blind, revealed_early) in enumerate(combos):
        Assignment.objects.create(
            group=group, reviewer=member(f"r{n}", acme, Role.REVIEWER), status=status, blind=blind, revealed_early=revealed_early
        )
    rows = list(Assignment.objects.all())
    assert len(rows) == len(combos)
    assert {a.pk for a in Assignment.objects.open_blind()} == {a.pk for a in rows if a.is_open_blind}
    assert [(a.status, a.blind, a.revealed_early) for a in Assignment.objects.open_blind()] == [("open", True, False)]
