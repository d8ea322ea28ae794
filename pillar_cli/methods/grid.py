"""The sweep request: which methods, k, ε and hyper-parameters to train, as the CLI and the Python API both
ask for it (keyword-only), and the rules that need the number of private rows (all-row batches, a method's own
step count), which read the row count a sweep releases (privacy/count.py), never the exact n."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pillar_cli.errors import UsageError, param
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.base import DEFAULT_STEPS
from pillar_cli.methods.catalog import get_method
from pillar_cli.privacy.count import RowCount
from pillar_cli.projection import PublicPCA

__all__ = ["AUTO", "DEFAULT_BATCH", "DEFAULT_STEPS", "SweepGrid", "check_grid"]

DEFAULT_BATCH = 512
AUTO = "auto"  # a k, lr or steps left to the default rule


def check_grid(grid: SweepGrid, pca: PublicPCA, num_classes: int) -> None:
    """Fail before any training if a method or k of the grid cannot work with this projection."""
    for name in grid.methods:
        method = get_method(name)
        for k in [k for k in grid.ks if k is not None]:
            method.check_k(k, pca, num_classes)


@dataclass(frozen=True, kw_only=True)
class SweepGrid:
    """What a sweep trains; `for_rows(count)` sets it for the row count (configurations need it)."""

    methods: list[str]
    ks: list[int | None]  # None = full dimension, no projection
    epsilons: list[float]  # math.inf = non-private
    lrs: list[float]
    seeds: list[int]
    steps: list[int] | None = None  # None: each method's default (DEFAULT_STEPS; noisy-sgd: its own rule, n²)
    batch_sizes: list[int | None] = field(default_factory=lambda: [DEFAULT_BATCH])  # None: all private rows
    momentum: float = 0.0
    weight_decay: float = 0.0
    ridges: tuple[float | None, ...] = (None,)  # closed-form heads' λ (None: the method's default)
    # DP-SGD methods release the iterates' moving average of this decay (0: the last iterate)
    ema: float = 0.0
    rows: float | None = None  # the row count it is set for (by `for_rows`): ñ, or n where n is not private
    # of k, lr, steps: left to the default rule (methods/rules.py), set per ε
    rules: frozenset[str] = frozenset()

    @classmethod
    def with_auto(
        cls,
        *,
        ks: Sequence[int | None] | str,
        lrs: Sequence[float] | str,
        steps: Sequence[int] | str | None,
        **fields: Any,
    ) -> SweepGrid:
        """The grid whose k, lr or steps given as "auto" are left to the default rule (methods/rules.py)."""
        given = {"k": ks, "lr": lrs, "steps": steps}
        for name, value in given.items():
            if isinstance(value, str) and value != AUTO:
                raise UsageError(f"{param(name)} takes a list of values or '{AUTO}'; got '{value}'")
        rules = frozenset(name for name, value in given.items() if isinstance(value, str))
        return cls(
            ks=[] if isinstance(ks, str) else list(ks),
            lrs=[] if isinstance(lrs, str) else list(lrs),
            steps=None if isinstance(steps, str) or steps is None else list(steps),
            rules=rules,
            **fields,
        )

    def for_rows(self, count: RowCount) -> SweepGrid:
        """The grid for the row count: batch size None becomes every row (full batch, sampling rate 1)."""
        return replace(
            self,
            rows=count.value,
            batch_sizes=[count.all_rows if size is None else size for size in self.batch_sizes],
        )

    def overridden_rules(self) -> list[str]:
        """What given --steps replace: each method's own step rule, as a sentence."""
        if self.steps is None or self.rows is None:
            return []
        rows = self.rows
        return [
            f"{m.name} runs --steps {','.join(map(str, self.steps))} instead of {m.steps_rule} = "
            f"{m.default_steps(rows):,} steps"
            for m in map(get_method, self.methods)
            if m.steps_rule
        ]

    def configs(self, method: str) -> list[RunConfig]:
        batch_sizes = [size for size in self.batch_sizes if size is not None]  # for_rows set every size
        if self.rows is None or len(batch_sizes) != len(self.batch_sizes):
            raise ValueError("SweepGrid.configs needs the grid for its rows: call for_rows(count) first")
        configs = get_method(method).configs(
            lrs=self.lrs,
            steps=self.steps,
            batch_sizes=batch_sizes,
            seeds=self.seeds,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            ridges=self.ridges,
            rows=self.rows,
        )
        return [replace(c, ema=self.ema) for c in configs] if self.ema else configs

    def cells(self) -> list[tuple[str, int | None, float]]:
        """(method, k, ε) cells; a single-cell method (dpsgd) has the one cell k = full."""
        return [
            (m, k, e)
            for m in self.methods
            for k in ([None] if get_method(m).single_cell else self.ks)
            for e in self.epsilons
        ]

    def total_steps(self, shard: tuple[int, int] = (0, 1)) -> int:
        return sum(config.steps for _, config in self.points(shard))

    def points(
        self, shard: tuple[int, int] = (0, 1)
    ) -> list[tuple[tuple[str, int | None, float], RunConfig]]:
        """Every run of the sweep, or every n-th starting at i for shard (i, n)."""
        index, count = shard
        everything = [(cell, config) for cell in self.cells() for config in self.configs(cell[0])]
        return everything[index::count]
