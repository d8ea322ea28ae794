"""Large-margin low-rank diagnostics (PILLAR, Definitions 2-3 and Theorem 1's ingredients).

ξ_k = 1 − ‖A_k A_kᵀ w*‖ measures how much of a unit max-margin direction w* the top-k public subspace misses;
margins are normalised y⟨w*, x⟩ / (‖w*‖‖x‖), reported as the value met by 99 % of points; Δ_k = λ_k − λ_{k+1}
is the public eigengap. w* is fitted with labels, so the caller states which split's labels were used.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import DataError

MARGIN_QUANTILE = 0.01  # the margin met by 99 % of points
SVM_ITERATIONS = 20_000


@dataclass(frozen=True)
class Directions:
    """Unit max-margin directions, one per task (class pair or one-vs-rest), with the rows each one
    separates."""

    names: list[str]
    w: np.ndarray  # (P, D) unit rows
    rows: list[np.ndarray]
    signs: list[np.ndarray]  # ±1 per row
    unconverged: tuple[str, ...] = ()  # tasks whose SVM stopped at its iteration cap: approximate directions


Task = tuple[int, int | None]  # (positive class, negative class), None: the rest


def svm_tasks(labels: np.ndarray, mode: str = "pairs", max_pairs: int = 45, seed: int = 0) -> list[Task]:
    """What w* is fitted for: each class pair (a seeded sample of at most `max_pairs`), or each class against
    the rest. The sample is public randomness (`--seed`): it picks which pairs a diagnostic outside any DP
    release examines, and no mechanism's sampling or noise is drawn from it."""
    classes = np.unique(labels)
    if len(classes) < 2:
        raise DataError("the labelled split has a single class; margins need at least two")
    if mode != "pairs":
        return [(c, None) for c in classes.tolist()]
    tasks = list(itertools.combinations(classes.tolist(), 2))
    if len(tasks) > max_pairs:
        picks = np.random.default_rng(seed).choice(len(tasks), max_pairs, replace=False)
        tasks = [tasks[i] for i in sorted(picks)]
    return tasks


def task_rows(labels: np.ndarray, tasks: list[Task]) -> np.ndarray:
    """The rows the tasks read, in order: those of the pairs' classes (at 1,000 classes and 45 pairs, under a
    tenth of the split), every row where a class is fitted against the rest."""
    if any(negative is None for _, negative in tasks):
        return np.arange(len(labels))
    return np.flatnonzero(np.isin(labels, [label for task in tasks for label in task]))


def svm_directions(features: np.ndarray, labels: np.ndarray, tasks: list[Task], seed: int = 0) -> Directions:
    """A homogeneous linear SVM per task (svm_tasks) on the rows of its classes."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    names, directions, rows, signs, unconverged = [], [], [], [], []
    for positive, negative in tasks:
        mask = np.ones(len(labels), bool) if negative is None else np.isin(labels, (positive, negative))
        sign = np.where(labels[mask] == positive, 1.0, -1.0)
        with warnings.catch_warnings(record=True) as caught:  # its ConvergenceWarning: counted, stated once
            warnings.simplefilter("always", ConvergenceWarning)
            svm = LinearSVC(fit_intercept=False, C=1.0, max_iter=SVM_ITERATIONS, random_state=seed).fit(
                features[mask], sign
            )
        if any(issubclass(warning.category, ConvergenceWarning) for warning in caught):
            unconverged.append(f"{positive}-vs-{'rest' if negative is None else negative}")
        w = svm.coef_.ravel()
        directions.append(w / np.linalg.norm(w))
        names.append(f"{positive}-vs-{'rest' if negative is None else negative}")
        rows.append(np.flatnonzero(mask))
        signs.append(sign)
    return Directions(names, np.stack(directions), rows, signs, tuple(unconverged))


def xi(basis: np.ndarray, w: np.ndarray) -> np.ndarray:
    """ξ_k = 1 − ‖A_k A_kᵀ w‖ for unit rows w (P, D) and an orthonormal basis A_k (D, k)."""
    return 1.0 - np.linalg.norm(w @ basis, axis=1)


def margin_quantiles(directions: Directions, features: np.ndarray, basis: np.ndarray | None) -> np.ndarray:
    """Per direction, the normalised margin met by 99 % of its rows (in span(A_k) when a basis is given)."""
    out = []
    for w, rows, sign in zip(directions.w, directions.rows, directions.signs):
        x = features[rows]
        if basis is not None:
            w, x = w @ basis, x @ basis
        norms = np.linalg.norm(x, axis=1) * np.linalg.norm(w)
        margins = sign * (x @ w) / np.where(norms > 0, norms, 1.0)
        out.append(np.quantile(margins, MARGIN_QUANTILE))
    return np.array(out)


def eigengaps(eigenvalues: np.ndarray, ks: list[int]) -> np.ndarray:
    """Δ_k = λ_k − λ_{k+1} (1-indexed); λ beyond the spectrum counts as 0."""
    padded = np.append(eigenvalues, 0.0)
    return np.array([padded[k - 1] - padded[k] for k in ks])


@dataclass(frozen=True)
class AssumptionTable:
    ks: list[int]
    xi: np.ndarray  # (P, len(ks))
    margin_full: np.ndarray  # (P,)
    margin_projected: np.ndarray  # (P, len(ks))
    eigengap: np.ndarray  # (len(ks),)
    explained: np.ndarray  # (len(ks),) fraction of public variance in the top k

    def recommended_k(self, xi_threshold: float) -> int | None:
        """The smallest k whose median ξ_k is at most the threshold."""
        for k, value in zip(self.ks, np.median(self.xi, axis=0)):
            if value <= xi_threshold:
                return k
        return None

    def rows(self) -> list[dict]:
        return [
            {
                "k": k,
                "xi_mean": float(self.xi[:, j].mean()),
                "xi_median": float(np.median(self.xi[:, j])),
                "xi_max": float(self.xi[:, j].max()),
                "margin_q01_median": float(np.median(self.margin_projected[:, j])),
                "eigengap": float(self.eigengap[j]),
                "explained_variance": float(self.explained[j]),
            }
            for j, k in enumerate(self.ks)
        ]


def assess(
    directions: Directions, features: np.ndarray, bases: dict[int, np.ndarray], eigenvalues: np.ndarray
) -> AssumptionTable:
    ks = sorted(bases)
    total = eigenvalues.sum()
    return AssumptionTable(
        ks=ks,
        xi=np.stack([xi(bases[k], directions.w) for k in ks], axis=1),
        margin_full=margin_quantiles(directions, features, None),
        margin_projected=np.stack([margin_quantiles(directions, features, bases[k]) for k in ks], axis=1),
        eigengap=eigengaps(eigenvalues, ks),
        explained=np.array([eigenvalues[:k].sum() / total for k in ks]),
    )


def theorem_terms(table: AssumptionTable, epsilon: float, alpha: float, beta: float) -> list[dict]:
    """Theorem 1's quantities per k: γ (full-space margin met by 99 % of points, median over tasks), ζ = γ(1 −
    ξ_k − 0.1γ), the unlabelled term log(2/β)/(γ²Δ_k²) and the labelled term √k/(αεζ); inf where γ, Δ_k or ζ ≤
    0."""
    gamma = float(np.median(table.margin_full))
    rows = []
    for j, k in enumerate(table.ks):
        xi_k, gap = float(np.median(table.xi[:, j])), float(table.eigengap[j])
        zeta = gamma * (1 - xi_k - 0.1 * gamma)
        unlabelled = math.log(2 / beta) / (gamma**2 * gap**2) if gamma > 0 and gap > 0 else math.inf
        labelled = math.sqrt(k) / (alpha * epsilon * zeta) if gamma > 0 and zeta > 0 else math.inf
        rows.append(
            {"k": k, "gamma": gamma, "zeta": zeta, "unlabelled_term": unlabelled, "labelled_term": labelled}
        )
    return rows


def theorem_recommended_k(rows: list[dict]) -> int | None:
    """The k with the smallest labelled sample-size term (None when no k has a finite one)."""
    finite = [r for r in rows if math.isfinite(r["labelled_term"])]
    return min(finite, key=lambda r: r["labelled_term"])["k"] if finite else None
