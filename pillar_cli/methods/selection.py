"""Selection on the val split: per (method, k, ε), the hyper-parameters with the best mean val accuracy over seeds.

The val split holds private labels; whoever selects says so in what it writes (see sweep.SELECTION_NOTE).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from pillar_cli.artifacts.model import RunKey


def select_on_val(keys: list[RunKey], val_accuracies: list[float]) -> list[dict]:
    """Per (method, k, ε): the (lr, steps, batch, ridge) with the highest mean val accuracy over seeds (ties: fewer
    steps)."""
    groups: dict[tuple, dict[tuple, list[int]]] = defaultdict(lambda: defaultdict(list))
    for run_id, key in enumerate(keys):
        groups[key.cell][key.hyper_parameters].append(run_id)
    selection = []
    for (method, k, epsilon), by_config in groups.items():
        means = {hp: float(np.mean([val_accuracies[i] for i in ids])) for hp, ids in by_config.items()}
        best = max(means, key=lambda hp: (means[hp], -hp[1]))
        lr, steps, batch, ridge = best
        selection.append({"method": method, "k": "full" if k is None else k, "epsilon": epsilon, "lr": lr,
                          "steps": steps, "batch_size": batch, "ridge": ridge, "run_ids": by_config[best],
                          "val_accuracy_mean": means[best]})
    return selection
