"""Metrics of selected model heads (or networks) on a labelled split, aggregated over seeds, and the
accuracy-vs-k plot."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.classifier import head_digest, linear_head
from pillar_cli.artifacts.layout import row_blocks
from pillar_cli.artifacts.model import RunRecord, stored_runs
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.network import is_network, stored_state
from pillar_cli.artifacts.stored_rows import StoredRows
from pillar_cli.embedding.networks import NetworkSpec, build_network, load_state, network_logits
from pillar_cli.methods.selection import select_on_val
from pillar_cli.projection import standardize_rows

SCALAR_METRICS = ("accuracy", "balanced_accuracy", "macro_f1", "roc_auc")


def classification_metrics(
    labels: np.ndarray, predictions: np.ndarray, num_classes: int, binary_score: np.ndarray | None = None
) -> dict:
    """Accuracy, balanced accuracy, macro-F1, per-class accuracy, confusion matrix; ROC-AUC for binary tasks
    (from `binary_score`, logit 1 − logit 0)."""
    from sklearn.metrics import balanced_accuracy_score, confusion_matrix, f1_score, roc_auc_score

    classes = np.arange(num_classes)
    confusion = confusion_matrix(labels, predictions, labels=classes)
    support = confusion.sum(axis=1)
    with warnings.catch_warnings():  # "y_pred contains classes not in y_true": such a class has no accuracy
        warnings.simplefilter("ignore", UserWarning)
        balanced = float(balanced_accuracy_score(labels, predictions))
    metrics = {
        "accuracy": float((predictions == labels).mean()),
        "balanced_accuracy": balanced,
        "macro_f1": float(f1_score(labels, predictions, labels=classes, average="macro", zero_division=0)),
        "per_class_accuracy": [float(c / s) if s else None for c, s in zip(np.diag(confusion), support)],
        "confusion": confusion.tolist(),
        "roc_auc": None,
    }
    if binary_score is not None and len(np.unique(labels)) == 2:
        metrics["roc_auc"] = float(roc_auc_score(labels, binary_score))
    return metrics


def selected_metrics(
    models: list[Artifact], features: np.ndarray | StoredRows, labels: np.ndarray
) -> list[dict]:
    """Per (method, k, ε): the selected runs (on val, or released by an accounted selection); metrics on this
    split, mean and sample std (ddof = 1; None for a single seed) over the seeds. The split is read once, a
    block of rows at a time, every selected run scoring each block: rows left on disk stay there."""
    header = ModelRecord.of(models[0])
    runs = stored_runs(models)
    choices = select_on_val([r.key for r in runs], [r.val_accuracy for r in runs], header.accounted)
    scores = _scores(
        models[0],
        features,
        {run_id: runs[run_id] for c in choices for run_id in c.run_ids},
        header.num_classes == 2,
    )
    rows = []
    for choice in choices:
        per_seed = [
            classification_metrics(labels, scores[run_id][0], header.num_classes, scores[run_id][1])
            for run_id in choice.run_ids
        ]
        row = {
            **{k: v for k, v in choice.to_attrs().items() if k != "run_ids"},
            "seeds": len(per_seed),
            "heads": [head_digest(_head_arrays(runs[run_id])) for run_id in choice.run_ids],
            "epsilon_spent": max(runs[i].epsilon_spent for i in choice.run_ids),
            "val_accuracy": choice.val_accuracy_mean,
            "accuracies": [m["accuracy"] for m in per_seed],
            "confusion_per_seed": [m["confusion"] for m in per_seed],
            "confusion_summed_over_seeds": np.sum([m["confusion"] for m in per_seed], axis=0).tolist(),
            "per_class_accuracy": _mean_ignoring_none([m["per_class_accuracy"] for m in per_seed]),
        }
        for name in SCALAR_METRICS:
            values = [m[name] for m in per_seed if m[name] is not None]
            row[f"{name}_mean"] = float(np.mean(values)) if values else None
            row[f"{name}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else None  # sample std
        rows.append(row)
    return sorted(rows, key=lambda r: (r["method"], r["epsilon"], math.inf if r["k"] == "full" else r["k"]))


def _scores(
    model: Artifact, features: np.ndarray | StoredRows, runs: dict[int, RunRecord], binary: bool
) -> dict[int, tuple[np.ndarray, np.ndarray | None]]:
    """Each run's predicted class per row (and logit 1 − logit 0 for a binary task), one pass over the
    rows."""
    scorers = {run_id: _scorer(run) for run_id, run in runs.items()}
    predictions = {run_id: np.empty(len(features), dtype=np.int64) for run_id in runs}
    margins = {run_id: np.empty(len(features), dtype=np.float64) if binary else None for run_id in runs}
    for start, block in row_blocks(features):
        z = standardize(block, model)
        for run_id, scorer in scorers.items():
            logits = scorer(z)
            predictions[run_id][start : start + len(block)] = logits.argmax(axis=1)
            if binary:
                margins[run_id][start : start + len(block)] = logits[:, 1] - logits[:, 0]
    return {run_id: (predictions[run_id], margins[run_id]) for run_id in runs}


def _scorer(run: RunRecord) -> Callable[[np.ndarray], np.ndarray]:
    """Standardised rows → logits: a linear head's own (its full-space weights made once a run), or a
    network's on the pixel rows (its scaler is the identity; built once)."""
    if not is_network(run.model):
        return run.logits
    spec = NetworkSpec.from_attrs(ModelRecord.of(run.model).network)
    network = load_state(
        build_network(spec), stored_state(run.model, run.local_id), f"run {run.local_id} of {run.model.path}"
    )
    return lambda z: network_logits(network, z, spec)


def _head_arrays(run: RunRecord) -> dict[str, np.ndarray]:
    """The run's head as its release would store it (artifacts/classifier.py)."""
    return (
        stored_state(run.model, run.local_id) if is_network(run.model) else linear_head(*run.released_head())
    )


def _mean_ignoring_none(columns: list[list[float | None]]) -> list[float | None]:
    out = []
    for values in zip(*columns):
        present = [v for v in values if v is not None]
        out.append(float(np.mean(present)) if present else None)
    return out


def standardize(features: np.ndarray, model: Artifact) -> np.ndarray:
    """The model's feature space: the public scaler (and row L2-normalisation for second-moment
    projections)."""
    return standardize_rows(
        features,
        model.array("mean"),
        model.array("scale"),
        ModelRecord.of(model).row_l2_normalised,
        "the model was trained on",
    )
