"""The timing the side-by-side benchmarks share (run as scripts: this folder is on their import path)."""

from __future__ import annotations

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
