"""Whether a person sees a group's rollouts blind to their producer, asked by grading's own
views (the group API) without importing the review desk, which knows who judges what blind.

The review desk registers the one answer in its app's `ready()` (reviews/apps.py:
reviews.selectors.lanes.blind_view_for); without it nobody is blind. A `BlindView` says
the lane label of each rollout index and which fields are withheld
(grading.rollouts.blinding)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from grading.rollouts.blinding import BlindFields, lane_position


@dataclass(frozen=True)
class BlindView:
    labels: dict[int, str]  # rollout index -> its lane label for this person
    fields: BlindFields = field(default_factory=BlindFields)

    def order(self, indexes) -> list[int]:
        """`indexes` in this person's lane order (labels A, B, C...); any without a label last."""
        return sorted(indexes, key=lambda i: (lane_position(self.labels[i]) if i in self.labels else 1 << 30, i))


_resolver: Callable[..., BlindView | None] | None = None


def register(resolver: Callable[..., BlindView | None]) -> None:
    global _resolver
    _resolver = resolver


def blind_view(*, user, group) -> BlindView | None:
    """How `user` must see `group`'s rollouts, or None when they see them as stored."""
    if _resolver is None or user is None or not getattr(user, "is_authenticated", False):
        return None
    return _resolver(user=user, group=group)
