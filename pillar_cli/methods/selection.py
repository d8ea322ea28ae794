"""Choosing the run reported per (method, k, ε) cell.

- val (the paper's protocol): the hyper-parameters with the best mean val accuracy over seeds. The val split
  holds private labels and that choice is NOT accounted in ε; whoever selects says so in what it writes.
- accounted: the private selection (methods/accounted.py) already released one run per seed of every private
  cell; the cell reports those runs, whatever their hyper-parameters. Non-private cells are still chosen on
  val.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.model import RunKey
from pillar_cli.privacy.basis import ChosenBy

VAL_NOTE = (
    "hyper-parameters were selected on the val split's labels; that selection is NOT accounted in the "
    "reported ε"
)
ACCOUNTED_NOTE = (
    "each private (method, k, ε) cell and seed released the best of a random number of trials by "
    "their noisy val scores (Papernot & Steinke); the reported ε covers training AND that selection "
    "(selection_ledger); non-private cells were selected on val"
)
NOTHING_SELECTED_NOTE = (
    "one configuration per (method, k, ε) cell: no run was selected, so no label outside a DP "
    "release chose anything"
)


def selection_note(selection: list[SelectedCell], accounted: bool) -> str:
    """What chose the model's runs, in words, for every reader of the model."""
    if accounted:
        return ACCOUNTED_NOTE
    return NOTHING_SELECTED_NOTE if all(cell.selected == ChosenBy.NOTHING for cell in selection) else VAL_NOTE


def select_on_val(
    keys: list[RunKey], val_accuracies: list[float], accounted: bool = False
) -> list[SelectedCell]:
    """Per (method, k, ε): the (lr, steps, batch, ridge) with the highest mean val accuracy over seeds (ties:
    fewer steps); with `accounted`, a private cell's runs are its released runs, one per seed, taken as they
    are."""
    groups: dict[tuple, dict[tuple, list[int]]] = defaultdict(lambda: defaultdict(list))
    for run_id, key in enumerate(keys):
        released = accounted and math.isfinite(key.epsilon)
        groups[key.cell][() if released else key.hyper_parameters].append(run_id)
    selection = []
    for (method, k, epsilon), by_config in groups.items():
        means = {hp: float(np.mean([val_accuracies[i] for i in ids])) for hp, ids in by_config.items()}
        best = max(means, key=lambda hp: (means[hp], -hp[1] if hp else 0))
        run_ids = by_config[best]
        chosen = [keys[i].hyper_parameters for i in run_ids]
        lr, steps, batch, ridge = (_one_or_all(values) for values in zip(*chosen))
        selection.append(
            SelectedCell(
                method=method,
                k="full" if k is None else k,
                epsilon=epsilon,
                lr=lr,
                steps=steps,
                batch_size=batch,
                ridge=ridge,
                run_ids=run_ids,
                val_accuracy_mean=means[best],
                selected=_how(best, len(by_config)),
            )
        )
    return selection


def _how(best: tuple, candidates: int) -> ChosenBy:
    """What chose the cell's run: the accounted selection (inside ε), nothing (one configuration), or val."""
    if best == ():
        return ChosenBy.ACCOUNTED
    return ChosenBy.NOTHING if candidates == 1 else ChosenBy.VAL


def _one_or_all(values: tuple) -> object:
    """A hyper-parameter shared by the seeds' runs, or each seed's value when the selection differed."""
    return values[0] if len(set(values)) == 1 else list(values)
