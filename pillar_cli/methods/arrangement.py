"""What a sweep trains on, arranged from the splits an entry point read (the CLI's files, `sweep()`'s arrays,
the estimator's). What the labelled val split does is decided
here (`val_role`): on the default path nothing is chosen on it, so its rows train the heads beside the private
rows; otherwise it chooses each cell's run, or is held out."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from pillar_cli.errors import UsageError, param
from pillar_cli.methods.data import LabelledSplit, SplitT, SweepData, sweep_data
from pillar_cli.methods.grid import SweepGrid
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.rules import ruled_grids
from pillar_cli.privacy.count import RowCount
from pillar_cli.projection import PublicPCA


def arrange(
    request: SweepRequest,
    pca: PublicPCA,
    private: SplitT,
    val: SplitT | None,
    num_classes: int,
    *,
    private_fraction: float = 1.0,
    rows_named_by: str | None = None,
    **context: Any,
) -> SweepData:
    """The sweep's data: the private rows, joined by the val rows where they train, a seeded fraction of them
    where one is asked for (Figure 7 of the paper), and the val rows where they select. `rows_named_by` names
    the rows' source (a fingerprint or a file's content): with their ids it names the training rows for their
    released count. `context`: the rest of `SweepData` (public rows, a warm start, the source's name, ...)."""
    role = val_role(request, len(pca.components_))
    if role == "train" and val is None and request.val == "train":
        raise UsageError(f"{param('val')} train needs val rows to train on (X_val, y_val)")
    training = private.joined(val) if role == "train" and val is not None else private
    training = training.subsample(private_fraction)
    selecting = val if role == "select" else None
    return sweep_data(
        pca,
        training,
        num_classes,
        selecting,
        rows_named=None if rows_named_by is None else rows_digest(rows_named_by, training),
        **context,
    )


def rows_digest(named_by: str, training: LabelledSplit) -> str:
    """What names the training rows for their released count: their source and row ids (the same rows embedded
    by another backbone read the same count), and their persons where they are grouped."""
    digest = hashlib.sha256(f"{named_by}|{training.name}".encode())
    units = training.units
    for column in (training.index, *((units.ids,) if units.grouped else ())):
        digest.update(np.ascontiguousarray(column, dtype=np.int64).data)
    return digest.hexdigest()


def val_role(request: SweepRequest, k_max: int) -> str:
    """What a sweep does with the labelled val split: 'select' (it chooses each cell's run among its
    configurations, or scores the one), 'train' (its rows join the private rows: nothing is chosen on them) or
    'none' (not read). The request's `val` auto trains on the default path (the rule sets the grid, one
    configuration per cell)."""
    asked, grid = request.val, request.grid()
    configurations = configurations_per_cell(grid, k_max)
    accounted = request.selection is not None
    choosing = configurations > 1 or accounted
    if choosing and asked != "auto":
        why = (
            f"{param('select')} accounted scores its trials on it"
            if accounted
            else f"it chooses each (method, k, ε) cell's run among {configurations} configurations"
        )
        raise UsageError(
            f"{param('val')} {asked} takes the val split away from the selection: {why}",
            hint=f"give one configuration per cell (leave {param('k')}, {param('lr')} and "
            f"{param('steps')} to the default rule), or drop {param('val')}",
        )
    if asked == "auto":
        return "train" if grid.rules and not choosing else "select"
    return "train" if asked == "train" else "none"


def configurations_per_cell(grid: SweepGrid, k_max: int) -> int:
    """The most configurations a (method, k, ε) cell of the request holds per seed: more than one means a
    choice, on val or accounted. The number does not depend on n (the rule sets one value per field and ε)."""
    rows = RowCount.exact(1)
    return max(len(g.configs(m)) for g in ruled_grids(grid.for_rows(rows), k_max) for m in g.methods) // len(
        grid.seeds
    )
