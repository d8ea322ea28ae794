"""The paper's figures from evaluation rows: accuracy vs k (Fig. 4), each method per evaluation (Fig. 5, Table
1), accuracy vs the fraction of private data (Fig. 7), vs the public data the projection was fitted on (Table
2(b)) and vs the feature dimension (Example 1); ξ_k against k (Fig. 3) and the public eigen-spectrum. Every
figure states n, ε, δ, accountant and seeds, and carries its axis labels as PNG metadata so that tools (and
tests) can read them back."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np

from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.reporting.families import best_per_method, table_order

AXIS_LABELS = {
    "accuracy_vs_k": ("k (principal components; full = no projection)", "test accuracy"),
    "methods": ("evaluation", "test accuracy (best k, selected on val)"),
    "private_fraction": ("fraction of the private data used", "test accuracy"),
    "public_share": (
        "public rows the projection was fitted on (% of the train part, as drawn)",
        "test accuracy",
    ),
    "dimension": ("feature dimension d", "test accuracy"),
    "xi": ("k (public components)", "ξₖ = 1 − ‖AₖAₖᵀw*‖"),
    "spectrum": ("component index", "eigenvalue of the public covariance"),
}


TITLE_CHARACTERS_PER_INCH = 14  # of 8-point text: a title wrapped at this many a line stays inside the figure


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure, axes, path: Path, kind: str, title: str) -> None:
    xlabel, ylabel = AXIS_LABELS[kind]
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    width = int(figure.get_figwidth() * TITLE_CHARACTERS_PER_INCH)
    axes.set_title(textwrap.fill(title, width), fontsize=8)
    axes.legend(fontsize=8)
    figure.tight_layout()
    ticks = "|".join(label.get_text() for label in axes.get_xticklabels())
    series = "|".join(text.get_text() for text in axes.get_legend().get_texts()) if axes.get_legend() else ""
    figure.savefig(
        path,
        dpi=120,
        format="png",
        metadata={
            "Title": title,
            "Description": f"figure={kind}; x={xlabel}; y={ylabel}; xticks={ticks}; series={series}",
        },
    )
    _pyplot().close(figure)


def _epsilon_label(epsilon: float) -> str:
    return "non-private" if math.isinf(epsilon) else f"ε = {epsilon:g}"


def accuracy_vs_k(rows: list[dict], path: Path, title: str, full_dim: int) -> None:
    """One line per (method, ε); 'full' is drawn at the full dimension and labelled so on the axis."""
    figure, axes = _pyplot().subplots(figsize=(6, 4))
    methods = {r["method"] for r in rows}
    for method, epsilon in sorted({(r["method"], r["epsilon"]) for r in rows}):
        line = sorted(
            (full_dim if r["k"] == "full" else r["k"], r["accuracy_mean"], r["accuracy_std"] or 0.0)
            for r in rows
            if r["epsilon"] == epsilon and r["method"] == method
        )
        ks, means, stds = zip(*line)
        label = _epsilon_label(epsilon) if len(methods) == 1 else f"{method}, {_epsilon_label(epsilon)}"
        axes.errorbar(ks, means, yerr=stds, marker="o", capsize=3, label=label)
    axes.set_xscale("log")
    ks = sorted({full_dim if r["k"] == "full" else r["k"] for r in rows})
    axes.set_xticks(
        ks,
        [
            f"full ({full_dim})" if k == full_dim and any(r["k"] == "full" for r in rows) else str(k)
            for k in ks
        ],
    )
    axes.minorticks_off()
    _save(figure, axes, path, "accuracy_vs_k", title)


def methods_by_dataset(evaluations: list[Evaluation], path: Path, title: str, names: list[str]) -> None:
    """Grouped bars: each method (PILLAR, DP-SGD, ...) for each evaluation (`names`) and ε (Figure 5, Table
    1)."""
    figure, axes = _pyplot().subplots(figsize=(max(5, 1.6 * len(evaluations)), 4))
    best = [best_per_method(e.rows) for e in evaluations]
    bars = sorted({key for per_evaluation in best for key in per_evaluation}, key=table_order)
    width = 0.8 / max(len(bars), 1)
    for j, (family, epsilon) in enumerate(bars):
        heights, errors = [], []
        for per_evaluation in best:
            row = per_evaluation.get((family, epsilon))
            heights.append(row["accuracy_mean"] if row else np.nan)
            errors.append((row["accuracy_std"] or 0.0) if row else 0.0)
        positions = np.arange(len(evaluations)) + (j - (len(bars) - 1) / 2) * width
        axes.bar(
            positions, heights, width, yerr=errors, capsize=2, label=f"{family}, {_epsilon_label(epsilon)}"
        )
    axes.set_xticks(np.arange(len(evaluations)), names)
    _save(figure, axes, path, "methods", title)


def accuracy_vs_private_fraction(evaluations: list[Evaluation], path: Path, title: str) -> None:
    """Each method's accuracy against the fraction of private data used, one line per (method, ε) (Figure
    7)."""
    figure, axes = _pyplot().subplots(figsize=(6, 4))
    _lines_over(axes, evaluations, [e.private_fraction for e in evaluations])
    _save(figure, axes, path, "private_fraction", title)


def accuracy_vs_public_share(evaluations: list[Evaluation], path: Path, title: str) -> None:
    """Each method's accuracy against the share of the source's train part its projection's rows were drawn at
    (Table 2(b))."""
    figure, axes = _pyplot().subplots(figsize=(6, 4))
    shares = [100 * e.public_share for e in evaluations]
    _lines_over(axes, evaluations, shares)
    axes.set_xscale("log")
    axes.set_xticks(sorted(set(shares)), [f"{share:.3g} %" for share in sorted(set(shares))])
    axes.minorticks_off()
    _save(figure, axes, path, "public_share", title)


def accuracy_vs_dimension(evaluations: list[Evaluation], path: Path, title: str) -> None:
    """Each method's accuracy against the dimension of the features it read (Example 1: PILLAR at a fixed k
    stays flat while DP-SGD on all d features falls)."""
    figure, axes = _pyplot().subplots(figsize=(6, 4))
    dims = [e.feature_dim for e in evaluations]
    _lines_over(axes, evaluations, dims)
    axes.set_xscale("log")
    axes.set_xticks(sorted(set(dims)), [str(d) for d in sorted(set(dims))])
    axes.minorticks_off()
    _save(figure, axes, path, "dimension", title)


def _lines_over(axes, evaluations: list[Evaluation], positions: list[float]) -> None:
    """One line per (method, ε): each evaluation's best-on-val row at the evaluation's position on the x
    axis."""
    lines: dict[tuple[str, float], list[tuple[float, float, float]]] = {}
    for evaluation, x in zip(evaluations, positions):
        for key, row in best_per_method(evaluation.rows).items():
            lines.setdefault(key, []).append((x, row["accuracy_mean"], row["accuracy_std"] or 0.0))
    for (family, epsilon), points in sorted(lines.items(), key=lambda item: table_order(item[0])):
        xs, means, stds = zip(*sorted(points))
        axes.errorbar(
            xs, means, yerr=stds, marker="o", capsize=3, label=f"{family}, {_epsilon_label(epsilon)}"
        )


def xi_vs_k(rows: list[dict], path: Path, title: str) -> None:
    """Mean, median and max of ξ_k over the max-margin tasks, against k (Figure 3)."""
    figure, axes = _pyplot().subplots(figsize=(6, 4))
    ks = [r["k"] for r in rows]
    for statistic in ("xi_mean", "xi_median", "xi_max"):
        axes.plot(ks, [r[statistic] for r in rows], marker="o", label=statistic.replace("xi_", ""))
    axes.set_xscale("log")
    _save(figure, axes, path, "xi", title)


def spectrum(eigenvalues: np.ndarray, path: Path, title: str) -> None:
    """The public eigenvalues on a log scale, without the numerically zero ones (below 1e-10 of the largest),
    which would stretch the axis over tens of decades."""
    figure, axes = _pyplot().subplots(figsize=(6, 4))
    kept = eigenvalues[eigenvalues > eigenvalues.max(initial=0.0) * 1e-10]
    axes.plot(
        np.arange(1, len(kept) + 1),
        kept,
        label=f"public eigenvalues ({len(kept)} of {len(eigenvalues)} above 1e-10 of the largest)",
    )
    axes.set_yscale("log")
    _save(figure, axes, path, "spectrum", title)
