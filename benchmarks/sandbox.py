"""Benchmark: what the check sandbox costs — `true` run in it against `true` run directly.

    .venv/bin/python benchmarks/sandbox.py [--files 30000] [--small 100] [--repeat 10] [--extra DIR ...] [--no-swerex]

Builds two worktrees in a scratch directory: `--small` generated Python modules (a small
package) and a large one of up to `--files` files copied from this Python's site-packages,
its standard library, then `--extra` (default /usr/include); no .pyc, none over 1 MB. Then
times, `--repeat` times each (median and slowest):

1. `sh -c true` started directly (subprocess, no sandbox): the floor.
2. `true` through `Bubblewrap.run` on each worktree: the namespaces, the tmpfs layer, the size
   walk (`tree_bytes`), the worktree streamed in by tar, the process's teardown. The first run
   also pays the cached probe; it is timed apart.
3. `true` through `SweRex.run` against a `swerex-remote` started on loopback (swe-rex, the dev
   extra): tar, upload, one /execute. No container here, so this is the protocol's cost only.

As root, the sandbox runs as a uid of its own (64,200 here); otherwise as this user.
"""

from __future__ import annotations

import argparse
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from _support import cpu_model, load_average, memory_gib, usable_cores

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grading.repos.sandbox import Bubblewrap, SweRex, tree_bytes  # noqa: E402 (after the path is set)
from grading.repos.types import Limits  # noqa: E402

LIMITS = Limits(wall_s=120, cpu_s=120, memory_bytes=2 * 1024**3, processes=64, output_bytes=64_000, disk_bytes=64 * 1024**2)


def small_tree(root: Path, files: int) -> Path:
    for i in range(files):
        folder = root / "pkg" / f"mod{i // 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n" * 20)
    return root


def large_tree(root: Path, files: int, extra: list[str]) -> Path:
    """Up to `files` files of this Python's site-packages, its standard library, then `extra`."""
    copied = 0
    sources = [("site-packages", sysconfig.get_paths()["purelib"]), ("stdlib", sysconfig.get_paths()["stdlib"])]
    sources += [(Path(e).name or "extra", e) for e in extra if Path(e).is_dir()]
    for prefix, source in sources:
        for folder, dirs, names in os.walk(source):
            dirs[:] = sorted(d for d in dirs if d not in {"__pycache__", "site-packages"})
            for name in sorted(names):
                full = Path(folder) / name
                if name.endswith(".pyc") or full.is_symlink() or not full.is_file() or full.stat().st_size > 1024**2:
                    continue
                target = root / prefix / full.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(full, target)
                copied += 1
                if copied >= files:
                    return root
    return root


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def start_swerex() -> tuple[subprocess.Popen[bytes], str, str]:
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, "-m", "swerex.server", "--host", "127.0.0.1", "--port", "0", "--auth-token", token],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None  # stderr=PIPE
    banner, deadline = b"", time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], deadline - time.monotonic())
        chunk = os.read(proc.stderr.fileno(), 65536) if ready else b""
        if not chunk:
            break
        banner += chunk
        found = re.search(rb"Uvicorn running on (http://127\.0\.0\.1:\d+)", banner)
        if found:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, found.group(1).decode(), token
    proc.kill()
    raise SystemExit(f"swerex-remote did not start: {banner.decode(errors='replace')[-1000:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=30_000, help="files in the large worktree")
    parser.add_argument("--small", type=int, default=100, help="files in the small worktree")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--extra", nargs="*", default=["/usr/include"], help="more folders for the large worktree")
    parser.add_argument("--no-swerex", action="store_true", help="skip the SWE-ReX runner")
    args = parser.parse_args()

    print(f"{cpu_model()}, {usable_cores()} cores, {memory_gib()}, load {load_average():.2f}")
    with tempfile.TemporaryDirectory(prefix="gagar-bench-sandbox-") as scratch:
        base = Path(scratch)
        started = time.perf_counter()
        small = small_tree(base / "small", args.small)
        large = large_tree(base / "large", args.files, args.extra)
        trees = {"small": small, "large": large}
        sizes = {}
        for name, tree in trees.items():
            count = sum(1 for _ in tree.rglob("*") if _.is_file())
            walk = timed(lambda tree=tree: tree_bytes(tree), 3)
            sizes[name] = (count, tree_bytes(tree), statistics.median(walk))
        print(f"worktrees built in {time.perf_counter() - started:.1f} s")
        for name, (count, size, walk) in sizes.items():
            print(f"  {name:<6} {count:>7,} files, {size / 1024**2:8.1f} MB on tmpfs; tree_bytes() walk {walk * 1000:7.1f} ms")

        rows: list[tuple[str, list[float]]] = []
        rows.append(("direct: sh -c true", timed(lambda: subprocess.run(["sh", "-c", "true"], check=True), args.repeat)))
        sandbox = Bubblewrap(uids=(64_200,), lock_dir=base / "locks")
        first = timed(lambda: sandbox.run(small, "true", LIMITS), 1)
        rows.append(("bubblewrap, first run (probe)", first))
        for name, tree in trees.items():
            result = sandbox.run(tree, "find . -type f | wc -l", LIMITS)
            assert result.exit_status == 0 and int(result.output) == sizes[name][0], result  # noqa: S101
            rows.append((f"bubblewrap: true, {name}", timed(lambda tree=tree: sandbox.run(tree, "true", LIMITS), args.repeat)))
        if not args.no_swerex:
            server, url, token = start_swerex()
            try:
                rex = SweRex(url, token, scratch=str(base / "rex"))
                (base / "rex").mkdir()
                for name, tree in trees.items():
                    rows.append((f"swe-rex: true, {name}", timed(lambda tree=tree: rex.run(tree, "true", LIMITS), args.repeat)))
            finally:
                server.terminate()
                server.wait()

    floor = statistics.median(rows[0][1])
    print(f"\n{'case':<32} {'median ms':>10} {'slowest ms':>11} {'overhead ms':>12}")
    for name, times in rows:
        median = statistics.median(times)
        print(f"{name:<32} {median * 1000:10.1f} {max(times) * 1000:11.1f} {(median - floor) * 1000:12.1f}")
    print("\noverhead = median minus the direct run's median")
    return 0


if __name__ == "__main__":
    sys.exit(main())
