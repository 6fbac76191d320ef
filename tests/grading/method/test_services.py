"""create_mapping's race path: two admins ask for the next version of a name at once.

The second insert hits the (name, version) unique constraint in the database; the service
must retry with the next version, not fail (it once raised NameError there: IntegrityError
was caught without being imported)."""

import pytest
from django.db.models import Max

from grading.method.services import activation as services
from grading.models import FactorMapping

pytestmark = pytest.mark.django_db

BANDS = {"T1": [1.0, 1.0], "T2": [0.8, 0.7], "T3": [0.5, 0.5]}


def test_a_version_taken_meanwhile_is_retried_with_the_next_one(acme, alice, monkeypatch):
    services.create_mapping(project=acme, name="team", bands=BANDS, user=alice)  # team@1
    reads = []

    def stale_then_fresh(field):
        # The first read is the one made before the other admin's commit: it sees one version fewer.
        reads.append(field)
        return Max(field) - 1 if len(reads) == 1 else Max(field)

    monkeypatch.setattr(services, "Max", stale_then_fresh)
    mapping = services.create_mapping(project=acme, name="team", bands=BANDS, user=alice)

    assert len(reads) == 2  # the unique constraint refused team@1 again, and the retry read afresh
    assert (mapping.name, mapping.version) == ("team", 2)
    assert sorted(FactorMapping.objects.filter(name="team").values_list("version", flat=True)) == [1, 2]


def test_gives_up_after_three_collisions(acme, alice, monkeypatch):
    services.create_mapping(project=acme, name="team", bands=BANDS, user=alice)
    monkeypatch.setattr(services, "Max", lambda field: Max(field) - 1)  # always one behind
    from django.db import IntegrityError

    with pytest.raises(IntegrityError):
        services.create_mapping(project=acme, name="team", bands=BANDS, user=alice)
    assert FactorMapping.objects.filter(name="team").count() == 1
