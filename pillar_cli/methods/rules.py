"""The default rule: k, the learning rate and the number of steps that `train-private` uses when they are not
given, set from the number of private rows n, the target ε and the batch size B alone — fixed in advance,
reading no label, so a cell has one configuration per seed and nothing is chosen on private data outside ε.

- k = round(√(n·ε)), at least 2, at most the projection's k_max (non-private cells: k_max). PILLAR's
  trade-off: each kept dimension adds noise to the head, so the budget n·ε pays for more of them.
- steps = max(100, ⌈16·n/B⌉): 16 epochs of expected batches.
- lr = n·ε/(32·steps), so that lr·steps = n·ε/32 grows linearly with ε (the linear scaling rule of Panda et
  al., 2024) and with n (ε·B/512 once the steps exceed their floor); non-private cells take 2 (their runs are
  the same clipped SGD without noise: at 0.1 they stopped short of the fit on MNIST digits and Fashion-MNIST
  features, and without the clip they varied from seed to seed; docs/benchmarks.md).

On that path nothing is chosen on the val split, so its labelled rows train the heads beside the private rows
(inside ε, which covers every training row) instead of lying idle: the plan decides it (methods/plan.py,
`val_role`).

The constants were measured on the demo's MNIST-5k splits and checked on scikit-learn's digits
(docs/benchmarks.md, `benchmarks/bench_honest.py`); the rule reads n as DP-SGD's sampling rate B/n already
does.
"""

from __future__ import annotations

import math
from dataclasses import replace

from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.grid import SweepGrid

RULE_FIELDS = ("k", "lr", "steps")
RULE = "k = round(√(n·ε)) in [2, k_max]; steps = max(100, ⌈16·n/B⌉); lr = n·ε/(32·steps) (2 without privacy)"
MIN_STEPS, EPOCHS, RATE_PER_ROW, NON_PRIVATE_LR = 100, 16, 1 / 32, 2.0


def rule_k(n: float, epsilon: float, k_max: int) -> int:
    """ε ≤ 0 gives 2: the budget check that follows refuses it with its own message."""
    return k_max if math.isinf(epsilon) else max(2, min(k_max, round(math.sqrt(max(n * epsilon, 0.0)))))


def rule_steps(n: float, batch_size: int) -> int:
    return max(MIN_STEPS, math.ceil(EPOCHS * n / batch_size))


def rule_lr(n: float, epsilon: float, batch_size: int) -> float:
    return NON_PRIVATE_LR if math.isinf(epsilon) else RATE_PER_ROW * n * epsilon / rule_steps(n, batch_size)


def rule_record(grid: SweepGrid) -> dict | None:
    """What a model records of the rule: the fields it set and the rule itself (None when it set none)."""
    return {"fields": sorted(grid.rules), "rule": RULE} if grid.rules else None


def ruled_grids(grid: SweepGrid, k_max: int) -> list[SweepGrid]:
    """The grid (set for its rows) as one grid per ε with the rule's values in the fields it names in `rules`;
    the grid itself when it names none. Methods with their own step rule (noisy-sgd, the second-order heads)
    keep it in a grid of their own, so that the others of the same request still take the rule's steps."""
    if not grid.rules:
        return [grid]
    n, (batch, *others) = grid.rows, grid.batch_sizes
    if n is None or others or batch is None:
        raise ValueError("ruled_grids needs a grid set for its rows (for_rows) with one batch size")
    ruled = [m for m in grid.methods if not get_method(m).steps_rule]
    own = [m for m in grid.methods if get_method(m).steps_rule]
    return [
        replace(
            grid,
            methods=methods,
            epsilons=[epsilon],
            rules=frozenset(),
            ks=[rule_k(n, epsilon, k_max)] if "k" in grid.rules else grid.ks,
            lrs=[rule_lr(n, epsilon, batch)] if "lr" in grid.rules else grid.lrs,
            steps=[rule_steps(n, batch)] if "steps" in grid.rules and methods is ruled else grid.steps,
        )
        for epsilon in grid.epsilons
        for methods in (ruled, own)
        if methods
    ]
