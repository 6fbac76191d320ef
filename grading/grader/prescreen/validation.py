"""Scanners checked against labeled rollouts: the arithmetic, and the Wilson interval it uses.

Pure: no Django. A person labels a rollout, for one category of the catalogue, a cheat or
honest (in the cheat audit, or by upload); each scanner version is then counted against those
labels (`figures`): flagged and labeled cheat is a true positive, flagged and labeled honest a
false one, a labeled cheat the version read and did not flag a miss. Precision and recall come
with their Wilson 95 % intervals (`wilson`), which stay honest on the few dozen labels a
category has.

>>> wilson(9, 10)
(0.596, 0.982)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from grading.grader.prescreen.catalogue import BY_SLUG

K = TypeVar("K")


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion, rounded to 3 places; (0, 1) when n is 0.

    >>> wilson(0, 4), wilson(4, 4), wilson(0, 0)
    ((0.0, 0.49), (0.51, 1.0), (0.0, 1.0))
    """
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)


@dataclass(frozen=True)
class Figures:
    """How one scanner version fares on the labeled rollouts of its category.

    `tp` labeled cheat and flagged, `fp` labeled honest and flagged; `fn` labeled cheat and not
    flagged, `tn` labeled honest and not flagged, both counted only over rollouts the version is
    known to have read (None when that is not known: recall is then unknown too). `labeled`:
    the category's labeled rollouts; `scanned`: how many of them the version is known to have
    read (None when not known)."""

    labeled: int
    tp: int
    fp: int
    fn: int | None
    tn: int | None
    scanned: int | None

    @property
    def flagged(self) -> int:
        return self.tp + self.fp

    @property
    def precision(self) -> float | None:
        return self.tp / self.flagged if self.flagged else None

    @property
    def precision_interval(self) -> tuple[float, float] | None:
        return wilson(self.tp, self.flagged) if self.flagged else None

    @property
    def recall(self) -> float | None:
        cheats = self.tp + self.fn if self.fn is not None else 0
        return self.tp / cheats if cheats else None

    @property
    def recall_interval(self) -> tuple[float, float] | None:
        cheats = self.tp + self.fn if self.fn is not None else 0
        return wilson(self.tp, cheats) if cheats else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "labeled": self.labeled,
            "scanned": self.scanned,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": _rounded(self.precision),
            "precision_interval": list(self.precision_interval) if self.precision_interval else None,
            "recall": _rounded(self.recall),
            "recall_interval": list(self.recall_interval) if self.recall_interval else None,
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def figures(labels: Mapping[K, bool], flagged: Collection[K], *, scanned: Collection[K] | None) -> Figures:
    """Count one version against one category's labels: `labels` maps a rollout to True when it
    is labeled a cheat of the category, False when honest; `flagged` are the rollouts the version
    raised a finding of the category on; `scanned` the rollouts it is known to have read, flagged
    or not (None: not known, so misses are not counted). A flagged rollout was read, whatever
    `scanned` says; an unlabeled one counts nowhere.

    Four cheats and three honest rollouts; the version flags a, b, e and x (x is unlabeled) and
    read a to f: two true positives, one false, two misses (c, d), one honest left alone (f).

    >>> labels = {"a": True, "b": True, "c": True, "d": True, "e": False, "f": False, "g": False}
    >>> f = figures(labels, {"a", "b", "e", "x"}, scanned="abcdef")
    >>> (f.tp, f.fp, f.fn, f.tn, f.scanned), round(f.precision, 3), f.recall
    ((2, 1, 2, 1, 6), 0.667, 0.5)
    >>> f.precision_interval, f.recall_interval
    ((0.208, 0.939), (0.15, 0.85))
    >>> g = figures(labels, {"a", "e"}, scanned=None)
    >>> (g.tp, g.fp, g.fn, g.recall, g.precision)
    (1, 1, None, None, 0.5)
    """
    hits = {key for key in flagged if key in labels}
    tp = sum(1 for key in hits if labels[key])
    fp = len(hits) - tp
    if scanned is None:
        return Figures(labeled=len(labels), tp=tp, fp=fp, fn=None, tn=None, scanned=None)
    read = {key for key in scanned if key in labels} | hits
    fn = sum(1 for key in read - hits if labels[key])
    tn = len(read - hits) - fn
    return Figures(labeled=len(labels), tp=tp, fp=fp, fn=fn, tn=tn, scanned=len(read))


def finding_category(author: str, reason: str) -> tuple[str, int | None] | None:
    """The catalogue category a stored scanner finding is of, and the version that found it:
    from its author ("history_search@1"), else, for findings stored before the scanners were
    versioned (author "prescreen"), from its reason's rule ("test_skip: ..."), version unknown.
    None when it names no category of the catalogue (`test_modified`, a retired rule).

    >>> finding_category("future_commit@2", "future_commit: git show v6.0.0")
    ('future_commit', 2)
    >>> finding_category("prescreen", "test_skip: @pytest.mark.skip added"), finding_category("prescreen@1", "test_modified: x")
    (('test_skip', None), None)
    >>> finding_category("prescreen", "upstream_history: git log --all")
    """
    slug, at, number = author.partition("@")
    if at and slug in BY_SLUG and number.isdigit() and len(number) < 10:
        return slug, int(number)
    rule = reason.partition(":")[0].strip()
    return (rule, None) if rule in BY_SLUG else None
