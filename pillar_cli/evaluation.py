"""Metrics of selected model heads on a labelled split, aggregated over seeds, and the accuracy-vs-k plot."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.errors import DataError


def selected_accuracies(model: Artifact, features: np.ndarray, labels: np.ndarray) -> list[dict]:
    """Test accuracy of each (k, ε) selection: mean ± std over the seeds of the selected configuration."""
    mean, scale = model.array("mean"), model.array("scale")
    if features.shape[1] != len(mean):
        raise DataError(f"features have {features.shape[1]} dimensions; the model was trained on {len(mean)}")
    z = (features - mean) / scale
    rows = []
    for choice in model.attrs["selection"]:
        accuracies = []
        for run_id in choice["run_ids"]:
            logits = z @ model.array(f"runs/{run_id}/weights_full") + model.array(f"runs/{run_id}/bias")
            accuracies.append(float((logits.argmax(axis=1) == labels).mean()))
        spent = model.array("runs/epsilon_spent")[choice["run_ids"]]
        rows.append({"k": choice["k"], "epsilon": choice["epsilon"], "accuracy_mean": float(np.mean(accuracies)),
                     "accuracy_std": float(np.std(accuracies)), "seeds": len(accuracies), "accuracies": accuracies,
                     "epsilon_spent": float(spent.max()), "val_accuracy": choice["val_accuracy_mean"],
                     "lr": choice["lr"], "steps": choice["steps"], "batch_size": choice["batch_size"]})
    return sorted(rows, key=lambda r: (r["epsilon"], math.inf if r["k"] == "full" else r["k"]))


def accuracy_vs_k_plot(rows: list[dict], path: Path, title: str, full_dim: int) -> None:
    """Accuracy against k, one line per ε; 'full' is drawn at the full dimension (Figure 4 of the paper)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for epsilon in sorted({r["epsilon"] for r in rows}):
        line = sorted((full_dim if r["k"] == "full" else r["k"], r["accuracy_mean"], r["accuracy_std"])
                      for r in rows if r["epsilon"] == epsilon)
        ks, means, stds = zip(*line)
        axes.errorbar(ks, means, yerr=stds, marker="o", capsize=3, label="non-private" if math.isinf(epsilon) else f"ε = {epsilon:g}")
    axes.set_xscale("log")
    axes.set_xlabel("k (principal components; full = no projection)")
    axes.set_ylabel("test accuracy")
    axes.set_title(title, fontsize=9)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
