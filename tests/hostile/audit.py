#!/usr/bin/env python
"""`make audit`: bandit over the code and pip-audit over the installed dependencies.

bandit: every finding must be fixed or listed in ACCEPTED with the reason it is safe;
anything else fails the audit. (`# nosec` is used only where the reason fits on the line.)

pip-audit: any known vulnerability fails the audit. When the vulnerability database cannot
be reached (no network, or a package mirror without PyPI's JSON API) pip-audit reports
every package as "could not be audited" and still says "No known vulnerabilities found";
that is reported here as NOT AUDITED, loudly, and does not fail an offline build.
Set GAGAR_AUDIT_REQUIRE_NETWORK=1 to make it fail instead (a release check).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CODE = ["gagar_web", "grading", "reviews"]

# (file, bandit test id) -> why it is safe. Reviewed by hand; keep the list short.
ACCEPTED = {
    (
        "grading/templatetags/gagar.py",
        "B308",
    ): "the `visible` filter and the `diff_table` tag: every piece is escaped first (pygments' HtmlFormatter output, "
    "escape()d hunk headers and text past the highlighting budget, line numbers, fixed class names); "
    "tests/grading/templatetags/test_gagar.py and tests/hostile render hostile patches and bidi text inert",
    ("grading/templatetags/gagar.py", "B703"): "same as B308: mark_safe only on strings whose every piece is escaped",
    (
        "grading/method/export.py",
        "B608",
    ): "SQL built from code-defined column lists and %s placeholders; every value is a bound parameter",
    (
        "grading/method/services/computation.py",
        "B608",
    ): "SQLite's INSERT of a step's results, built from the model's table name and its field columns (quoted) and %s "
    "placeholders; every value is a bound parameter",
    (
        "grading/method/releases.py",
        "B608",
    ): "SQL built from the model's table name, the code-defined _COLUMNS and %s/%b placeholders; every value is a "
    "bound parameter",
    (
        "grading/search/selectors.py",
        "B608",
    ): "the f-strings put only module-level table names (CHUNKS, FTS_TABLE) into the SQL; the query text is always a "
    "bound %s parameter",
    (
        "grading/search/selectors.py",
        "B611",
    ): "RawSQL holds fixed SQL with the search text as a bound parameter; tests/grading/search/test_selectors_literal.py "
    "searches quotes, percent signs and backslashes",
    ("grading/templatetags/gagar.py", "B324"): "SHA-1 makes a short HTML id fragment from a file path, not a security digest",
    ("grading/ingest/demo.py", "B311"): "seeded random for generated demo data",
    ("reviews/demo.py", "B311"): "seeded random for generated demo data",
    (
        "grading/rollouts/highlighter.py",
        "B404",
    ): "subprocess starts the highlighting workers: our own interpreter running our own module, so a runaway lexer can be killed",
    (
        "grading/rollouts/highlighter.py",
        "B603",
    ): "argv is [sys.executable, '-I', this module's path], no shell and nothing from a request; patch text goes over "
    "the pipe as data",
    ("grading/management/commands/simulate_training.py", "B311"): "seeded random for the simulated trainer's generated steps",
    (
        "grading/repos/sandbox.py",
        "B404",
    ): "subprocess starts bubblewrap and tar: the only way to run a check in a sandbox (tests/grading/repos/test_sandbox.py)",
    (
        "grading/repos/sandbox.py",
        "B603",
    ): "argv lists only fixed flags, the worktree's path and the check's command as one argument to `sh -c` inside the "
    "sandbox (no network, read-only root, a non-root uid, rlimits); never a shell on the host",
    (
        "grading/repos/sandbox.py",
        "B108",
    ): "/tmp there is the sandbox's own tmpfs in its own mount namespace (the throwaway layer), not the host's /tmp",
    (
        "grading/repos/source.py",
        "B404",
    ): "subprocess runs git on the mirror cache: the workspace is git's objects (tests/grading/repos/test_source.py)",
    (
        "grading/repos/source.py",
        "B603",
    ): "argv is git with fixed flags, the mirror's path and arguments validated first (repository names, hex commit "
    "ids, literal pathspecs); no shell, no hooks, the terminal prompt off",
    (
        "grading/repos/view.py",
        "B404",
    ): "subprocess runs git grep with a bound on matches, bytes and time (tests/grading/repos/test_view.py)",
    (
        "grading/repos/view.py",
        "B603",
    ): "argv is git grep with fixed flags and the pattern after -e (never an option); no shell",
    (
        "grading/repos/view.py",
        "B103",
    ): "0o555 takes the write bits off a worktree's root (read-only for checks); it grants nothing not granted before",
    ("reviews/selectors/overview.py", "B105"): "'f2p' and 'p2p' are the short names of SWE-bench's test categories",
}

# An assert that only narrows a type for mypy (`assert x is not None  # why it holds`) guards no
# input: under `python -O` the line goes and the code does what it did before it was typed. Any
# other assert is a finding like the rest.
NARROWING = re.compile(r"^\s*assert [\w.\[\]]{1,200} is not None  # \S")


def _narrowing_assert(issue: dict) -> bool:
    if issue["test_id"] != "B101":
        return False
    lines = (ROOT / issue["filename"]).read_text(encoding="utf-8").splitlines()
    return bool(NARROWING.match(lines[issue["line_number"] - 1]))


def run_bandit() -> bool:
    result = subprocess.run(
        [str(VENV_BIN / "bandit"), "-q", "-r", *CODE, "-f", "json"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    try:
        report = json.loads(result.stdout)
    except ValueError:
        print(f"bandit did not run: {result.stderr.strip()[-2000:]}")
        return False
    new, accepted, narrowing = [], [], 0
    for issue in report["results"]:
        key = (issue["filename"].removeprefix("./"), issue["test_id"])
        if _narrowing_assert(issue):
            narrowing += 1
        else:
            (accepted if key in ACCEPTED else new).append((key, issue))
    print(
        f"bandit: {len(report['results'])} findings, {len(accepted)} accepted with a reason, "
        f"{narrowing} type-narrowing asserts with theirs, {len(new)} new"
    )
    for (path, test_id), issue in accepted:
        print(f"  accepted {path}:{issue['line_number']} {test_id} — {ACCEPTED[(path, test_id)]}")
    for (path, test_id), issue in new:
        print(f"  NEW      {path}:{issue['line_number']} {test_id} {issue['issue_severity']}: {issue['issue_text']}")
    skipped = report.get("metrics", {}).get("_totals", {}).get("skipped_tests", 0)
    if skipped:
        print(f"  ({skipped} finding(s) marked `# nosec` with the reason on the line)")
    return not new


def run_pip_audit() -> bool:
    result = subprocess.run(
        [str(VENV_BIN / "pip-audit"), "--skip-editable", "--progress-spinner", "off", "-f", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    try:
        report = json.loads(result.stdout)
    except ValueError:
        print(f"pip-audit: NOT AUDITED — it did not produce a report: {result.stderr.strip()[-1500:]}")
        return os.environ.get("GAGAR_AUDIT_REQUIRE_NETWORK") != "1"
    deps = report.get("dependencies", [])
    audited = [d for d in deps if "skip_reason" not in d]
    vulnerable = [d for d in audited if d.get("vulns")]
    unreached = len(deps) - len(audited)
    for dep in vulnerable:
        for vuln in dep["vulns"]:
            fixes = ", ".join(vuln.get("fix_versions", [])) or "no fix released"
            print(f"  VULNERABLE {dep['name']} {dep['version']}: {vuln['id']} (fixed in {fixes})")
    if vulnerable:
        print(f"pip-audit: {len(vulnerable)} vulnerable package(s) of {len(audited)} audited")
        return False
    if not audited and deps:
        print(
            f"pip-audit: NOT AUDITED — the vulnerability database could not be reached for any of {len(deps)} packages "
            "(offline, or a package mirror without PyPI's JSON API). Run `make audit` where pypi.org is reachable."
        )
        return os.environ.get("GAGAR_AUDIT_REQUIRE_NETWORK") != "1"
    print(
        f"pip-audit: no known vulnerabilities in {len(audited)} packages"
        + (f" ({unreached} could not be audited)" if unreached else "")
    )
    return True


if __name__ == "__main__":
    ok = run_bandit()
    ok = run_pip_audit() and ok
    sys.exit(0 if ok else 1)
