"""A project's graders and their versions (services): the built-in graders are registered as
they grade (heuristic@1, llm:<model>@<protocol>[.g<guide>]), a team's external grader when it
first posts a verdict (grading.grader.external). A version is immutable; its name is what
Verdict.grader holds, "<grader>@<version>"."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import IntegrityError, transaction

from grading.models import Grader, GraderVersion

MAX_GRADER_NAME = 100
# What the rows hold: Grader.name the label before '@', GraderVersion.version the part after.
MAX_LABEL: int = Grader._meta.get_field("name").max_length or 0
MAX_VERSION: int = GraderVersion._meta.get_field("version").max_length or 0
RESERVED_PREFIXES = ("llm:", "jury:")
RESERVED_NAMES = ("heuristic",)


class GraderNameError(ValueError):
    """A grader name that is not "<grader>@<version>", or names a grader of another backend."""


def split_name(name: object) -> tuple[str, str]:
    """("acme-fleet", "3") from "acme-fleet@3"; GraderNameError when it is not of that shape."""
    if not isinstance(name, str) or not 3 <= len(name) <= MAX_GRADER_NAME:
        raise GraderNameError(f"grader must be a string 'name@version' of at most {MAX_GRADER_NAME} characters")
    grader, sep, version = name.rpartition("@")
    if not sep or not grader or not version or any(c.isspace() or not c.isprintable() for c in name):
        raise GraderNameError(f"grader must be 'name@version' without spaces, got {name[:MAX_GRADER_NAME]!r}")
    if len(grader) > MAX_LABEL or len(version) > MAX_VERSION:
        raise GraderNameError(
            f"grader's name before '@' is at most {MAX_LABEL} characters and its version at most {MAX_VERSION}, "
            f"got {len(grader)} and {len(version)}"
        )
    return grader, version


def fingerprint(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def ensure_version(*, project_id: int, name: str, backend: str, **config: Any) -> GraderVersion:
    """The version `name` of the project's grader, registered now if it is new (its grader too).
    Refuses (GraderNameError) a name whose grader has another backend."""
    grader_label, version = split_name(name)
    found = GraderVersion.objects.filter(project_id=project_id, name=name).select_related("grader").first()
    if found is not None:
        if found.grader.backend != backend:
            raise GraderNameError(f"{name!r} is a version of the {found.grader.backend} grader {grader_label!r}")
        return found
    fields = {k: v for k, v in config.items() if k in {f.name for f in GraderVersion._meta.get_fields()}}
    try:
        with transaction.atomic():
            grader, _ = Grader.objects.get_or_create(project_id=project_id, name=grader_label, defaults={"backend": backend})
            if grader.backend != backend:
                raise GraderNameError(f"{grader_label!r} is the project's {grader.backend} grader, not an {backend} one")
            return GraderVersion.objects.create(
                grader=grader,
                project_id=project_id,
                version=version,
                name=name,
                fingerprint=fingerprint({"name": name, **config}),
                **fields,
            )
    except IntegrityError:  # a concurrent registration won
        return GraderVersion.objects.get(project_id=project_id, name=name)


def check_external_name(name: object) -> tuple[str, str]:
    """An external grader's name: "<grader>@<version>", not one the built-in graders or juries use."""
    grader, version = split_name(name)
    if grader in RESERVED_NAMES or grader.startswith(RESERVED_PREFIXES):
        raise GraderNameError(f"{grader!r} is a built-in grader's or a jury's name; an external grader needs its own")
    return grader, version
