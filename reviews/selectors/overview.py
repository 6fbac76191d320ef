"""The group page's overview: each rollout's patch cluster, its test counts, the order of the lanes."""

from __future__ import annotations

from dataclasses import dataclass

from grading.rollouts.blinding import lane_position
from grading.selectors.rollouts import cluster_members
from reviews.selectors.lanes import Lanes, cluster_text


@dataclass(frozen=True)
class ClusterLabel:
    """Which patch cluster a rollout falls in, as the overview and its lane say it."""

    cluster: str  # the cluster's first member (grading.rollouts.clusters), as this person names it (Lanes.key)
    size: int  # members of that cluster in the group
    label: str  # "same change as #3, +2 extra files" (or "same change as C": a blind judge's labels)
    extra_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class PageClusters:
    labels: dict[int, ClusterLabel]  # rollout index -> its cluster; empty when none is stored
    distinct: int = 0  # clusters among the rollouts given


def cluster_labels(rollouts: list, lanes: Lanes | None = None) -> PageClusters:
    """Each rollout's patch cluster, from its stored fields (Rollout.cluster, extra_files,
    cluster_label, written at ingest by grading.ingest.cluster_storage): no query and no
    patch parsed on a page view. Rollouts not clustered yet are left out. A blind judge's
    clusters (`lanes`) are named by their labels, the cluster by its lowest."""
    lanes = lanes or Lanes(blind=False)
    members = cluster_members(rollouts)
    first = {
        number: min(indexes, key=lambda i: lane_position(lanes.key(i)) or 0) if lanes.blind else number
        for number, indexes in members.items()
    }
    return PageClusters(
        {
            r.index: ClusterLabel(
                cluster=lanes.key(first[r.cluster]),
                size=len(members[r.cluster]),
                label=cluster_text(r, members[r.cluster], lanes),
                extra_files=tuple(r.extra_files or ()),
            )
            for r in rollouts
            if r.cluster is not None and r.cluster in members
        },
        distinct=len(members),
    )


# A rollout's stored test outcome categories, as the overview's columns name them.
TEST_CATEGORIES = {"fail_to_pass": "f2p", "pass_to_pass": "p2p"}


def rollout_test_counts(outcomes) -> dict[str, tuple[int, int]]:
    """(passed, failed) of the FAIL_TO_PASS and PASS_TO_PASS tests in a rollout's stored
    outcomes ({"FAIL_TO_PASS": {"success": [...], "failure": [...]}, ...}), as "f2p" and "p2p";
    a category the rollout does not carry is left out."""
    counts: dict[str, tuple[int, int]] = {}
    for category, outcome in outcomes.items() if isinstance(outcomes, dict) else ():
        key = TEST_CATEGORIES.get(str(category).lower())
        if key is None or not isinstance(outcome, dict):
            continue
        passed, failed = counts.get(key, (0, 0))
        success, failure = outcome.get("success") or [], outcome.get("failure") or []
        counts[key] = (
            passed + (len(success) if isinstance(success, list) else 0),
            failed + (len(failure) if isinstance(failure, list) else 0),
        )
    return counts


def lane_order(rollouts: list, order: list[int]) -> list:
    """The lanes in the order the page shows them: passing first, then those of unknown
    outcome, then failing; within each, the reviewer's blind order (`order`, a shuffle of
    the indices kept on their assignment) or, without one, by index."""
    position = {index: n for n, index in enumerate(order)}
    outcome_rank = {True: 0, None: 1, False: 2}
    return sorted(rollouts, key=lambda r: (outcome_rank[r.passed], position.get(r.index, len(position) + r.index)))
