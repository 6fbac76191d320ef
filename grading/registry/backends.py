"""Which grader a name runs as in a project: the built-in backends (heuristic, llm) and the
project's defined graders (grading.registry.defined), named without building them
(grader_name: pages and ingest ask cheaply) or built from the worker's environment
(grader_for), with the refusal of a grader endpoint on a non-public address."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlparse

from django.conf import settings

from grading.grader.heuristic import HeuristicGrader
from grading.grader.llm import DEFAULT_MAX_TOKENS as LLM_DEFAULT_TOKENS
from grading.grader.llm import DEFAULT_MAX_TURNS as LLM_DEFAULT_TURNS
from grading.grader.llm import LLMGrader
from grading.method.project_guides import guide_for
from grading.registry.defined import defined_version, endpoint_of, version_guide, version_protocol

BACKENDS = ("heuristic", "llm")


class GraderUnavailable(RuntimeError):
    """The chosen backend cannot run here (not configured, or a refused address)."""


def check_grader_url(url: str, variable: str = "GRADER_BASE_URL") -> None:
    """Refuse loopback, link-local and private targets unless settings allow them (SSRF).

    `url` is the value of the environment variable `variable`; messages name the variable,
    never the value or a part of it (a key put where the URL goes must not show in an answer)."""
    parsed = urlparse(url)
    try:
        hostname = parsed.hostname
    except ValueError:
        hostname = None
    if parsed.scheme not in {"http", "https"} or not hostname:
        raise GraderUnavailable(f"${variable} is not an http(s) URL (its value is never shown)")
    if settings.GRADER_ALLOW_PRIVATE_NETWORK:
        return
    try:
        addresses = {str(info[4][0]) for info in socket.getaddrinfo(hostname, parsed.port or 443)}
    except (socket.gaierror, UnicodeError, ValueError):
        raise GraderUnavailable(f"cannot resolve the host in ${variable}") from None
    for address in addresses:
        ip = ipaddress.ip_address(address.split("%")[0])
        # not is_global also covers what is neither private nor public, e.g. carrier-grade NAT 100.64.0.0/10
        if (
            ip.is_loopback
            or ip.is_link_local
            or ip.is_private
            or ip.is_reserved
            or ip.is_multicast
            or ip.is_unspecified
            or not ip.is_global
        ):
            raise GraderUnavailable(
                f"the host in ${variable} resolves to a non-public address; "
                "set GRADER_ALLOW_PRIVATE_NETWORK=true to allow a local model server"
            )


def grader_name(backend: str, project_id: int | None = None) -> str:
    """The name `backend` grades under in the project (e.g. heuristic@1, or llm:<model>@1.g<guide>
    when the project edited its rubric guide), without building it: no DNS lookup of the
    grader's host and no client, so pages and ingest can ask it cheaply (the LLM grader's name
    reads the project's guide: one query). Raises GraderUnavailable when the backend is
    unknown or not configured."""
    if backend == "heuristic":
        return HeuristicGrader.name
    if backend == "llm":
        if not (settings.GRADER_BASE_URL and settings.GRADER_MODEL):
            raise GraderUnavailable("the LLM grader needs GRADER_BASE_URL and GRADER_MODEL")
        return LLMGrader.name_for(
            settings.GRADER_MODEL, guide_for(project_id), max_turns=settings.GRADER_MAX_TURNS, tool_mode=settings.GRADER_TOOL_MODE
        )
    if defined_version(project_id, backend) is not None:
        return backend
    raise GraderUnavailable(_unknown(backend))


def _unknown(backend: str) -> str:
    choices = ", ".join(BACKENDS)
    return f"unknown grader {backend[:100]!r}; choose one of {choices} or one of the project's defined graders (name@version)"


def grader_for(backend: str, project_id: int | None = None):
    """The grader `backend` names: a built-in backend, or a version of one of the project's
    defined LLM graders (grading.registry.defined), built from the worker's environment."""
    if backend == "heuristic":
        return HeuristicGrader()
    if backend == "llm":
        if not (settings.GRADER_BASE_URL and settings.GRADER_MODEL):
            raise GraderUnavailable("the LLM grader needs GRADER_BASE_URL and GRADER_MODEL")
        check_grader_url(settings.GRADER_BASE_URL)
        return LLMGrader(
            base_url=settings.GRADER_BASE_URL,
            model=settings.GRADER_MODEL,
            api_key=settings.GRADER_API_KEY or "none",
            max_turns=settings.GRADER_MAX_TURNS,
            request_timeout=settings.GRADER_REQUEST_TIMEOUT,
            tool_mode=settings.GRADER_TOOL_MODE,
        )
    version = defined_version(project_id, backend)
    if version is None:
        raise GraderUnavailable(_unknown(backend))
    try:
        base_url, api_key = endpoint_of(version)
    except ValueError as exc:
        raise GraderUnavailable(str(exc)) from None
    check_grader_url(base_url, version.endpoint_env)
    tool_mode, request = version_protocol(version)
    grader = LLMGrader(
        base_url=base_url,
        model=version.model,
        api_key=api_key or "none",
        max_turns=version.budgets.get("max_turns", LLM_DEFAULT_TURNS),
        max_tokens_budget=version.budgets.get("max_tokens", LLM_DEFAULT_TOKENS),
        request_timeout=version.budgets.get("request_timeout_s", settings.GRADER_REQUEST_TIMEOUT),
        tool_mode=tool_mode,
        request=request,
    )
    grader.name = version.name
    grader.fixed_guide = version_guide(version)
    return grader
