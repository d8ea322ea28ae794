"""The assumption checks of one labelled split against a public basis: ξ_k, margins, eigengaps, a recommended
k and, for a target ε, Theorem 1's sample-size terms and the k to train with for n rows at that ε. The summary
states whose labels w* was fitted on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pillar_cli.artifacts import Split
from pillar_cli.errors import DataError, PrivacyError, UsageError, check_positive, check_probability, param
from pillar_cli.theory.assumptions import (
    SVM_ITERATIONS,
    AssumptionTable,
    assess,
    svm_directions,
    svm_tasks,
    task_rows,
    theorem_recommended_k,
    theorem_terms,
)

MODES = ("pairs", "ovr")


class PublicBasis(Protocol):
    """What the checks need of a fitted projection (PublicPCA): its feature space, bases and spectrum."""

    eigenvalues_: np.ndarray
    components_: np.ndarray  # the components it holds: train-private's default rule picks k among them

    def standardized(self, x: np.ndarray) -> np.ndarray: ...

    def basis(self, k: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Diagnosis:
    table: AssumptionTable
    summary: dict
    labels_used: str


def diagnose(
    features: np.ndarray,
    labels: np.ndarray,
    basis: PublicBasis,
    ks: list[int],
    *,
    mode: str = "pairs",
    pairs: int = 45,
    seed: int = 0,
    xi_threshold: float = 0.2,
    epsilon: float | None = None,
    alpha: float = 0.1,
    beta: float = 0.05,
    basis_description: str = "projection artifact",
    labels_from: str = "the labels passed to diagnose",
    rows: int | None = None,
    counted: str = "training rows",
) -> Diagnosis:
    """w* per class pair (or one-vs-rest) from `labels`; ξ_k and margins per k; Δ_k from `basis`. `features`
    may be rows left on disk (StoredRows): class pairs read only the rows of their classes, one-vs-rest every
    row. The labels are whatever the caller passes (often private): the summary names them (`labels_from`).
    With `epsilon` and the number of training `rows` (`counted`: what they are, rows or persons, as
    train-private counts its unit), the k to train with: the default rule's (what train-private uses when k is
    left out), with the median ξ measured there. `recommended` is the one k to use and why."""
    if mode not in MODES:
        raise UsageError(f"{param('mode')} must be 'pairs' or 'ovr'; got '{mode}'")
    if epsilon is not None:
        check_positive("epsilon", epsilon)
    check_probability("alpha", alpha)
    check_probability("beta", beta)
    if not math.isfinite(xi_threshold):
        raise UsageError(f"{param('xi_threshold')} must be a number (got {xi_threshold})")
    tasks = svm_tasks(labels, mode, pairs, seed)
    read = task_rows(labels, tasks)  # rows of other classes stay on disk where `features` were left there
    z = basis.standardized(np.asarray(features if len(read) == len(labels) else features[read]))
    directions = svm_directions(z, labels[read], tasks, seed)
    table = assess(directions, z, {k: basis.basis(k) for k in ks}, basis.eigenvalues_)
    label_note = f"w* fitted on {labels_from}"
    summary = {
        "rows": table.rows(),
        "recommended_k": table.recommended_k(xi_threshold),
        "xi_threshold": xi_threshold,
        "margin_q01_full_median": float(np.median(table.margin_full)),
        "labels_used": label_note,
        "basis": basis_description,
    }
    if epsilon is not None:
        summary["theorem"] = theorem_terms(table, epsilon, alpha, beta)
        summary["recommended_k_theorem"] = theorem_recommended_k(summary["theorem"])
        summary["theorem_inputs"] = (
            "γ, ξ_k and ζ come from w* fitted on labelled data (" + label_note + "); "
            "Δ_k from public data only"
        )
    if epsilon is not None and rows is not None:
        summary |= _k_for(rows, counted, epsilon, len(basis.components_), table)
    summary["recommended"] = _one_k(summary, table)
    if directions.unconverged:
        summary["approximate_directions"] = (
            f"the SVM of {len(directions.unconverged)} of {len(directions.names)} tasks "
            f"({', '.join(directions.unconverged)}) stopped at {SVM_ITERATIONS:,} iterations without "
            "converging: their w*, and the ξ_k and margins read from it, are approximate"
        )
    return Diagnosis(table, summary, label_note)


def _one_k(summary: dict, table: AssumptionTable) -> dict:
    """The one k to use, and why: the k train-private's default rule takes at the target ε where one is given;
    else the smallest measured k whose median ξ_k meets the threshold; else the measured k of the smallest
    ξ."""
    if "recommended_k_private" in summary:
        return {"k": summary["recommended_k_private"], "reason": summary["recommended_k_private_how"]}
    threshold = summary["xi_threshold"]
    if summary["recommended_k"] is not None:
        return {
            "k": summary["recommended_k"],
            "reason": f"the smallest k measured whose median ξ_k is at most "
            f"{threshold:g}: its public subspace holds the max-margin directions (pass --eps for the k to "
            "train with at a budget)",
        }
    medians = np.median(table.xi, axis=0)
    best = int(np.argmin(medians))
    return {
        "k": table.ks[best],
        "reason": f"no k measured has a median ξ_k at most {threshold:g}; the smallest, "
        f"{medians[best]:.2f}, is at this k: the public subspace misses much of the margin (more components, "
        "or public data closer to the private data, would help)",
    }


def _k_for(rows: int, counted: str, epsilon: float, k_max: int, table: AssumptionTable) -> dict:
    """The k to train with for `rows` units (`counted`: training rows or persons) at ε: the default rule's
    round(√(n·ε)), and how it was chosen."""
    from pillar_cli.methods.rules import rule_k

    k = rule_k(rows, epsilon, k_max)
    nearest = min(range(len(table.ks)), key=lambda j: abs(table.ks[j] - k))
    xi_there = float(np.median(table.xi[:, nearest]))
    how = (
        f"the default rule k = round(√(n·ε)) for n = {rows:,} {counted} at ε = {epsilon:g}: each kept "
        f"dimension adds noise to the head, and n·ε pays for about √(n·ε) of them; median ξ at k = "
        f"{table.ks[nearest]}: {xi_there:.2f}"
    )
    return {"recommended_k_private": k, "recommended_k_private_how": how}


def diagnose_split(
    split: Split, basis: PublicBasis, ks: list[int], allow_private_labels: bool = False, **options
) -> Diagnosis:
    """`diagnose` on a labelled split of an embeddings artifact, naming the split (and its role) as the
    labels. The private split's labels are refused unless `allow_private_labels`, which the summary then
    records."""
    if split.labels is None:
        raise DataError(
            f"split '{split.name}' of {split.ref.path} has no labels; margins need a labelled split"
        )
    if split.name == "private" and not allow_private_labels:
        raise PrivacyError(
            f"{split.ref.path}:private holds the private labels; the assumption checks would read them "
            "outside any DP release",
            hint=f"use the val split (the default), or pass "
            f"{param('allow_private_labels', True)} (recorded in the artifact and printed)",
        )
    role = split.role
    labels_from = f"the labels of split '{split.name}' ({role})"
    if split.name == "private":
        labels_from = f"the PRIVATE labels (allowed explicitly, not covered by any ε): {labels_from}"
    found = diagnose(split.features, split.labels, basis, ks, labels_from=labels_from, **options)
    found.summary["private_labels_used"] = split.name == "private"
    return found
