#!/usr/bin/env python
"""Patch clusters on the real trajectories and on the demo: what clustering finds, and its cost.

    .venv/bin/python benchmarks/clusters.py
    .venv/bin/python benchmarks/clusters.py --demo-steps 3 --demo-groups 8 --demo-rollouts 8

1. The 16 real mini-swe-agent trajectories (tests/fixtures/mini-swe-agent-gemini-3-pro),
   grouped by instance as the importer groups them (one rollout per instance here), each
   with its task's FAIL_TO_PASS / PASS_TO_PASS names, and the 3 OpenHands rollouts
   (tests/fixtures/openhands-multi-swe-bench, `test_result.git_patch`): per group the
   files that matter, the extra files and the label.
2. The files the real agents wrote during their runs (`cat <<'EOF' > NAME`, `touch NAME`
   in their commands; gone from the submitted patch, as mini-swe-agent's last step deletes
   them or leaves them untracked) and whether the scratch-name rules count them apart: the
   rules in grading/rollouts/clusters.py were picked from this list.
3. The demo data (grading/ingest/demo.py): clusters per group, distinct solutions per
   group, extra files.
4. Time per group (clustering only; patches already in memory), and the worst a hostile
   group costs: 8 rollouts, each a patch just under every cap (MAX_ROWS hunk rows of
   MAX_ROW_CHARS characters in all), and 8 just over them.

Pure: no Django, no database.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grading.ingest.demo import demo_groups  # noqa: E402
from grading.ingest.importers.mini_swe_agent import rollout_from_trajectory  # noqa: E402
from grading.rollouts import clusters  # noqa: E402
from grading.rollouts.clusters import cluster_patches, is_scratch_name  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
MINI_SWE_AGENT = FIXTURES / "mini-swe-agent-gemini-3-pro"
OPENHANDS = FIXTURES / "openhands-multi-swe-bench" / "output.jsonl"
WRITE_SUFFIXES = (".py", ".md", ".txt", ".sh", ".cfg", ".toml", ".json", ".rst")


def test_names(tests: dict | None) -> list[str]:
    names = []
    for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        for outcome in ("success", "failure"):
            names += ((tests or {}).get(kind) or {}).get(outcome) or []
    return names


def real_groups() -> list[tuple[str, list[tuple[int, str]], list[str], list[str]]]:
    """(instance, [(index, patch)], test names, commands) per instance."""
    by_instance: dict[str, list] = {}
    for traj_path in sorted((MINI_SWE_AGENT / "trajs").glob("*/*.traj.json")):
        instance_id = traj_path.parent.name
        report_path = MINI_SWE_AGENT / "logs" / instance_id / "report.json"
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        rollout = rollout_from_trajectory(
            json.loads(traj_path.read_text()), index=0, report=report, ref=str(traj_path.relative_to(MINI_SWE_AGENT))
        )
        by_instance.setdefault(instance_id, []).append(rollout)
    groups = []
    for instance_id, rollouts in by_instance.items():
        patches = [(k, r.get("patch") or "") for k, r in enumerate(rollouts)]
        names = [n for r in rollouts for n in test_names(r.get("tests"))]
        commands = [m.get("action") or "" for r in rollouts for m in r["messages"] if m.get("role") == "assistant"]
        groups.append((instance_id, patches, names, commands))
    for line in OPENHANDS.read_text().splitlines():
        record = json.loads(line)
        groups.append((f"{record['instance_id']} (OpenHands)", [(0, record["test_result"]["git_patch"])], [], []))
    return groups


def written_files(commands: list[str]) -> set[str]:
    """Relative file names the commands write with `> NAME` or create with `touch NAME`."""
    names = set()
    for command in commands:
        tokens = command.split()
        for i, token in enumerate(tokens[:-1]):
            if token in (">", "touch"):
                name = tokens[i + 1].strip("'\"")
                if name.endswith(WRITE_SUFFIXES) and not name.startswith(("/", "&", "$")):
                    names.add(name)
    return names


def show_group(title: str, patches, names) -> tuple[int, int, float]:
    started = time.perf_counter()
    g = cluster_patches(patches, tests=names)
    elapsed = time.perf_counter() - started
    print(
        f"  {title}: {g.distinct} cluster{'s' if g.distinct != 1 else ''} for {len(patches)} rollout"
        f"{'s' if len(patches) != 1 else ''}"
    )
    for r in g.rollouts:
        extra = f"; extra: {', '.join(r.extra_files)}" if r.extra_files else ""
        print(f"    #{r.index} {r.label} — {', '.join(r.files) or '(no file)'}{extra}{'; ' + r.note if r.note else ''}")
    return g.distinct, sum(r.extra for r in g.rollouts), elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo-steps", type=int, default=3)
    parser.add_argument("--demo-groups", type=int, default=8)
    parser.add_argument("--demo-rollouts", type=int, default=8)
    args = parser.parse_args()

    print("== Real trajectories: 16 mini-swe-agent (Gemini 3 Pro, SWE-bench Verified) + 3 OpenHands, one group per instance")
    real = real_groups()
    times, all_commands = [], []
    for instance_id, patches, names, commands in real:
        _, _, elapsed = show_group(instance_id, patches, names)
        times.append(elapsed)
        all_commands += commands
    print(
        f"  {len(real)} groups; clustering {statistics.median(times) * 1000:.2f} ms per group (median), "
        f"{max(times) * 1000:.2f} ms max"
    )

    print("\n== Files the real agents wrote during their runs (not in the submitted patches)")
    written = sorted(written_files(all_commands))
    scratch = [n for n in written if is_scratch_name(n)]
    kept = [n for n in written if not is_scratch_name(n)]
    print(f"  {len(written)} names; {len(scratch)} match a scratch name: {', '.join(scratch)}")
    print(f"  {len(kept)} do not (counted apart only when no other rollout and no test touches them): {', '.join(kept)}")

    print(
        f"\n== Demo data: demo_groups(steps={args.demo_steps}, groups_per_step={args.demo_groups}, "
        f"n_rollouts={args.demo_rollouts})"
    )
    distinct, extras, times, rollouts = Counter(), 0, [], 0
    for group in demo_groups(steps=args.demo_steps, groups_per_step=args.demo_groups, n_rollouts=args.demo_rollouts):
        patches = [(r["index"], r["patch"]) for r in group["rollouts"]]
        names = list(group["task"].get("FAIL_TO_PASS") or []) + [n for r in group["rollouts"] for n in test_names(r["tests"])]
        started = time.perf_counter()
        g = cluster_patches(patches, tests=names)
        times.append(time.perf_counter() - started)
        distinct[g.distinct] += 1
        extras += sum(r.extra for r in g.rollouts)
        rollouts += len(patches)
    print(
        f"  {sum(distinct.values())} groups, {rollouts} rollouts; distinct solutions per group: "
        + ", ".join(f"{n} in {c} group{'s' if c != 1 else ''}" for n, c in sorted(distinct.items()))
    )
    print(
        f"  extra files: {extras}; clustering {statistics.median(times) * 1000:.2f} ms per group (median), "
        f"{max(times) * 1000:.2f} ms max"
    )

    print("\n== Hostile groups: 8 rollouts, each patch at (or past) the caps")
    for title, rows, width in (
        ("under the caps", clusters.MAX_ROWS - 10, clusters.MAX_PATCH_CHARS // clusters.MAX_ROWS - 12),
        ("past the line cap", clusters.MAX_ROWS + 10, 10),
        ("past the size cap", clusters.MAX_ROWS // 2, 2 * clusters.MAX_PATCH_CHARS // clusters.MAX_ROWS + 1),
    ):
        patches = []
        for index in range(8):
            body = "".join(f"+{index} {'x' * width} {n}\n" for n in range(rows))
            patches.append((index, f"--- a/big.py\n+++ b/big.py\n@@ -0,0 +1,{rows} @@\n{body}"))
        started = time.perf_counter()
        g = cluster_patches(patches)
        elapsed = time.perf_counter() - started
        size = sum(len(p) for _, p in patches)
        print(
            f"  {title}: {size / 8 / 1e6:.2f} MB per patch, {rows:,} rows; {g.distinct} clusters in {elapsed:.2f} s "
            f"({g.rollouts[0].note or 'compared line by line'})"
        )


if __name__ == "__main__":
    main()
