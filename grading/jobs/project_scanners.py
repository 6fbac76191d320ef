"""A project's own scanners (docs/scanners.md#a-projects-own-scanners).

A project admin defines a scanner beside the built-in ones: a **pattern** of literal terms over
the commands a rollout ran or the lines its patch adds or removes, or an **LLM scanner**, a
question in plain words asked of one of the project's defined graders' endpoints, one rollout at
a time. A changed definition is a new version (``<name>@<n>``); the same definition again is the
version it is. Running a version over a scope (a run, or one step of it) stores each finding as
an open cheat decision (source prescreen, author ``<name>@<n>``): evidence for the auditor,
never a cheat by itself. A version never stores twice on a rollout, so running it again does
nothing, and an LLM scanner does not even ask about a rollout it already read and flagged.

An LLM scanner's answer must cite where its finding shows — a turn or a patch line of the
rollout, each resolving against it (grading.grader.evidence.resolve) — or it is refused:
stored nowhere, counted in the run's result with its reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q

from grading.grader.base import Evidence
from grading.grader.evidence import resolve
from grading.grader.llm import REQUEST_CONSTRAINTS
from grading.grader.prescreen.catalogue import BY_SLUG
from grading.grader.prescreen.custom import (
    ANSWER_SCHEMA,
    SYSTEM_PROMPT,
    AnswerRefused,
    Finding,
    ScannerDefinitionError,
    check_llm,
    check_pattern,
    llm_prompt,
    match_pattern,
    parse_answer,
)
from grading.grader.workspace import GroupWorkspace, RolloutView
from grading.models import (
    CheatDecision,
    GraderVersion,
    Project,
    ProjectScanner,
    Rollout,
    RolloutContent,
    Run,
    ScannerRead,
    Step,
)
from grading.registry.backends import GraderUnavailable, check_grader_url
from grading.registry.defined import endpoint_of, newest_defined, version_protocol
from grading.registry.versions import fingerprint

log = logging.getLogger(__name__)

NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_-")
MAX_NAME = 60
# Names the built-in scanners store their findings under: a project's scanner called so would
# pass for them (and stop a built-in version from scanning a rollout it had flagged).
RESERVED = frozenset(BY_SLUG) | {"test_modified", "prescreen", "custom"}
MAX_REFUSALS_SHOWN = 20

__all__ = ["ScannerDefinitionError", "Scope", "define_scanner", "run_scanner", "scope_for"]


@dataclass(frozen=True)
class Scope:
    run_id: int
    step: int | None = None  # a step's number; None: the whole run


@dataclass
class RunResult:
    scanner: str
    rollouts: int = 0  # read now
    findings: int = 0  # stored now
    clear: int = 0  # read, nothing found
    already: int = 0  # read by this version before (flagged, clear or refused): not read again
    refused: int = 0  # LLM answers refused (uncited, unresolved, malformed)
    errors: int = 0  # LLM calls that failed (the rollout is read again next time)
    capped: bool = False  # more rollouts in scope than one run reads
    error: str = ""  # why it could not run at all (its grader's endpoint), naming variables only
    refusals: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scanner": self.scanner,
            "rollouts": self.rollouts,
            "findings": self.findings,
            "clear": self.clear,
            "already": self.already,
            "refused": self.refused,
            "errors": self.errors,
            "capped": self.capped,
            "refusals": self.refusals,
            "error": self.error,
        }


# --- definitions ---------------------------------------------------------------------------


def _check(project: Project, data: Any) -> tuple[str, str, dict[str, Any], str, str]:
    if not isinstance(data, dict):
        raise ScannerDefinitionError("body", "a scanner definition is a JSON object")
    unknown = sorted(set(data) - {"name", "kind", "definition", "category", "description"})
    if unknown:
        raise ScannerDefinitionError(unknown[0], f"unknown field {unknown[0]!r}")
    name = data.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_NAME or not set(name) <= NAME_CHARS or not name[0].isalnum():
        raise ScannerDefinitionError(
            "name", f"name is a slug: 1 to {MAX_NAME} lower-case letters, digits, '_' or '-', starting with a letter or digit"
        )
    if name in RESERVED:
        raise ScannerDefinitionError("name", f"{name!r} is a built-in scanner's name")
    kind = data.get("kind")
    if kind not in ProjectScanner.Kind.values:
        raise ScannerDefinitionError("kind", "kind must be 'pattern' or 'llm'")
    if kind == ProjectScanner.Kind.PATTERN:
        definition = check_pattern(data.get("definition"))
    else:
        definition = check_llm(data.get("definition"))
        grader = newest_defined(project.pk, definition["grader"])
        if grader is None:
            raise ScannerDefinitionError(
                "definition.grader", f"{definition['grader'][:100]!r} is none of the project's defined graders"
            )
        definition["grader"] = grader.name  # that version: a new grader version is a new scanner version
    category = data.get("category", "custom")
    if category != "custom" and category not in BY_SLUG:
        raise ScannerDefinitionError("category", "category is a slug of the scanners' catalogue, or 'custom'")
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > 2_000 or "\x00" in description:
        raise ScannerDefinitionError("description", "description is text of at most 2,000 characters")
    return name, kind, definition, category, description


@transaction.atomic
def define_scanner(*, project: Project, data: Any, user=None) -> tuple[ProjectScanner, bool]:
    """Define, or change, the project's scanner `data["name"]`. Returns (version, created): a new
    version for a new definition, the existing one for a definition it already has.
    ScannerDefinitionError names the refused field."""
    name, kind, definition, category, description = _check(project, data)
    key = fingerprint({"kind": kind, "definition": definition, "category": category})
    Project.objects.select_for_update().filter(pk=project.pk).first()  # one new version at a time
    same = ProjectScanner.objects.filter(project=project, name=name, fingerprint=key).select_related("created_by").first()
    if same is not None:
        return same, False
    newest = ProjectScanner.objects.filter(project=project, name=name).order_by("-version").first()
    scanner = ProjectScanner.objects.create(
        project=project,
        name=name,
        version=(newest.version if newest else 0) + 1,
        kind=kind,
        definition=definition,
        category=category,
        description=description,
        fingerprint=key,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    return scanner, True


def scope_for(project: Project, run: Any, step: Any) -> Scope:
    """The scope a run request names: one of the project's runs by name, and maybe one of its
    steps by number; ScannerDefinitionError naming `run` or `step` otherwise."""
    found = Run.objects.filter(project=project, name=run).only("id", "name").first() if isinstance(run, str) else None
    if found is None:
        raise ScannerDefinitionError("run", f"run names one of {project.name}'s runs")
    if step is not None and (
        isinstance(step, bool) or not isinstance(step, int) or not Step.objects.filter(run=found, number=step).exists()
    ):
        raise ScannerDefinitionError("step", f"step is the number of one of {found.name}'s steps")
    return Scope(found.pk, step)


def newest_scanner(project: Project, name: str) -> ProjectScanner | None:
    """The scanner's newest version, or the one `name@n` names."""
    base, at, number = name.partition("@")
    scanners = ProjectScanner.objects.filter(project=project, name=base)
    if at:
        return scanners.filter(version=int(number)).first() if number.isdigit() and len(number) < 10 else None
    return scanners.order_by("-version").first()


# --- runs ----------------------------------------------------------------------------------


def run_scanner(*, scanner: ProjectScanner, scope: Scope) -> RunResult:
    """Run one version over the rollouts of the scope it has not read yet (at most
    PROJECT_SCANNER_MAX_ROLLOUTS; `capped` says more are left) and store its findings."""
    result = RunResult(scanner=scanner.author)
    rollouts = Rollout.objects.filter(group__run_id=scope.run_id, group__run__project_id=scanner.project_id)
    if scope.step is not None:
        rollouts = rollouts.filter(group__step__number=scope.step)
    flagged = CheatDecision.objects.filter(source=CheatDecision.Source.PRESCREEN, author=scanner.author)
    read = ScannerRead.objects.filter(scanner=scanner)
    done = rollouts.filter(Q(pk__in=flagged.values("rollout_id")) | Q(pk__in=read.values("rollout_id")))
    result.already = done.count()
    limit = settings.PROJECT_SCANNER_MAX_ROLLOUTS
    todo = list(
        rollouts.exclude(pk__in=flagged.values("rollout_id"))
        .exclude(pk__in=read.values("rollout_id"))
        .select_related("group")
        .order_by("group_id", "index")
        .only("id", "index", "passed", "group__uid", "group_id")[: limit + 1]
    )
    result.capped = len(todo) > limit
    todo = todo[:limit]
    contents = {c.rollout_id: c for c in RolloutContent.objects.filter(rollout_id__in=[r.pk for r in todo])}
    try:
        asker = _Asker(scanner) if scanner.kind == ProjectScanner.Kind.LLM and todo else None
    except (ValueError, GraderUnavailable) as exc:  # messages name variables, never their values
        result.error = str(exc)
        return result
    reads: list[ScannerRead] = []
    try:
        for rollout in todo:
            content = contents.get(rollout.pk) or RolloutContent()
            view = RolloutView(index=rollout.index, passed=rollout.passed, patch=content.patch, messages=content.messages or [])
            result.rollouts += 1
            if asker is None:
                found, detail = match_pattern(scanner.definition, messages=view.messages, patch=view.patch), ""
            else:
                refused = result.refused
                answer = asker.ask(rollout, view, result)
                if answer is None:  # refused (kept: the same question gets the same refusal) or failed (asked again)
                    if result.refused > refused:
                        reads.append(ScannerRead(scanner=scanner, rollout=rollout, outcome=ScannerRead.Outcome.REFUSED))
                    continue
                found, detail = answer
            if found:
                result.findings += _store(scanner, rollout, found, detail)
            else:
                result.clear += 1
                reads.append(ScannerRead(scanner=scanner, rollout=rollout, outcome=ScannerRead.Outcome.CLEAR))
    finally:
        if asker is not None:
            asker.close()
        ScannerRead.objects.bulk_create(reads, ignore_conflicts=True, batch_size=500)
    return result


def _store(scanner: ProjectScanner, rollout: Rollout, found: list[Finding], detail: str) -> int:
    """One open decision citing every finding, unless this version stored one on the rollout
    meanwhile (a concurrent run). Returns 1 when stored."""
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    reason = f"{scanner.category}: {scanner.author}: {detail or first.detail}{more}"[:1000]
    with transaction.atomic():
        Rollout.objects.select_for_update().filter(pk=rollout.pk).first()
        if CheatDecision.objects.filter(rollout=rollout, source=CheatDecision.Source.PRESCREEN, author=scanner.author).exists():
            return 0
        CheatDecision.objects.create(
            rollout=rollout,
            source=CheatDecision.Source.PRESCREEN,
            reason=reason,
            author=scanner.author,
            evidence=[
                {"kind": f.kind, "rollout": rollout.index, "locator": f.locator, "note": f.detail[:200]} for f in found[:50]
            ],
            confirmed=None,
            decided_at=None,
        )
    return 1


class _Asker:
    """An LLM scanner's calls: one chat completion per rollout through the defined grader's
    endpoint (the operator's GRADER_ENDPOINT_ENVS, the SSRF check of any grader)."""

    def __init__(self, scanner: ProjectScanner):
        from openai import DefaultHttpxClient, OpenAI

        from grading.grader.llm import tls_context

        self.scanner = scanner
        grader = GraderVersion.objects.filter(project_id=scanner.project_id, name=scanner.definition["grader"]).first()
        if grader is None:
            raise ValueError(f"scanner {scanner.author}: its grader {scanner.definition['grader']} no longer exists")
        self.grader = grader
        tool_mode, request = version_protocol(grader)
        # In JSON mode the answer's shape goes as a schema, unless the version brings its own constraint.
        if tool_mode == "json" and not REQUEST_CONSTRAINTS & set(request):
            schema = {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": ANSWER_SCHEMA}}
            request = {"response_format": schema, **request}
        self.request = request
        base_url, api_key = endpoint_of(grader)
        check_grader_url(base_url, grader.endpoint_env)
        timeout = float(grader.budgets.get("request_timeout_s", 120))
        self.client = OpenAI(
            base_url=base_url,
            api_key=api_key or "none",
            timeout=timeout,
            max_retries=2,
            http_client=DefaultHttpxClient(verify=tls_context()),
        )

    def close(self) -> None:
        self.client.close()

    def ask(self, rollout: Rollout, view: RolloutView, result: RunResult) -> tuple[list[Finding], str] | None:
        """(findings, detail) — no findings when the answer says none — or None when the answer
        was refused or the call failed (counted in `result`)."""
        import openai

        prompt = llm_prompt(
            self.scanner.definition["question"],
            messages=view.messages,
            patch=view.patch,
            budget=settings.PROJECT_SCANNER_PROMPT_CHARS,
        )
        try:
            # The grader version's own request fields (a grammar, a temperature) go with the question.
            reply = self.client.chat.completions.create(
                model=self.grader.model,
                messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
                temperature=0,
                extra_body=self.request or None,
            )
            content = reply.choices[0].message.content if reply.choices else None
        except (openai.OpenAIError, ValueError) as exc:
            log.warning("scanner %s on rollout %s: %s", self.scanner.author, rollout.pk, type(exc).__name__)
            result.errors += 1
            return None
        try:
            finding, detail, citations = parse_answer(content)
            if not finding:
                return [], ""
            workspace = GroupWorkspace(uid=rollout.group.uid, instance_id="", rollouts=[view])
            found = []
            for kind, locator in citations:
                why = resolve(workspace, Evidence(kind, view.index, locator))
                if why is not None:
                    raise AnswerRefused(f"a citation does not resolve: {why}")
                found.append(Finding(kind, locator, detail[:200]))
        except AnswerRefused as exc:
            result.refused += 1
            if len(result.refusals) < MAX_REFUSALS_SHOWN:
                result.refusals.append({"group": rollout.group.uid, "rollout": rollout.index, "reason": str(exc)[:300]})
            return None
        return found, detail or "the scanner's question answered yes"


def scanners_of(project: Project) -> list[ProjectScanner]:
    """Every version of the project's scanners, by name, newest version first."""
    return list(ProjectScanner.objects.filter(project=project).select_related("created_by").order_by("name", "-version"))
