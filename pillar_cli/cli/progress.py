"""Progress on stderr for long work: a rich bar on a terminal, a line every PILLAR_PROGRESS_SECONDS elsewhere,
nothing with --quiet; every step also raises an interrupt a signal left behind (cli/boundary.py)."""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from pillar_cli.cli.boundary import check_interrupted
from pillar_cli.cli.common import stderr


@contextmanager
def progress_bar(description: str, total: int, unit: str = "items") -> Iterator[Callable[[int], None]]:
    """Progress on stderr; yields `advance(n)`, which also raises an interrupt a signal left behind. On a
    terminal a rich bar with the rate and time left; elsewhere (a scheduler's log, a pipe) one line every
    PILLAR_PROGRESS_SECONDS (default 10): done / total, rate, time left; with --quiet nothing."""
    if stderr.quiet or not stderr.is_terminal:
        every = math.inf if stderr.quiet else float(os.environ.get("PILLAR_PROGRESS_SECONDS", 10))
        with _progress_lines(description, total, unit, every) as advance:
            yield advance
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(unit),
        TimeRemainingColumn(),
        console=stderr,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)

        def advance(n: int = 1) -> None:
            check_interrupted()
            progress.advance(task, n)

        yield advance


class _RateColumn(ProgressColumn):
    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        return Text("" if task.speed is None else f"{task.speed:,.0f} {self.unit}/s")


@contextmanager
def _progress_lines(
    description: str, total: int, unit: str, every: float = 10.0
) -> Iterator[Callable[[int], None]]:
    start = last = time.monotonic()
    done = 0

    def advance(n: int = 1) -> None:
        nonlocal done, last
        check_interrupted()
        done += n
        now = time.monotonic()
        if now - last >= every:
            last = now
            rate = done / (now - start)
            left = f", {(total - done) / rate:,.0f} s left" if rate > 0 and total > done else ""
            print(
                f"{description}: {done:,}/{total:,} {unit} ({100 * done / max(total, 1):.0f} %), "
                f"{rate:,.0f} {unit}/s{left}",
                file=sys.stderr,
                flush=True,
            )

    yield advance
