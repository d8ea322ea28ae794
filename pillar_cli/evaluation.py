"""Metrics of selected model heads on a labelled split, aggregated over seeds, and the accuracy-vs-k plot."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.errors import ArtifactError, DataError
from pillar_cli.training.sweep import RunKey, select_on_val


@dataclass(frozen=True)
class StoredRun:
    """One run of a model artifact (or of one shard of a sweep), addressable after merging."""

    key: RunKey
    val_accuracy: float
    epsilon_spent: float
    model: Artifact
    local_id: int

    def full_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """The head mapped back to the standardised feature space: (A_k · w, b)."""
        weights = self.model.array(f"runs/{self.local_id}/weights")
        if f"bases/{self.key.method}/{self.key.k}" in self.model.arrays:
            weights = self.model.array(f"bases/{self.key.method}/{self.key.k}") @ weights
        return weights, self.model.array(f"runs/{self.local_id}/bias")


def stored_runs(models: list[Artifact]) -> list[StoredRun]:
    """All runs of one or more model artifacts (sweep shards), checked to come from one compatible sweep."""
    first = models[0]
    for other in models[1:]:
        if other.attrs["ledger"] != first.attrs["ledger"]:
            raise ArtifactError(f"{other.path} and {first.path} use different privacy settings; they are not shards "
                                "of one sweep")
        if not np.array_equal(other.array("mean"), first.array("mean")) or \
                not np.array_equal(other.array("scale"), first.array("scale")):
            raise ArtifactError(f"{other.path} and {first.path} were trained on different projections")
    runs = []
    for model in models:
        table = {name: model.array(f"runs/{name}") for name in ("method", "k", "projected", "epsilon_target", "lr",
                                                               "steps", "batch_size", "seed", "val_accuracy",
                                                               "epsilon_spent")}
        for i in range(len(table["k"])):
            key = RunKey(str(table["method"][i]), int(table["k"][i]) if table["projected"][i] else None,
                         float(table["epsilon_target"][i]), float(table["lr"][i]), int(table["steps"][i]),
                         int(table["batch_size"][i]), int(table["seed"][i]))
            runs.append(StoredRun(key, float(table["val_accuracy"][i]), float(table["epsilon_spent"][i]), model, i))
    return runs


def selected_accuracies(models: list[Artifact], features: np.ndarray, labels: np.ndarray) -> list[dict]:
    """Per (method, k, ε): select on val over all runs, report test accuracy mean ± std over the seeds."""
    mean, scale = models[0].array("mean"), models[0].array("scale")
    if features.shape[1] != len(mean):
        raise DataError(f"features have {features.shape[1]} dimensions; the model was trained on {len(mean)}")
    z = (features - mean) / scale
    runs = stored_runs(models)
    rows = []
    for choice in select_on_val([r.key for r in runs], [r.val_accuracy for r in runs]):
        accuracies = []
        for run_id in choice["run_ids"]:
            weights, bias = runs[run_id].full_weights()
            accuracies.append(float(((z @ weights + bias).argmax(axis=1) == labels).mean()))
        rows.append({**{k: v for k, v in choice.items() if k != "run_ids"},
                     "accuracy_mean": float(np.mean(accuracies)), "accuracy_std": float(np.std(accuracies)),
                     "seeds": len(accuracies), "accuracies": accuracies,
                     "epsilon_spent": max(runs[i].epsilon_spent for i in choice["run_ids"]),
                     "val_accuracy": choice["val_accuracy_mean"]})
    return sorted(rows, key=lambda r: (r["method"], r["epsilon"], math.inf if r["k"] == "full" else r["k"]))


def accuracy_vs_k_plot(rows: list[dict], path: Path, title: str, full_dim: int) -> None:
    """Accuracy against k, one line per ε; 'full' is drawn at the full dimension (Figure 4 of the paper)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    methods = sorted({r["method"] for r in rows})
    for method, epsilon in sorted({(r["method"], r["epsilon"]) for r in rows}):
        line = sorted((full_dim if r["k"] == "full" else r["k"], r["accuracy_mean"], r["accuracy_std"])
                      for r in rows if r["epsilon"] == epsilon and r["method"] == method)
        ks, means, stds = zip(*line)
        label = "non-private" if math.isinf(epsilon) else f"ε = {epsilon:g}"
        axes.errorbar(ks, means, yerr=stds, marker="o", capsize=3,
                      label=f"{method}, {label}" if len(methods) > 1 else label)
    axes.set_xscale("log")
    axes.set_xlabel("k (principal components; full = no projection)")
    axes.set_ylabel("test accuracy")
    axes.set_title(title, fontsize=9)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
