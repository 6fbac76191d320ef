"""Scanners checked against labeled rollouts: the arithmetic, and the Wilson interval it uses.

Pure: no Django.

>>> wilson(9, 10)
(0.596, 0.982)
"""

from __future__ import annotations

import math


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
