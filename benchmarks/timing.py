"""The timing and peak-memory measures the benchmarks share (run as scripts: this folder is on their import
path)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import TypeVar

Result = TypeVar("Result")


def timed(run: Callable[[], Result], repeats: int = 3) -> tuple[float, Result]:
    """(the fastest of `repeats` runs in wall-clock seconds, its result)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


# runs its arguments as its only child and prints the child's peak RSS (ru_maxrss, KiB on Linux)
PEAK_RSS = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, "
    "stderr=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def measured(argv: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one command, run under a fresh wrapper whose only child it is."""
    start = time.perf_counter()
    peak = subprocess.run(
        [sys.executable, "-c", PEAK_RSS, *argv], check=True, capture_output=True, text=True
    ).stdout
    return time.perf_counter() - start, int(peak) / 1024
