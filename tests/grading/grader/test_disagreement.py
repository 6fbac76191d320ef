"""How far graders disagree on a group (grading.grader.compare), checked against a
brute-force reading of the definition on hand-made and random calls."""

from __future__ import annotations

import random
from itertools import combinations

from grading.grader.compare import Disagreement, disagreement

LEVEL = {"T1": 0, "T2": 1, "T3": 2}


def brute(calls):
    gaps: dict[int, int] = {}
    split = set()
    for a, b in combinations(calls, 2):
        for index in set(a) & set(b):
            gaps[index] = max(gaps.get(index, 0), abs(LEVEL[a[index][0]] - LEVEL[b[index][0]]))
            if a[index][1] != b[index][1]:
                split.add(index)
    widest = max(gaps.values(), default=0)
    at = tuple(sorted(i for i, g in gaps.items() if g == widest)) if widest else ()
    return Disagreement(widest, at, tuple(sorted(split)))


def test_one_grader_or_full_agreement_is_no_disagreement():
    a = {0: ("T1", False), 1: ("T3", True)}
    assert disagreement([]) == disagreement([a]) == disagreement([a, dict(a)]) == Disagreement(0, (), ())


def test_the_widest_gap_and_its_rollouts_and_the_split_cheat_calls():
    a = {0: ("T1", False), 1: ("T2", False), 2: ("T3", True), 3: ("T1", False)}
    b = {0: ("T2", False), 1: ("T2", True), 2: ("T1", True)}  # has not graded 3
    c = {0: ("T3", False), 3: ("T1", True)}
    # 0: T1 vs T3 (a, c) = 2; 2: T3 vs T1 (a, b) = 2; 1: 0; 3: 0 -- cheat differs on 1 and 3
    assert disagreement([a, b, c]) == Disagreement(2, (0, 2), (1, 3))
    assert disagreement([a, b]) == Disagreement(2, (2,), (1,))
    assert disagreement([b, a]) == disagreement([a, b])


def test_rollouts_only_one_grader_graded_are_not_compared():
    assert disagreement([{0: ("T1", False)}, {1: ("T3", True)}]) == Disagreement(0, (), ())


def test_matches_the_definition_on_random_calls():
    rng = random.Random(7)
    for _ in range(300):
        calls = [
            {i: (rng.choice("T1 T2 T3".split()), rng.random() < 0.3) for i in range(6) if rng.random() < 0.8}
            for _ in range(rng.randint(0, 4))
        ]
        assert disagreement(calls) == brute(calls), calls
