"""Template helpers shared by the group page and the evidence links that point into it."""

from __future__ import annotations

import hashlib

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

from grading.rollouts.invisible import describe, mark_invisible

register = template.Library()


def path_key(path: str) -> str:
    """A short stable id fragment for a file path (paths may hold any character)."""
    return hashlib.sha1(path.encode()).hexdigest()[:10]


def patch_anchor(index: int | str, path: str, line: int) -> str:
    return f"p{index}-{path_key(path)}-{line}"


register.filter("path_key", path_key)


def _marker(ch: str) -> str:
    return f'<span class="invisible-char" title="{describe(ch)}">⟨U+{ord(ch):04X}⟩</span>'


@register.filter(needs_autoescape=True)
def visible(text, autoescape=True):
    """Escape untrusted text, then show bidi controls and zero-width characters as visible
    ⟨U+…⟩ markers. Safe to mark safe: the text is escaped before any marker goes in, and the
    markers hold only a code point and its Unicode name."""
    escaped = conditional_escape(text) if autoescape else str(text)
    return mark_safe(mark_invisible(str(escaped), _marker))  # noqa: S308


def visible_html(html: str) -> str:
    """The same markers inside HTML that is already escaped (pygments' output)."""
    return mark_invisible(html, _marker)
