"""The assumption checks of one labelled split against a public basis: ξ_k, margins, eigengaps, a recommended k
and, for a target ε, Theorem 1's sample-size terms. The summary states whose labels w* was fitted on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pillar_cli.artifacts import Split
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.theory.assumptions import (AssumptionTable, assess, svm_directions, theorem_recommended_k,
                                           theorem_terms)

MODES = ("pairs", "ovr")


class PublicBasis(Protocol):
    """What the checks need of a fitted projection (PublicPCA): its feature space, bases and spectrum."""

    eigenvalues_: np.ndarray

    def standardized(self, x: np.ndarray) -> np.ndarray: ...

    def basis(self, k: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Diagnosis:
    table: AssumptionTable
    summary: dict
    labels_used: str


def diagnose(split: Split, basis: PublicBasis, ks: list[int], *, mode: str = "pairs", pairs: int = 45,
             seed: int = 0, xi_threshold: float = 0.2, epsilon: float | None = None, alpha: float = 0.1,
             beta: float = 0.05, basis_description: str = "projection artifact") -> Diagnosis:
    """w* per class pair (or one-vs-rest) from the split's labels; ξ_k and margins per k; Δ_k from `basis`."""
    if mode not in MODES:
        raise UsageError(f"{param('mode')} must be 'pairs' or 'ovr'; got '{mode}'")
    if split.labels is None:
        raise DataError(f"split '{split.name}' of {split.ref.path} has no labels; margins need a labelled split")
    z = basis.standardized(split.features)
    table = assess(svm_directions(z, split.labels, mode, pairs, seed), z, {k: basis.basis(k) for k in ks},
                   basis.eigenvalues_)
    label_note = f"w* fitted on the labels of split '{split.name}' ({split.attrs['split_roles'][split.name]})"
    summary = {"rows": table.rows(), "recommended_k": table.recommended_k(xi_threshold), "xi_threshold": xi_threshold,
               "margin_q01_full_median": float(np.median(table.margin_full)), "labels_used": label_note,
               "basis": basis_description}
    if epsilon is not None:
        summary["theorem"] = theorem_terms(table, epsilon, alpha, beta)
        summary["recommended_k_theorem"] = theorem_recommended_k(summary["theorem"])
        summary["theorem_inputs"] = ("γ, ξ_k and ζ come from w* fitted on labelled data (" + label_note + "); "
                                     "Δ_k from public data only")
    return Diagnosis(table, summary, label_note)
