"""What a trainer takes: a step's export at an inputs version, kept byte for byte (services).

`take_step` computes the step if needed, and stores the bytes served for its inputs
version the first time they are asked for; `taken_step` gives them back later, so a
trainer (or anyone auditing a training run) can fetch exactly the rows a policy update
used, even after a late verdict changed the current numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import IntegrityError, transaction

from grading.method import export
from grading.method.services import refresh_stale_step
from grading.models import FactorMapping, Step, StepExport


@dataclass(frozen=True)
class Taken:
    body: bytes
    inputs_version: int
    first_served_final: bool


def take_step(*, step: Step, mapping: FactorMapping, fmt: str, final: bool, turn_weights: bool = False) -> Taken:
    """The step's current rows under `mapping` in `fmt` (with the turn_weights column when
    asked), stored under their inputs version."""
    computation = refresh_stale_step(step=step, mapping=mapping)
    version = computation.inputs_version
    kind = {"step": step, "mapping": mapping, "inputs_version": version, "format": fmt, "turn_weights": turn_weights}
    stored = StepExport.objects.filter(**kind).first()
    if stored is not None:
        return Taken(bytes(stored.body), version, stored.final)
    body = export.step_bytes(step, mapping, fmt, turn_weights=turn_weights)
    try:
        with transaction.atomic():
            StepExport.objects.create(**kind, final=final, body=body)
    except IntegrityError:  # another request stored this version first: serve what it stored
        stored = StepExport.objects.get(**kind)
        return Taken(bytes(stored.body), version, stored.final)
    return Taken(body, version, final)


def taken_step(*, step: Step, mapping: FactorMapping, fmt: str, inputs_version: int, turn_weights: bool = False) -> Taken | None:
    """The bytes served earlier for this inputs version, or None if that version was never served."""
    stored = StepExport.objects.filter(
        step=step, mapping=mapping, inputs_version=inputs_version, format=fmt, turn_weights=turn_weights
    ).first()
    return Taken(bytes(stored.body), inputs_version, stored.final) if stored else None
