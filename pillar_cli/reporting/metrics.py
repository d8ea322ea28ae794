"""Metrics of selected model heads (or networks) on a labelled split, aggregated over seeds, and the accuracy-vs-k plot."""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.classifier import head_digest, linear_head
from pillar_cli.artifacts.model import RunRecord, stored_runs
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.network import is_network, stored_state
from pillar_cli.embedding.networks import NetworkSpec, build_network, load_state, network_logits
from pillar_cli.methods.selection import select_on_val
from pillar_cli.projection import standardize_rows

SCALAR_METRICS = ("accuracy", "balanced_accuracy", "macro_f1", "roc_auc")


def classification_metrics(labels: np.ndarray, logits: np.ndarray, num_classes: int) -> dict:
    """Accuracy, balanced accuracy, macro-F1, per-class accuracy, confusion matrix; ROC-AUC for binary tasks."""
    from sklearn.metrics import balanced_accuracy_score, confusion_matrix, f1_score, roc_auc_score

    predictions = logits.argmax(axis=1)
    classes = np.arange(num_classes)
    confusion = confusion_matrix(labels, predictions, labels=classes)
    support = confusion.sum(axis=1)
    metrics = {
        "accuracy": float((predictions == labels).mean()),
        "balanced_accuracy": float(balanced_accuracy_score(labels, predictions)),
        "macro_f1": float(f1_score(labels, predictions, labels=classes, average="macro", zero_division=0)),
        "per_class_accuracy": [float(c / s) if s else None for c, s in zip(np.diag(confusion), support)],
        "confusion": confusion.tolist(),
        "roc_auc": None,
    }
    if num_classes == 2 and len(np.unique(labels)) == 2:
        metrics["roc_auc"] = float(roc_auc_score(labels, logits[:, 1] - logits[:, 0]))
    return metrics


def selected_metrics(models: list[Artifact], features: np.ndarray, labels: np.ndarray) -> list[dict]:
    """Per (method, k, ε): the selected runs (on val, or released by an accounted selection); metrics on this split, mean and sample std (ddof = 1; None
    for a single seed) over the seeds."""
    z = standardize(features, models[0])
    header = ModelRecord.of(models[0])
    runs = stored_runs(models)
    rows = []
    for choice in select_on_val([r.key for r in runs], [r.val_accuracy for r in runs], header.accounted):
        per_seed = []
        for run_id in choice.run_ids:
            per_seed.append(classification_metrics(labels, _logits(runs[run_id], z), header.num_classes))
        row = {**{k: v for k, v in choice.to_attrs().items() if k != "run_ids"}, "seeds": len(per_seed),
               "heads": [head_digest(_head_arrays(runs[run_id])) for run_id in choice.run_ids],
               "epsilon_spent": max(runs[i].epsilon_spent for i in choice.run_ids),
               "val_accuracy": choice.val_accuracy_mean, "accuracies": [m["accuracy"] for m in per_seed],
               "confusion_per_seed": [m["confusion"] for m in per_seed],
               "confusion_summed_over_seeds": np.sum([m["confusion"] for m in per_seed], axis=0).tolist(),
               "per_class_accuracy": _mean_ignoring_none([m["per_class_accuracy"] for m in per_seed])}
        for name in SCALAR_METRICS:
            values = [m[name] for m in per_seed if m[name] is not None]
            row[f"{name}_mean"] = float(np.mean(values)) if values else None
            row[f"{name}_std"] = float(np.std(values, ddof=1)) if len(values) > 1 else None  # sample std
        rows.append(row)
    return sorted(rows, key=lambda r: (r["method"], r["epsilon"], math.inf if r["k"] == "full" else r["k"]))


def _logits(run: RunRecord, standardised: np.ndarray) -> np.ndarray:
    """A linear head's logits, or a network's on the pixel rows (its scaler is the identity)."""
    if not is_network(run.model):
        return run.logits(standardised)
    spec = NetworkSpec.from_attrs(ModelRecord.of(run.model).network)
    model = load_state(build_network(spec), stored_state(run.model, run.local_id),
                       f"run {run.local_id} of {run.model.path}")
    return network_logits(model, standardised, spec)


def _head_arrays(run: RunRecord) -> dict[str, np.ndarray]:
    """The run's head as its release would store it (artifacts/classifier.py)."""
    return stored_state(run.model, run.local_id) if is_network(run.model) else linear_head(*run.released_head())


def _mean_ignoring_none(columns: list[list[float | None]]) -> list[float | None]:
    out = []
    for values in zip(*columns):
        present = [v for v in values if v is not None]
        out.append(float(np.mean(present)) if present else None)
    return out


def standardize(features: np.ndarray, model: Artifact) -> np.ndarray:
    """The model's feature space: the public scaler (and row L2-normalisation for second-moment projections)."""
    return standardize_rows(features, model.array("mean"), model.array("scale"),
                            ModelRecord.of(model).row_l2_normalised, "the model was trained on")
