"""The review desk as a person meets it.

- a judging form as a person sends it: `as_lanes(data, user, group)` names rollouts by the lane
  labels a blind judge's page shows (`tier-C`), not by index (`tier-3`); `judgment_post(tiers, ...)`
  builds the form, `group_url(uid)` is a group page of run r1 in acme
- GRADER and SECRET_NOTE: the grader of the review desk tests' groups (tests/reviews/conftest.py)
  and the evidence note no blind page may show
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

GRADER = "secret-grader@1"
SECRET_NOTE = "GRADER-SECRET-NOTE"


def as_lanes(data: dict, user, group) -> dict:
    """The judging fields of `data` (keyed by rollout index: `tier-3`, `score-3-scope`) as
    `user`'s page names them on `group` (a Group or its uid): by the lane label their blind
    assignment shows (`tier-C`), or unchanged when they do not judge it blind. `user` may be
    a test client, meaning the person logged in with it."""
    from grading.models import Group
    from reviews.selectors.lanes import lanes_for

    if hasattr(user, "session"):
        user = get_user_model().objects.get(pk=user.session["_auth_user_id"])
    if isinstance(group, str):
        group = Group.objects.select_related("run").get(uid=group)
    lanes = lanes_for(user=user, group=group)
    if not lanes.blind:
        return data
    out = {}
    for key, value in data.items():
        parts = key.split("-")
        if (
            len(parts) >= 2
            and parts[0] in ("tier", "rank", "cheat", "note", "score")
            and parts[1].isascii()
            and parts[1].isdigit()
        ):
            key = "-".join([parts[0], lanes.key(int(parts[1])), *parts[2:]])
        out[key] = value
    return out


def group_url(uid: str, suffix: str = "") -> str:
    return f"/projects/acme/runs/r1/groups/{uid}/{suffix}"


def judgment_post(tiers: dict[int, str], ranks: dict[int, int] | None = None, *, cheat=(), seen_version=0, **extra) -> dict:
    data = {f"tier-{i}": t for i, t in tiers.items()}
    data.update({f"rank-{i}": str(r) for i, r in (ranks or {}).items()})
    data.update({f"cheat-{i}": "on" for i in cheat})
    data["seen_version"] = str(seen_version)
    data.update(extra)
    return data
