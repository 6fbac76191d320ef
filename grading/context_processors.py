"""What every template may name: the capability type, so a template asks
`{% if Capability.REVIEW in caps %}` and never spells a capability's string."""

from __future__ import annotations

from django.http import HttpRequest

from grading.models import Capability


def capabilities(request: HttpRequest) -> dict[str, type[Capability]]:
    return {"Capability": Capability}
