"""A project's policy for the grader's checks: read (off where it has set none), edited by its
admins, and turned into the budget one grading conversation runs under.

Checks run only in a sandbox (grading.repos.sandbox), chosen by GAGAR_SANDBOX; a project that
turns checks on where no sandbox can run gets no run_check tool, and the step says why.
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

from django.conf import settings
from django.db import transaction

from grading.grader.workspace import CheckBudget
from grading.models import CheckPolicy, Project
from grading.repos.sandbox import sandbox_from
from grading.repos.types import Limits, RepoError, Sandbox, SandboxUnavailable

log = logging.getLogger(__name__)

MAX_CHECKS = 64
MAX_SECONDS = 3_600
MIN_MEMORY_MB = 64


def memory_ceiling_mb() -> int:
    """The most a project may give each process of a check: the operator's GAGAR_CHECK_MEMORY_MB_MAX."""
    return int(getattr(settings, "GAGAR_CHECK_MEMORY_MB_MAX", 4096))


@dataclass(frozen=True)
class CheckSettings:
    enabled: bool = False
    max_checks: int = 8
    seconds: int = 60
    memory_mb: int = 2048

    def limits(self) -> Limits:
        return Limits(wall_s=float(self.seconds), cpu_s=self.seconds, memory_bytes=self.memory_mb * 1024 * 1024)


class CheckPolicyError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def check_settings_for(project: Project | int) -> CheckSettings:
    """The project's check policy; checks off where it has none. One query."""
    project_id = project if isinstance(project, int) else project.pk
    row = CheckPolicy.objects.filter(project_id=project_id).values_list("enabled", "max_checks", "seconds", "memory_mb").first()
    return CheckSettings() if row is None else CheckSettings(*row)


def _whole(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise CheckPolicyError(field, f"{field} must be a whole number from {low} to {high}")
    return value


@transaction.atomic
def save_check_policy(*, project: Project, user, enabled: bool, max_checks: int, seconds: int, memory_mb: int) -> CheckPolicy:
    """Store the project's check policy (CheckPolicyError, naming the field, for a value out of range)."""
    values = {
        "enabled": bool(enabled),
        "max_checks": _whole("max_checks", max_checks, 1, MAX_CHECKS),
        "seconds": _whole("seconds", seconds, 1, MAX_SECONDS),
        "memory_mb": _whole("memory_mb", memory_mb, MIN_MEMORY_MB, memory_ceiling_mb()),
    }
    if values["enabled"]:
        problem = sandbox_problem()
        if problem:
            raise CheckPolicyError("enabled", f"checks cannot run here: {problem}")
    row, _ = CheckPolicy.objects.update_or_create(project=project, defaults={**values, "updated_by": user})
    return row


SANDBOX_SETTINGS = ("GAGAR_SANDBOX", "GAGAR_SANDBOX_UID", "GAGAR_SWEREX_URL", "GAGAR_SWEREX_TOKEN", "GAGAR_REPO_CACHE")


def _sandbox_values() -> tuple[str, ...]:
    """The settings a sandbox is built from, in SANDBOX_SETTINGS' order, then MEDIA_ROOT (every
    project's uploads, which a check must not see, like the repository cache)."""
    return (*(str(getattr(settings, name, "") or "") for name in SANDBOX_SETTINGS), str(settings.MEDIA_ROOT or ""))


def configured_sandbox() -> Sandbox:
    """The sandbox GAGAR_SANDBOX names, checked to run here (SandboxUnavailable, a RepoError, when not)."""
    sandbox = _sandbox(_sandbox_values())
    if sandbox is None:
        raise SandboxUnavailable("GAGAR_SANDBOX=none: this server runs no checks")
    sandbox.available()  # a cheap probe, cached per sandbox uid
    return sandbox


@cache
def _sandbox(values: tuple[str, ...]) -> Sandbox | None:
    try:
        return sandbox_from(dict(zip((*SANDBOX_SETTINGS, "GAGAR_MEDIA_ROOT"), values, strict=True)))
    except ValueError as exc:  # a setting it cannot run with (swe-rex without its URL, a bad uid range)
        raise SandboxUnavailable(str(exc)) from None


def sandbox_problem() -> str:
    """Why no check can run here ("" when one can)."""
    try:
        configured_sandbox()
    except RepoError as exc:
        return str(exc)
    return ""


def check_budget_for(project_id: int, *, deadline: float | None) -> CheckBudget | None:
    """What one grading conversation on the project may run, or None when checks are off or no
    sandbox can run here (logged: the project asked for checks it cannot get)."""
    policy = check_settings_for(project_id)
    if not policy.enabled:
        return None
    try:
        sandbox = configured_sandbox()
    except RepoError as exc:
        log.warning("project %s has checks on, but no sandbox can run: %s", project_id, exc)
        return None
    # a policy stored under a higher ceiling (or before there was one) runs at today's
    policy = replace(policy, memory_mb=min(policy.memory_mb, memory_ceiling_mb()))
    return CheckBudget(
        sandbox=sandbox,
        limits=policy.limits(),
        max_checks=policy.max_checks,
        deadline=deadline,
        project=project_id,
        project_slots=settings.GAGAR_CHECKS_PER_PROJECT,
        lock_dir=Path(tempfile.gettempdir()) / f"gagar-checks-{os.geteuid()}",
    )
