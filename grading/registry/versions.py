"""A project's graders and their versions: the built-in graders are registered as
they grade (heuristic@1, llm:<model>@<protocol>[.g<guide>]), a team's external grader when it
first posts a verdict (grading.verdicts.external). A version is immutable; its name is what
Verdict.grader holds, "<grader>@<version>"."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

from django.db import IntegrityError, transaction

from grading.models import Grader, GraderVersion

MAX_GRADER_NAME = 100
# What the rows hold: Grader.name the label before '@', GraderVersion.version the part after.
MAX_LABEL: int = Grader._meta.get_field("name").max_length or 0
MAX_VERSION: int = GraderVersion._meta.get_field("version").max_length or 0
RESERVED_PREFIXES = ("llm:", "jury:")
RESERVED_NAMES = ("heuristic",)
# An external grader's name and version: ASCII, so no letter of another script passes for one
# of a built-in's (a Cyrillic "е" in "hеuristic").
EXTERNAL_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
EXTERNAL_VERSION = re.compile(r"[A-Za-z0-9._-]+")


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


def is_reserved(label: str) -> bool:
    """Whether a grader's `label` (the part before '@') is, or passes for, a built-in grader's
    or a jury's: compared after NFKC and casefolding, so "Heuristic", "ｈｅｕｒｉｓｔｉｃ",
    "heuristic-v2" and "JURY:x" all are. Names a team chooses (external and defined graders)
    may not be."""
    folded = unicodedata.normalize("NFKC", label).casefold()
    return folded.startswith(RESERVED_NAMES + RESERVED_PREFIXES)


def check_external_name(name: object) -> tuple[str, str]:
    """An external grader's name: "<grader>@<version>" in ASCII letters, digits, '.', '_' and
    '-', not one the built-in graders or juries use (is_reserved)."""
    grader, version = split_name(name)
    if is_reserved(grader):
        raise GraderNameError(
            f"{grader!r} is, or looks like, a built-in grader's or a jury's name; an external grader needs its own"
        )
    if not EXTERNAL_LABEL.fullmatch(grader) or not EXTERNAL_VERSION.fullmatch(version):
        raise GraderNameError(
            "an external grader's name is 'name@version' in ASCII letters, digits, '.', '_' and '-' "
            f"(the name starting with a letter or digit), got {name!r}"
        )
    return grader, version
