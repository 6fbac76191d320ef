"""Which of a project's benchmarks hold history past the base commit in their images.

On SWE-bench the checkout stops at the task's base commit, so `git log --all` or `git show` of a
newer commit reads the answer: a leak (docs/scanners.md, categories 1 and 2). On commit0-style
benchmarks the images hold the repository's later history by design, and reading it is how the
task is meant to be done. A project names such benchmarks by instance-id prefix
(Project.future_history_prefixes, e.g. "commit0__"); the scanners then keep only the leaks that
reach past the image (remote fetches, the network).
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction

from grading.models import Project

MAX_PREFIXES = 50
PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]{0,99}")


class PrefixesRefused(ValueError):
    """A refused list of prefixes; `field` names what was wrong."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def check_prefixes(value: Any) -> list[str]:
    """The prefixes of `{"prefixes": [...]}`'s list, checked: at most MAX_PREFIXES, each 1 to 100
    letters, digits, `_ . - /`, starting with a letter or digit; duplicates dropped, order kept."""
    if not isinstance(value, list) or len(value) > MAX_PREFIXES:
        raise PrefixesRefused("prefixes", f"prefixes must be a list of at most {MAX_PREFIXES} instance-id prefixes")
    for n, prefix in enumerate(value):
        if not isinstance(prefix, str) or not PREFIX.fullmatch(prefix):
            raise PrefixesRefused(
                f"prefixes[{n}]", "a prefix is 1 to 100 letters, digits, '_', '.', '-' or '/', starting with a letter or digit"
            )
    return list(dict.fromkeys(value))


@transaction.atomic
def set_future_history(*, project: Project, prefixes: Any) -> list[str]:
    """Store the project's prefixes (replacing them); PrefixesRefused naming the field otherwise.
    Groups scanned already keep their findings: an auditor overturns those that were no leak."""
    checked = check_prefixes(prefixes)
    Project.objects.filter(pk=project.pk).update(future_history_prefixes=checked)
    project.future_history_prefixes = checked
    return checked


def holds_future_history(project: Project, instance_id: str) -> bool:
    """Whether the project says the task's benchmark images hold history past the base (no query:
    callers load the project with the group)."""
    return any(isinstance(p, str) and instance_id.startswith(p) for p in project.future_history_prefixes or [])
