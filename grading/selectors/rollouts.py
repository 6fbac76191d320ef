"""A group's rollouts as its page shows them: patches (highlighted ahead where they may be), test
outcomes, a text-only rollout's response, one rollout's content, the patch clusters. Large bodies
are loaded only where the page shows them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypedDict, cast

from django.db.models import Case, F, JSONField, Q, When
from django.db.models.functions import Length
from django.shortcuts import get_object_or_404

from grading.models import Group, PatchHighlight, Rollout, RolloutContent
from grading.rollouts.diffs import patch_digest

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class RolloutPatch(TypedDict):
    patch_text: str
    patch_ahead: list | None  # its hunks as highlighted ahead (PatchHighlight.hunks), None without
    test_outcomes: Any  # RolloutContent.tests (JSON), {} without content
    response_text: str | None  # a text-only rollout's final response


if TYPE_CHECKING:
    # A Rollout with the attributes rollouts_with_patches sets on it.
    RolloutWithPatch = WithAnnotations[Rollout, RolloutPatch]


def rollouts_with_patches(group: Group, *, highlighted_up_to: int = 0) -> list[RolloutWithPatch]:
    """Every rollout of a group with its patch and test outcomes; messages and logs stay deferred.
    `highlighted_up_to`: a patch of at most this many characters comes with its hunks as
    highlighted ahead (`patch_ahead`, PatchHighlight.hunks) where they were made from its
    current text; None otherwise (not highlighted yet, longer, or changed since)."""
    rollouts = cast("list[RolloutWithPatch]", list(group.rollouts.order_by("index")))  # the attributes are set below
    contents_qs = RolloutContent.objects.filter(rollout__group=group).only("rollout_id", "patch", "tests")
    if highlighted_up_to > 0:  # in the same query: the highlight joined only where it may be shown
        short = Q(patch_length__lte=highlighted_up_to)
        contents_qs = contents_qs.annotate(patch_length=Length("patch")).annotate(
            ahead_digest=Case(When(short, then=F("rollout__patch_highlight__digest")), default=None),
            ahead=Case(When(short, then=F("rollout__patch_highlight__hunks")), default=None, output_field=JSONField()),
        )
    contents = {c.rollout_id: c for c in contents_qs}
    for rollout in rollouts:
        content = contents.get(rollout.pk)
        rollout.patch_text = content.patch if content else ""
        rollout.test_outcomes = content.tests if content else {}
        rollout.response_text = None
        ahead = getattr(content, "ahead", None)
        fresh = ahead is not None and getattr(content, "ahead_digest", None) == patch_digest(rollout.patch_text)
        rollout.patch_ahead = ahead if fresh and isinstance(ahead, list) else None
    # Text-only rollouts (a trainer's dump: a prompt and a response, no patch) show their response where a patch would be.
    text_only = {r.pk: r for r in rollouts if not r.patch_text and r.source_format in TEXT_ONLY_FORMATS}
    if text_only:
        for content in RolloutContent.objects.filter(rollout_id__in=list(text_only)).only("rollout_id", "messages"):
            text_only[content.rollout_id].response_text = final_response(content.messages)
    return rollouts


TEXT_ONLY_FORMATS = ("verl",)  # source formats whose rollouts are a response text, not a patch


def final_response(messages) -> str:
    """The last assistant message's text ('' if none)."""
    for message in reversed(messages if isinstance(messages, list) else []):
        if isinstance(message, dict) and message.get("role") == "assistant":
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def patch_highlight(rollout: Rollout, patch: str) -> list | None:
    """The rollout's patch as highlighted ahead (PatchHighlight.hunks) when it was made from
    `patch`, its current text; None otherwise."""
    row = PatchHighlight.objects.filter(rollout=rollout).values_list("digest", "hunks").first()
    if row is None or row[0] != patch_digest(patch) or not isinstance(row[1], list):
        return None
    return row[1]


def rollout_content(group: Group, index: int, *fields: str) -> tuple[Rollout, RolloutContent]:
    rollout = get_object_or_404(Rollout, group=group, index=index)
    content = RolloutContent.objects.only("rollout_id", *fields).filter(rollout=rollout).first() or RolloutContent(
        rollout=rollout
    )
    return rollout, content


def cluster_members(rollouts: Iterable[Rollout]) -> dict[int, list[int]]:
    """A group's patch clusters from its rollouts' stored fields: cluster number (its first
    member's index) -> member indices, ascending. Each rollout's label ("same change as #3,
    +2 extra files") is `rollout.cluster_label`; rollouts not yet clustered are left out."""
    clusters: dict[int, list[int]] = {}
    for rollout in sorted(rollouts, key=lambda r: r.index):
        if rollout.cluster is not None:
            clusters.setdefault(rollout.cluster, []).append(rollout.index)
    return clusters
