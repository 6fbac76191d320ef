"""A run's factor mappings, read: the default, the active one, one named by id or name@version."""

from __future__ import annotations

import logging

from grading.formats import params
from grading.models import (
    FactorMapping,
    Run,
)

logger = logging.getLogger(__name__)


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
