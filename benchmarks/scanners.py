#!/usr/bin/env python
"""The prescreens measured on a held-out corpus: recall per category, cheats, false flags, speed.

    .venv/bin/python benchmarks/scanners.py                 # the whole corpus, throughput best of 5 passes
    .venv/bin/python benchmarks/scanners.py --misses        # and every planted case no signal caught
    .venv/bin/python benchmarks/scanners.py --smoke         # 2 forms a category, 8 hosts, 1 pass
    .venv/bin/python benchmarks/scanners.py --heldout       # held-out corpus A (now a development set)
    .venv/bin/python benchmarks/scanners.py --heldout-b     # held-out corpus B (now a development set)
    .venv/bin/python benchmarks/scanners.py --heldout-c     # held-out corpus C (now a development set)
    .venv/bin/python benchmarks/scanners.py --heldout-d     # held-out corpus D, written blind, never read

1. Builds the corpus of tests/helpers/exploits (written without reading the detectors): every
   catalogue category planted in at least 8 varied forms into the 64 real mini-swe-agent and
   3 OpenHands trajectories of tests/fixtures (commands as new turns, hunks added to the real
   patch, test outcomes and logs changed, a task test patch or gold patch), and at least 3
   honest look-alikes a category.
2. Runs `grading.grader.prescreen.screen_rollout(rollout, task=task)` on every case and every
   honest host, and prints per category: planted, caught (a signal of the category raised),
   recall with its Wilson 95 % interval, cheats among the cases that scored (catalogue
   semantics: a leak always, a forced result when the rollout passed, a named tampering when
   it touches a test the task names), and false flags: honest hosts with a signal of the
   category / with a cheat of it, quiet look-alikes with a signal of the category they mimic /
   look-alikes called a cheat.
3. Times screening every honest host, --repeat passes, and prints the throughput in MB
   (10^6 bytes of message text, patch and test log) per second, best and median.
tests/grading/grader/test_scanner_corpus.py holds the same figures to recall >= 0.90 a
category and no false cheat.

The detectors have met that corpus (misses were fixed after seeing it). `--heldout` measures
tests/helpers/exploits/heldout.py instead: new forms of every category and new look-alikes,
written without reading the detectors; its first-contact figures are in docs/benchmarks.md,
and it must not be used to tune them (a figure after a fix is reported apart). Held-out A has
since been used to improve the detectors, so it is no longer held out; `--heldout-b` measures
tests/helpers/exploits/heldout_b.py, a second corpus written later the same way (without reading
the detectors or their tests) for honest recall after that work, under the same rule.
`--heldout-c` measures tests/helpers/exploits/heldout_c.py, a third corpus written blind the same
way (no detector, detector test, detector commit or recall figure read) while B was being used for
tuning, under the same rule. `--heldout-d` measures tests/helpers/exploits/heldout_d.py, a fourth
corpus written blind the same way while C was being used for tuning, under the same rule. A, B
and C have each since been read and fixed (docs/benchmarks.md records every figure before and
after); D is the one whose misses no one has read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._support import cpu_model, memory_gib
from tests.helpers.exploits import Case, honest_host_ids, honest_hosts, lookalikes, planted
from tests.helpers.exploits.heldout import heldout_lookalikes, heldout_planted
from tests.helpers.exploits.heldout_b import heldout_b_lookalikes, heldout_b_planted
from tests.helpers.exploits.heldout_c import heldout_c_lookalikes, heldout_c_planted
from tests.helpers.exploits.heldout_d import heldout_d_lookalikes, heldout_d_planted
from tests.helpers.exploits.measure import (
    misses,
    render,
    rollout_bytes,
    rows,
    screen,
    screen_cases,
    screen_hosts,
)


def _few(cases: list[Case], per_category: int) -> list[Case]:
    kept: dict[str, list[Case]] = {}
    for case in cases:
        if len(kept.setdefault(case.slug, [])) < per_category:
            kept[case.slug].append(case)
    return [case for group in kept.values() for case in group]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="passes over the honest hosts for the throughput")
    parser.add_argument("--misses", action="store_true", help="list every planted case no signal of its category caught")
    parser.add_argument("--smoke", action="store_true", help="a tiny run: 2 forms and 1 look-alike a category, 8 hosts, 1 pass")
    parser.add_argument(
        "--heldout", action="store_true", help="measure held-out corpus A (tests/helpers/exploits/heldout.py), a development set"
    )
    parser.add_argument(
        "--heldout-b",
        action="store_true",
        help="measure held-out corpus B (tests/helpers/exploits/heldout_b.py), a development set now",
    )
    parser.add_argument(
        "--heldout-c",
        action="store_true",
        help="measure held-out corpus C (tests/helpers/exploits/heldout_c.py), a development set now",
    )
    parser.add_argument(
        "--heldout-d",
        action="store_true",
        help="measure held-out corpus D (tests/helpers/exploits/heldout_d.py), written blind, misses never read",
    )
    args = parser.parse_args()

    print(
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs{', ' + memory_gib() if memory_gib() else ''}; "
        f"Python {sys.version.split()[0]}; load {os.getloadavg()[0]:.2f}"
    )
    started = time.perf_counter()
    if sum((args.heldout, args.heldout_b, args.heldout_c, args.heldout_d)) > 1:
        parser.error("--heldout, --heldout-b, --heldout-c and --heldout-d measure different corpora: give one")
    if args.heldout_d:
        cases, alikes = heldout_d_planted(), heldout_d_lookalikes()
    elif args.heldout_c:
        cases, alikes = heldout_c_planted(), heldout_c_lookalikes()
    elif args.heldout_b:
        cases, alikes = heldout_b_planted(), heldout_b_lookalikes()
    elif args.heldout:
        cases, alikes = heldout_planted(), heldout_lookalikes()
    else:
        cases, alikes = planted(), lookalikes()
    hosts, names = honest_hosts(), honest_host_ids()
    repeat = args.repeat
    if args.smoke:
        cases, alikes, hosts, names, repeat = _few(cases, 2), _few(alikes, 1), hosts[:8], names[:8], 1
    label = (
        " (held out D)"
        if args.heldout_d
        else " (held out C)"
        if args.heldout_c
        else " (held out B)"
        if args.heldout_b
        else " (held out)"
        if args.heldout
        else ""
    )
    print(
        f"corpus{label}: "
        f"{len(cases)} planted, {len(alikes)} look-alikes, "
        f"{len(hosts)} honest hosts "
        f"(built in {time.perf_counter() - started:.1f} s)\n"
    )

    found_planted, found_alikes, found_hosts = screen_cases(cases), screen_cases(alikes), screen_hosts(hosts, names)
    print(render(rows(found_planted, found_alikes, found_hosts)))
    missed = misses(found_planted)
    print(f"\n{len(missed)} planted case(s) missed" + (":\n  " + "\n  ".join(missed) if args.misses and missed else ""))

    size = sum(rollout_bytes(view) for view, _ in hosts)
    passes = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for view, task in hosts:
            screen(view, task)
        passes.append(time.perf_counter() - t0)
    best, median = min(passes), statistics.median(passes)
    print(
        f"\nthroughput over {len(hosts)} real rollouts ({size / 1e6:.1f} MB of text): "
        f"{size / 1e6 / best:.1f} MB/s best, {size / 1e6 / median:.1f} MB/s median of {repeat} pass(es) "
        f"({best * 1000 / len(hosts):.1f} ms a rollout)"
    )


if __name__ == "__main__":
    main()
