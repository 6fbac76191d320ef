"""What every importer shares: reading JSON that may be broken, verdicts, attempts. No Django.

An importer turns one foreign file into `Attempt`s: a `gagar-group/1` rollout (without its
index, which the import service assigns) plus the instance it belongs to. A file that
cannot be turned into attempts raises `SourceError` with a reason a user can act on.

>>> verdict_from_report({"resolved": True, "tests_status": {}}, ref="r.json").reward
1.0
>>> repo_of("scikit-learn__scikit-learn-14141")
'scikit-learn/scikit-learn'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

# Verdict names, as the SWE-bench harness's run summary spells its id lists.
RESOLVED = "resolved"
UNRESOLVED = "unresolved"
EMPTY_PATCH = "empty_patch"
ERROR = "error"

_REPO = re.compile(r"^(?P<owner>[A-Za-z0-9_.-]+?)__(?P<name>[A-Za-z0-9_.-]+)-\d+$")
_PR_DESCRIPTION = re.compile(r"<pr_description>\s*(?:Consider the following PR description:)?\s*(.*?)\s*</pr_description>", re.DOTALL)


class SourceError(ValueError):
    """A file that yields no rollouts; the message says why (shown next to its name)."""


def load_json(path: Path) -> Any:
    """Decode a JSON file; a truncated or broken one becomes a SourceError, not a crash."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from None
    if not data.strip():
        raise SourceError("empty file")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise SourceError(f"truncated or invalid JSON ({exc})") from None


def text_of(content: Any) -> str:
    """Message content as text: strings stay, OpenAI content parts are joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or part.get("content") or ""))
            elif part is not None:
                parts.append(str(part))
        return "\n".join(p for p in parts if p)
    return str(content)


def as_dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list:
    return value if isinstance(value, list) else []


def number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def repo_of(instance_id: str) -> str:
    """`owner__name-123` (SWE-bench's instance ids) -> `owner/name`; '' for other ids."""
    match = _REPO.match(instance_id)
    return f"{match['owner']}/{match['name']}" if match else ""


def problem_statement_of(prompt: str) -> str:
    """The issue text inside the agents' `<pr_description>` prompt, or '' (never the whole prompt)."""
    match = _PR_DESCRIPTION.search(prompt or "")
    return match.group(1).strip() if match else ""


def is_empty_patch(patch: str | None) -> bool:
    return not (patch or "").strip()


def same_patch(a: str | None, b: str | None) -> bool:
    return (a or "").strip() == (b or "").strip()


@dataclass(frozen=True)
class Verdict:
    """The SWE-bench harness's word on one instance of one run."""

    status: str  # RESOLVED, UNRESOLVED, EMPTY_PATCH or ERROR
    source: str  # "report" (per-instance report.json) or "summary" (run summary ids)
    ref: str  # the file it came from
    tests: dict | None = None
    test_log: str = ""

    @property
    def reward(self) -> float:
        # The harness counts empty patches and evaluation errors as unresolved.
        return 1.0 if self.status == RESOLVED else 0.0


def _tests_of(report: dict) -> dict | None:
    status = report.get("tests_status")
    if not isinstance(status, dict):
        return None
    tests = {}
    for category, outcome in status.items():
        if isinstance(outcome, dict):
            tests[str(category)] = {
                "success": [str(t) for t in as_list(outcome.get("success"))],
                "failure": [str(t) for t in as_list(outcome.get("failure"))],
            }
    return tests


def is_bare_report(obj: Any) -> bool:
    return isinstance(obj, dict) and isinstance(obj.get("resolved"), bool)


def verdict_from_report(report: dict, *, ref: str) -> Verdict:
    """One instance's report.json body (`resolved`, `tests_status`, ...)."""
    if report.get("resolved") is True:
        status = RESOLVED
    elif report.get("patch_is_None") is True or report.get("patch_exists") is False:
        status = EMPTY_PATCH
    else:
        status = UNRESOLVED
    return Verdict(status=status, source="report", ref=ref, tests=_tests_of(report))


def verdicts_from_report_file(obj: Any, *, instance_hint: str | None, ref: str) -> dict[str, Verdict]:
    """report.json is keyed `{instance_id: {...}}` or the bare object (then the folder names the instance)."""
    if is_bare_report(obj):
        if not instance_hint:
            raise SourceError("a bare report (no instance id key) outside a folder named after its instance")
        return {instance_hint: verdict_from_report(obj, ref=ref)}
    if isinstance(obj, dict):
        out = {str(k): verdict_from_report(v, ref=ref) for k, v in obj.items() if is_bare_report(v)}
        if out:
            return out
    raise SourceError("not a SWE-bench report (no 'resolved' verdict)")


SUMMARY_LISTS = (("error_ids", ERROR), ("empty_patch_ids", EMPTY_PATCH), ("unresolved_ids", UNRESOLVED), ("resolved_ids", RESOLVED))


def is_run_summary(obj: Any) -> bool:
    return isinstance(obj, dict) and any(isinstance(obj.get(key), list) for key in ("resolved_ids", "unresolved_ids"))


def verdicts_from_summary(obj: dict, *, ref: str) -> dict[str, Verdict]:
    """The harness's run summary `<model>.<run_id>.json`: resolved / unresolved / empty patch / error ids.

    Later lists win, so an id listed as resolved is resolved whatever else names it.
    Ids only in `incomplete_ids` were never evaluated: they get no verdict.
    """
    out: dict[str, Verdict] = {}
    for key, status in SUMMARY_LISTS:
        for instance_id in as_list(obj.get(key)):
            if isinstance(instance_id, str):
                out[instance_id] = Verdict(status=status, source="summary", ref=ref)
    return out


@dataclass
class Attempt:
    """One rollout found in a file, before the import service gives it an index."""

    instance_id: str
    ref: str  # stable: "<PATH name>/<relative path>[#attempt-n | #instance]"
    format: str
    patch: str
    messages: list
    exit_status: str = ""
    stats: dict = field(default_factory=dict)
    metadata: dict = field(default_factory=dict)
    problem_statement: str = ""
    evaluated_patch: str | None = None  # the patch the harness scored, when the file says which
    verdict_ambiguous: bool = False  # several attempts and no way to tell which one was scored
    unfinished: bool = False  # no exit status and no submission: the agent never finished

    def rollout(self, *, verdict: Verdict | None, reward_note: str = "") -> dict:
        """The `gagar-group/1` rollout (no index yet). Deterministic: the same file gives the same dict."""
        metadata = dict(self.metadata)
        if verdict is not None:
            reward: float | None = verdict.reward
            metadata["verdict"] = {"status": verdict.status, "source": verdict.source, "ref": verdict.ref}
        elif is_empty_patch(self.patch):
            reward = 0.0  # nothing to apply: the harness fails an empty patch
            metadata["verdict"] = {"status": EMPTY_PATCH, "source": "empty patch"}
        else:
            reward = None
            metadata["verdict"] = {"status": "unknown", "source": reward_note or "no verdict"}
        rollout: dict[str, Any] = {
            "reward": reward,
            "patch": self.patch,
            "messages": self.messages,
            "exit_status": self.exit_status,
            "stats": {k: v for k, v in self.stats.items() if v is not None},
            "source": {"format": self.format, "ref": self.ref},
            "metadata": metadata,
        }
        if verdict is not None and verdict.tests is not None:
            rollout["tests"] = verdict.tests
        if verdict is not None and verdict.test_log:
            rollout["test_log"] = verdict.test_log
        return rollout
