"""A project's own LLM graders: a named configuration of the LLM grader — model,
the environment variables that hold its endpoint and key (never the secrets themselves),
budgets and the rubric guide it grades with — stored as versions of a Grader
(grading.models.graders). Each change is a new version (``<name>@<n>``); the same
configuration again is the version it already is. A defined grader grades wherever a
built-in backend does (a step's grading, a campaign, a jury's member) under its version's
name, with the guide it was defined with: editing the project's guide afterwards changes
nothing it grades until it is defined again, which makes a new version.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from grading.grader.llm import DEFAULT_MAX_TOKENS, DEFAULT_MAX_TURNS, TOOL_MODES, request_problems
from grading.grader.llm import VERSION as LLM_VERSION
from grading.grader.tools import TOOLS
from grading.method.guide import DEFAULT_GUIDE, Guide, guide_from_json, guide_json, guide_version
from grading.method.project_guides import guide_for
from grading.models import Grader, GraderVersion, Project
from grading.registry.versions import RESERVED_PREFIXES, fingerprint, is_reserved

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,59}")
ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,99}")
MAX_MODEL = 200
BUDGETS: dict[str, tuple[int, int, int]] = {  # name: (minimum, maximum, default)
    "max_turns": (2, 200, DEFAULT_MAX_TURNS),
    "max_tokens": (1_000, 10_000_000, DEFAULT_MAX_TOKENS),
    "request_timeout_s": (1, 3_600, 120),
}


class DefinitionError(ValueError):
    """A refused grader definition; `field` names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Definition:
    name: str
    model: str
    endpoint_env: str
    api_key_env: str
    budgets: dict[str, int]
    description: str
    tool_mode: str = "tools"
    request: dict[str, Any] | None = None

    @property
    def protocol(self) -> dict[str, Any]:
        """How the grader talks to its server, as GraderVersion.config holds it: only what differs
        from the default (native tool calls, no added request fields), so a version defined before
        these existed keeps its fingerprint."""
        return {
            **({"tool_mode": self.tool_mode} if self.tool_mode != "tools" else {}),
            **({"request": self.request} if self.request else {}),
        }


def check_definition(data: Any) -> Definition:
    if not isinstance(data, dict):
        raise DefinitionError("body", "a grader definition is a JSON object")
    known = {"name", "backend", "model", "endpoint_env", "api_key_env", "budgets", "description", "tool_mode", "request"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise DefinitionError(unknown[0], f"unknown field {unknown[0]!r}")
    name = data.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise DefinitionError("name", "name must be 1 to 60 letters, digits, '.', '_' or '-', starting with a letter or digit")
    if is_reserved(name):
        raise DefinitionError("name", f"{name!r} is, or looks like, a built-in grader's or a jury's name")
    if data.get("backend", "llm") != "llm":
        raise DefinitionError("backend", "a project defines LLM graders (backend 'llm'); other graders post their verdicts")
    model = data.get("model")
    if not isinstance(model, str) or not model.strip() or len(model) > MAX_MODEL or not model.isprintable():
        raise DefinitionError("model", f"model must be the model's name, 1 to {MAX_MODEL} printable characters")
    envs = {}
    for field in ("endpoint_env", "api_key_env"):
        value = data.get(field, "" if field == "api_key_env" else None)
        if not isinstance(value, str) or ((value or field == "endpoint_env") and not ENV_NAME.fullmatch(value)):
            raise DefinitionError(
                field,
                f"{field} must name an environment variable (A-Z, 0-9, _), not hold its value: the secret stays on the workers",
            )
        envs[field] = value
    refused = refused_variables(envs["endpoint_env"], envs["api_key_env"])
    if refused is not None:
        raise DefinitionError(*refused)
    given = data.get("budgets", {})
    if not isinstance(given, dict) or set(given) - set(BUDGETS):
        raise DefinitionError("budgets", f"budgets may set {', '.join(BUDGETS)}")
    budgets = {}
    for key, (low, high, default) in BUDGETS.items():
        value = given.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise DefinitionError(f"budgets.{key}", f"budgets.{key} must be a whole number from {low:,} to {high:,}")
        budgets[key] = value
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > 2_000 or "\x00" in description:
        raise DefinitionError("description", "description must be text of at most 2,000 characters")
    tool_mode = data.get("tool_mode", "tools")
    if tool_mode not in TOOL_MODES:
        raise DefinitionError(
            "tool_mode",
            "tool_mode must be 'tools' (the server's native tool calls) or 'json' (one JSON object per reply, "
            "constrained by a schema: servers or models without tool calling)",
        )
    request = data.get("request", {})
    request_refused = request_problems(request)
    if request_refused:
        raise DefinitionError("request", "; ".join(request_refused))
    return Definition(
        name, model.strip(), envs["endpoint_env"], envs["api_key_env"], budgets, description, tool_mode, request or None
    )


@transaction.atomic
def define_grader(*, project: Project, data: Any, user=None) -> tuple[GraderVersion, bool]:
    """Define, or change, the project's LLM grader `data["name"]` with the project's current
    rubric guide. Returns (version, created): a new version for a new configuration, the
    existing one for a configuration it already has."""
    spec = check_definition(data)
    grader, _ = Grader.objects.select_for_update().get_or_create(
        project=project, name=spec.name, defaults={"backend": Grader.Backend.LLM, "description": spec.description}
    )
    if grader.backend != Grader.Backend.LLM:
        raise DefinitionError("name", f"{spec.name!r} is the project's {grader.backend} grader")
    guide = guide_for(project)
    edited = guide_version(guide)
    config = {
        "model": spec.model,
        "endpoint_env": spec.endpoint_env,
        "api_key_env": spec.api_key_env,
        "prompt_version": LLM_VERSION,
        "guide_version": edited,
        "budgets": spec.budgets,
        **spec.protocol,
    }
    key = fingerprint(config)
    existing = GraderVersion.objects.filter(grader=grader, fingerprint=key).first()
    if existing is not None:
        return existing, False
    if spec.description and spec.description != grader.description:
        grader.description = spec.description
        grader.save(update_fields=["description"])
    number = GraderVersion.objects.filter(grader=grader).count() + 1
    version = GraderVersion.objects.create(
        grader=grader,
        project=project,
        version=str(number),
        name=f"{spec.name}@{number}",
        model=spec.model,
        endpoint_env=spec.endpoint_env,
        api_key_env=spec.api_key_env,
        prompt_version=LLM_VERSION,
        guide_version=edited,
        guide={} if guide == DEFAULT_GUIDE else dict(zip(("tiers", "dimensions"), guide_json(guide), strict=True)),
        tools=sorted(TOOLS),
        budgets=spec.budgets,
        config=spec.protocol,
        fingerprint=key,
        created_by=user,
    )
    return version, True


def defined_version(project_id: int | None, name: str) -> GraderVersion | None:
    """The project's defined LLM grader version called `name` (e.g. "gpt-b@2"), if there is one."""
    if project_id is None or "@" not in name or name.startswith(RESERVED_PREFIXES):
        return None
    return _defined_versions(project_id).filter(name=name).first()


def newest_defined(project_id: int, value: str) -> GraderVersion | None:
    """The defined grader version `value` names: "gpt-b@2" that version, "gpt-b" its newest."""
    if "@" in value:
        return defined_version(project_id, value)
    return _defined_versions(project_id).filter(grader__name=value).order_by("-created_at", "-pk").first()


def newest_defined_versions(project_id: int) -> list[GraderVersion]:
    """Each of the project's defined LLM graders at its newest version, by name (one query)."""
    newest: dict[int, GraderVersion] = {}
    for version in _defined_versions(project_id).select_related("grader").order_by("grader__name", "-created_at", "-pk"):
        newest.setdefault(version.grader_id, version)
    return list(newest.values())


def defined_names(project_id: int, names: list[str]) -> list[str]:
    """Those of `names` that are the project's defined LLM graders (one query)."""
    return sorted(_defined_versions(project_id).filter(name__in=names).values_list("name", flat=True))


def _defined_versions(project_id: int):
    """The versions of the project's defined LLM graders (Grader.is_defined, as a query): LLM
    graders not named as the built-in one's (llm:<model>)."""
    return GraderVersion.objects.filter(project_id=project_id, grader__backend=Grader.Backend.LLM).exclude(
        grader__name__startswith="llm:"
    )


def version_protocol(version: GraderVersion) -> tuple[str, dict[str, Any]]:
    """(tool_mode, request fields) the version talks to its server with."""
    return version.config.get("tool_mode", "tools"), dict(version.config.get("request") or {})


def version_guide(version: GraderVersion) -> Guide:
    """The rubric guide the version grades with (the one the project had when it was defined)."""
    if not version.guide:
        return DEFAULT_GUIDE
    return guide_from_json(version.guide.get("tiers"), version.guide.get("dimensions"))


def refused_variables(endpoint_env: str, api_key_env: str) -> tuple[str, str] | None:
    """(field, why) when the operator does not allow these variables for a grader, else None.

    Only the pairs of settings.GRADER_ENDPOINT_ENVS may be named: any other name would let a
    project admin have the server read out its own secrets (DJANGO_SECRET_KEY as the endpoint
    shows in an error; as the key it is sent to any endpoint). The answer names variables only."""
    allowed: dict[str, str] = settings.GRADER_ENDPOINT_ENVS
    if endpoint_env not in allowed:
        choices = ", ".join(sorted(allowed)) or "none are configured"
        return (
            "endpoint_env",
            f"endpoint_env must be one of the variables the operator allows for graders (GRADER_ENDPOINT_ENVS): {choices}",
        )
    if api_key_env and api_key_env != allowed[endpoint_env]:
        paired = allowed[endpoint_env]
        choice = f"empty or {paired}" if paired else "empty"
        return (
            "api_key_env",
            f"api_key_env must be {choice}: the operator pairs {endpoint_env} with that key only (GRADER_ENDPOINT_ENVS)",
        )
    return None


def endpoint_of(version: GraderVersion) -> tuple[str, str]:
    """(base URL, API key) from the worker's environment; ValueError naming the variable when it
    is unset or no longer one the operator allows (a version defined before the allowlist, or
    after the operator took a pair away). Never a value in the message."""
    refused = refused_variables(version.endpoint_env, version.api_key_env)
    if refused is not None:
        raise ValueError(f"grader {version.name} cannot grade here: {refused[1]}")
    base_url = os.environ.get(version.endpoint_env, "")
    if not base_url:
        raise ValueError(f"grader {version.name} reads its endpoint from ${version.endpoint_env}, which is not set here")
    return base_url, (os.environ.get(version.api_key_env, "") if version.api_key_env else "")
