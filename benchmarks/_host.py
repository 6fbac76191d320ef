"""What the benchmarks print about the machine they ran on (shared by every script here)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def memory_gib() -> str:
    """Total memory as '24 GiB', or '' where /proc/meminfo is not there."""
    try:
        kb = int(next(line for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")).split()[1])
    except (OSError, StopIteration, ValueError):
        return ""
    return f"{kb / 1024 / 1024:.0f} GiB"


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def postgres_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute("SHOW server_version").fetchone()[0]
