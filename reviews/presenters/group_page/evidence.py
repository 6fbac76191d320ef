"""What the shown verdict cites, as links on the group page: each citation (a patch line, a
file, a turn, a check, the tests) and each weighted turn opened where it is."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from django.urls import reverse

from grading.grader.evidence import split_file_locator
from grading.method.turn_weights import CATEGORY_WORDS
from grading.models import Group
from grading.repos.types import BASE
from grading.templatetags.gagar import patch_anchor
from reviews.presenters.group_page.diffs import files_url
from reviews.presenters.group_page.head import group_args
from reviews.selectors.lanes import Lanes


def evidence_links(
    group: Group,
    evidence: object,
    lanes: Lanes,
    deferred: AbstractSet[int] = frozenset(),
    scratch: Mapping[int, AbstractSet[str]] | None = None,
) -> tuple[dict, ...]:
    """Where each citation opens: the patch line's row on this page (in a patch loaded on
    demand, `deferred`, or a scratch file's, `scratch`: that part's own page), the turn (turns
    load lazily, so the turns view starting at it), the line in the lane's files view, the
    check in the verdict's checks, or the rollout's test outcomes; each rollout named as this
    person names it (`lanes`)."""
    links = []
    for item in evidence if isinstance(evidence, list) else []:
        if not isinstance(item, dict):
            continue
        kind, index, locator = item.get("kind"), item.get("rollout"), str(item.get("locator", ""))
        if not isinstance(index, int):
            continue
        lane = lanes.key(index)
        if kind == "patch" and ":" in locator:
            path, _, line = locator.rpartition(":")
            href = f"#{patch_anchor(lane, path, line)}"
            if index in deferred:  # that lane's patch loads on demand: open the patch's own page there
                href = reverse("rollout-diff", args=[*group_args(group), lane]) + href
            elif path in (scratch or {}).get(index, ()):  # a scratch file's diff loads on demand too
                href = reverse("rollout-extra-files", args=[*group_args(group), lane]) + href
        elif kind == "file" and (parts := split_file_locator(locator)) is not None:
            at, path, line_no = parts
            # A rollout's state opens in that rollout's lane; the base commit in the cited rollout's.
            state_lane = lane if at == BASE else lanes.key(at)
            hx = files_url(group, state_lane, path, at="base" if at == BASE else "rollout", line=line_no)
            links.append(
                {
                    "kind": kind,
                    "locator": locator,
                    "note": str(item.get("note", "")),
                    "href": f"{hx}#file-{state_lane}-L{line_no}",
                    "hx": hx,  # loads into the lane's files box on the page
                    "lane": state_lane,
                }
            )
            continue
        elif kind == "check":
            href = f"#check-{locator.removeprefix('check:')}"
        elif kind == "turn" and locator.isdigit():
            base = reverse("rollout-turns", args=[*group_args(group), lane])
            href = f"{base}?start={locator}#turn-{lane}-{locator}"
        else:
            href = f"#tests-{lane}"
        links.append({"kind": kind, "locator": locator, "note": str(item.get("note", "")), "href": href})
    return tuple(links)


def turn_weight_links(group: Group, lane: str, weights: list | None) -> tuple[dict, ...] | None:
    """A rollout's turn weights (selectors.turn_weights_of) as the verdict shows them, each
    turn linked as a turn citation is; None when the run gives no turn weights."""
    if weights is None:
        return None
    base = reverse("rollout-turns", args=[*group_args(group), lane])
    return tuple(
        {
            "turn": turn,
            "weight": weight,
            "why": CATEGORY_WORDS.get(category, "cited"),
            "href": f"{base}?start={turn}#turn-{lane}-{turn}",
        }
        for turn, weight, category in weights
    )
