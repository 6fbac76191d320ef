"""Template helpers shared by the group page and the evidence links that point into it."""

from __future__ import annotations

import hashlib

from django import template

register = template.Library()


def path_key(path: str) -> str:
    """A short stable id fragment for a file path (paths may hold any character)."""
    return hashlib.sha1(path.encode()).hexdigest()[:10]


def patch_anchor(index: int, path: str, line: int) -> str:
    return f"p{index}-{path_key(path)}-{line}"


register.filter("path_key", path_key)
