"""Characters a reader cannot see but a compiler or a model can: bidi controls (the
"Trojan Source" trick), zero-width characters, BOMs, soft hyphens. Pure.

The page shows each one as a visible marker and flags the rollout, so a patch or a turn
cannot read differently to a reviewer than to a machine.

>>> find_invisible("ok")
[]
>>> find_invisible("a\\u202eb\\u200b")
['U+202E RIGHT-TO-LEFT OVERRIDE', 'U+200B ZERO WIDTH SPACE']
>>> mark_invisible("x &lt; y\\u2066", lambda ch: f"[{ord(ch):04X}]")
'x &lt; y[2066]'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

INVISIBLE = re.compile(
    "[\u00ad\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0]"
)


def describe(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, 'UNNAMED')}"


def find_invisible(text: str) -> list[str]:
    """Each distinct invisible character of `text`, described, in order of first appearance."""
    seen: dict[str, None] = {}
    for match in INVISIBLE.finditer(text or ""):
        seen.setdefault(describe(match.group()), None)
    return list(seen)


def mark_invisible(escaped: str, marker: Callable[[str], str]) -> str:
    """Replace each invisible character of already-escaped text with `marker(ch)`."""
    return INVISIBLE.sub(lambda m: marker(m.group()), escaped)
