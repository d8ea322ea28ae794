"""`sweep(...)`: the CLI's train-private sweep for arrays, with keyword arguments and the paper's defaults."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.methods.accounted import AccountedSelection
from pillar_cli.methods.base import PrivacySettings, SweepData
from pillar_cli.methods.catalog import DEFAULT_METHOD
from pillar_cli.methods.grid import AUTO, DEFAULT_BATCH, SweepGrid
from pillar_cli.methods.public_rows import fitted_projection, refuse_fitted_rows
from pillar_cli.methods.plan import SweepOptions, configurations_per_cell, val_role
from pillar_cli.methods.sweep import SweepResult, run_sweep
from pillar_cli.projection import PublicPCA
from pillar_cli.randomness import NoiseSource


def sweep(X: np.ndarray, y: np.ndarray, X_val: np.ndarray | None = None, y_val: np.ndarray | None = None, *,
          projection: PublicPCA | None = None, public: np.ndarray | None = None,
          method: Sequence[str] = (DEFAULT_METHOD,), k: Sequence[int | None] | str = AUTO,
          epsilon: Sequence[float] = (1.0,), delta: float = 1e-5, accountant: str = "prv", clip: float = 1.0,
          lr: Sequence[float] | str = AUTO, steps: Sequence[int] | str | None = AUTO,
          batch_size: Sequence[int | None] = (DEFAULT_BATCH,), seed: Sequence[int] = (0,), momentum: float = 0.0,
          weight_decay: float = 0.0, ridge: Sequence[float | None] = (None,), engine: str = "fast",
          device: str = "auto", select: str | AccountedSelection = "val", ema: float = 0.0,
          public_labelled: tuple[np.ndarray, np.ndarray] | None = None,
          method_options: dict[str, Any] | None = None, noise_seed: int | None = None,
          n_public: bool = False, val: str = "auto") -> SweepResult:
    """Train every (method, k, ε) × (lr, steps, batch size, seed) on the private rows (X, y) and choose one run per
    (method, k, ε) and seed with (X_val, y_val). Labels are class indices 0..C−1; k None means all features.
    `public` fits the projection (or pass a fitted `projection`). `select`: "val" (the result's `selection` used the
    val labels, which ε does NOT account for), or "accounted" / an `AccountedSelection` (private cells run the
    Papernot–Steinke selection; ε covers it). k, lr and steps "auto" (the defaults, as train-private's): the
    default rule of methods/rules.py, from n, ε and the batch size, one value per ε (nothing to choose on val);
    `steps` None: each method's default (500 DP-SGD steps; noisy-sgd: Algorithm 1's n²); given, they replace
    noisy-sgd's n² too. A batch size None uses every private row in every step. DP-SGD methods release the moving
    average of their iterates with decay `ema` (0: the last iterate); adadps reads `public_labelled` = (X_pub, y_pub);
    `method_options`: a method's options by its name, e.g. {"em-disjunctions": DisjunctionOptions(literals=3)}
    (absent: its defaults).
    `seed` labels repetitions and seeds public randomness only; noise comes from fresh OS entropy unless
    `noise_seed` is given, which makes runs repeat exactly and leaves them NOT differentially private. Values derived
    from the number of private rows read a noisy count released inside ε (the result's `count`), unless `n_public`
    declares that number public knowledge. `val` is train-private's --val: "auto" trains on (X_val, y_val) beside
    (X, y) when nothing is chosen on them (the default rule's one configuration per cell) and chooses with them
    otherwise; "train" and "hold-out" force it (methods/plan.py, `val_role`)."""
    x = np.asarray(X, dtype=np.float32)
    labels = np.asarray(y)
    if labels.dtype.kind not in "iu" or labels.min(initial=0) < 0:
        raise DataError(f"{param('y')} must hold class indices 0..C-1")
    pca = fitted_projection(projection, public, list(method), x.shape[1])
    refuse_fitted_rows(pca, x)
    if X_val is not None:
        refuse_fitted_rows(pca, np.asarray(X_val, dtype=np.float32))
    grid = SweepGrid.with_auto(methods=list(method), ks=k, epsilons=list(epsilon), lrs=lr, seeds=list(seed),
                               steps=steps, batch_sizes=list(batch_size), momentum=momentum,
                               weight_decay=weight_decay, ridges=tuple(ridge), ema=ema)
    if select not in ("val", "accounted") and not isinstance(select, AccountedSelection):
        raise UsageError(f"unknown {param('select')} '{select}' (known: val, accounted)")
    role = val_role(val, bool(grid.rules), configurations_per_cell(grid, len(pca.components_)), select != "val")
    if role == "train" and X_val is None and val == "train":
        raise UsageError(f"{param('val')} train needs val rows to train on (X_val, y_val)")
    if role == "train" and X_val is not None:
        x, labels = np.concatenate([x, np.asarray(X_val, dtype=np.float32)]), np.concatenate([labels, y_val])
    if role != "select":
        X_val = y_val = None
    num_classes = int(max(labels.max(), -1 if y_val is None else np.max(y_val))) + 1
    data = SweepData(pca, x, labels, None if X_val is None else np.asarray(X_val, dtype=np.float32),
                     None if y_val is None else np.asarray(y_val), num_classes,
                     None if public is None else np.asarray(public, dtype=np.float32),
                     public_labelled=None if public_labelled is None else
                     (np.asarray(public_labelled[0], dtype=np.float32), np.asarray(public_labelled[1])))
    selection = AccountedSelection() if select == "accounted" else None if select == "val" else select
    return run_sweep(data, grid, PrivacySettings(delta, clip, accountant, NoiseSource(noise_seed), n_public),
                     SweepOptions(engine=engine, device=device, method_options=dict(method_options or {}),
                                  selection=selection))
