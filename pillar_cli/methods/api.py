"""`sweep(...)`: the CLI's train-private sweep for arrays, with keyword arguments and the paper's defaults."""

from __future__ import annotations

from typing import Any

import numpy as np

from pillar_cli.errors import DataError, param
from pillar_cli.methods.arrangement import arrange
from pillar_cli.methods.class_set import class_set
from pillar_cli.methods.data import GivenRows
from pillar_cli.methods.estimator import warn_if_seeded
from pillar_cli.methods.public_rows import fitted_projection, refuse_fitted_rows
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.sweep import SweepResult, run_sweep
from pillar_cli.privacy.unit import Units, persons_of
from pillar_cli.projection import PublicPCA


def sweep(
    X: np.ndarray,
    y: np.ndarray,
    X_val: np.ndarray | None = None,
    y_val: np.ndarray | None = None,
    *,
    projection: PublicPCA | None = None,
    public: np.ndarray | None = None,
    public_labelled: tuple[np.ndarray, np.ndarray] | None = None,
    groups: Any = None,
    groups_val: Any = None,
    classes: Any = None,
    **request: Any,
) -> SweepResult:
    """Train every (method, k, ε) × (lr, steps, batch size, seed) on the private rows (X, y) and choose one
    run per (method, k, ε) and seed with (X_val, y_val). Labels are class indices 0..C−1, or any labels with
    `classes` declaring the class set (e.g. ["benign", "malignant"]; as DPLinearClassifier's). `public` fits
    the projection (or pass a fitted `projection`); adadps reads `public_labelled` = (X_pub, y_pub). The
    keyword arguments are a `SweepRequest`'s (methods/request.py), train-private's options by their Python
    names, with its defaults: method, k, epsilon, delta, accountant, clip, lr, steps, batch_size, seed,
    momentum, weight_decay, ridge, ema, select, val, engine, device, method_options, noise_seed, n_public,
    privacy_unit, max_tpr, at_fpr — lists where the command takes a list. `groups` (and `groups_val` for
    X_val) give each row's person: with privacy_unit "auto" (the default) or "person" the guarantee is then
    per person (privacy/guarantee.py). `max_tpr` (at `at_fpr`) replaces ε by a risk target: ε is calibrated so
    that no membership attack on one unit reaches that true-positive rate at that false-positive rate
    (privacy/risk_target.py).

    k, lr and steps "auto" follow the default rule of methods/rules.py (from the row count, ε and the batch
    size; one value per ε, nothing to choose on val); k None means all features. `select`: "val" (the result's
    `selection` used the val labels, which ε does NOT account for), or "accounted" / an `AccountedSelection`
    (private cells run the Papernot–Steinke selection; ε covers it). `val` "auto" trains on (X_val, y_val)
    beside (X, y) when nothing is chosen on them and chooses with them otherwise; "train" and "hold-out" force
    it (methods/plan.py, `val_role`). `seed` labels repetitions and seeds public randomness only; noise comes
    from fresh OS entropy unless `noise_seed` is given, which makes runs repeat exactly and leaves them NOT
    differentially private. Values derived from the number of private rows read a noisy count released inside
    ε (the result's `count`), unless `n_public` declares that number public knowledge."""
    asked = SweepRequest(**request)
    warn_if_seeded(asked.noise_seed)
    x = np.asarray(X, dtype=np.float32)
    labels, y_val, declared = _class_indices(y, y_val, classes)
    pca = fitted_projection(projection, public, list(asked.method), x.shape[1])
    refuse_fitted_rows(pca, x)
    if X_val is not None:
        refuse_fitted_rows(pca, np.asarray(X_val, dtype=np.float32))
    units, val_units = _units(groups, groups_val, len(x), None if X_val is None else len(X_val))
    val = (
        None
        if X_val is None or val_units is None
        else GivenRows(np.asarray(X_val, dtype=np.float32), np.asarray(y_val), val_units, "val")
    )
    num_classes = declared or int(max(labels.max(), -1 if y_val is None else np.max(y_val))) + 1
    data = arrange(
        asked,
        pca,
        GivenRows(x, labels, units),
        val,
        num_classes,
        public_x=None if public is None else np.asarray(public, dtype=np.float32),
        public_labelled=None
        if public_labelled is None
        else (np.asarray(public_labelled[0], dtype=np.float32), np.asarray(public_labelled[1])),
    )
    return run_sweep(data, asked)


def _class_indices(y: Any, y_val: Any, classes: Any) -> tuple[np.ndarray, Any, int]:
    """(the labels and the val labels as class indices, the number of classes declared or 0)."""
    if classes is not None:
        declared, labels, _ = class_set(np.asarray(y), classes, None)
        val = None if y_val is None else class_set(np.asarray(y_val), classes, None)[1]
        return labels, val, len(declared)
    labels = np.asarray(y)
    if labels.dtype.kind not in "iu" or labels.min(initial=0) < 0:
        raise DataError(
            f"{param('y')} must hold class indices 0..C-1",
            hint=f"or declare the class set, e.g. {param('classes')}=['benign', 'malignant']",
        )
    return labels, y_val, 0


def _units(groups: Any, groups_val: Any, rows: int, val_rows: int | None) -> tuple[Units, Units | None]:
    """Each row's unit, and each val row's: ids numbered over both together, so that a person keeps one id
    wherever their rows lie (the val rows may train beside X)."""
    units = Units.given(groups, rows, "the groups given")
    if val_rows is None:
        return units, None
    val_units = Units.given(groups_val, val_rows, "the groups given", "groups_val")
    if not (units.grouped and val_units.grouped):
        return units, val_units
    persons = persons_of(np.concatenate([np.asarray(groups), np.asarray(groups_val)]), rows + val_rows)
    return Units(persons[:rows], units.named_by), Units(persons[rows:], val_units.named_by)
