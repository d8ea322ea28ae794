"""Boolean data for the semi-private disjunction learner: the family D_{f,p} of Definition 4 (Hu, Pinto, Yang,
Sanyal, "Semi-private learning via low dimensional structures") and rows from a CSV file.

D_{f,p}: f is the disjunction of k of the d variables, V⁺ = its variables, V⁻ = the others. A row draws y = ±1
uniformly; given y, an Erdős–Rényi graph with edge probability p on V⁺ (y = +1) or V⁻ (y = −1); the vertices
with at least one edge are active (1), every other variable is 0. The co-activation structure of the rows is
therefore two cliques-of-cliques, V⁺ and V⁻, which public unlabelled rows reveal. A positive row whose graph
has no edge is all zero and f(x) ≠ y: the family's Bayes error is ½(1 − p)^(k(k−1)/2).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pillar_cli.data.dataset import Dataset, no_labels
from pillar_cli.data.keys import generated_keys
from pillar_cli.data.labels import ClassSource, encode_labels
from pillar_cli.errors import DataError, UsageError


@dataclass(frozen=True)
class DisjunctionFamily:
    """D_{f,p} with d variables, f over k of them (chosen by `seed`), edge probability p."""

    d: int
    k: int
    p: float
    seed: int = 0

    def __post_init__(self):
        if not 2 <= self.k < self.d - 1:
            raise UsageError(f"the disjunction family needs 2 <= k < d - 1 (got k={self.k}, d={self.d})")
        if not 0 < self.p <= 1:
            raise UsageError(f"the edge probability p must be in (0, 1] (got {self.p})")

    @property
    def positive_variables(self) -> np.ndarray:
        """V⁺(f): the k variables of the target disjunction, sorted."""
        return np.sort(np.random.default_rng([self.seed, 0xD15]).choice(self.d, self.k, replace=False))

    @property
    def bayes_error(self) -> float:
        return 0.5 * (1 - self.p) ** (self.k * (self.k - 1) / 2)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """n rows (uint8 0/1, (n, d)) and their labels y ∈ {0, 1} (class 1 is y = +1)."""
        positive = np.zeros(self.d, bool)
        positive[self.positive_variables] = True
        sides = (np.flatnonzero(~positive), np.flatnonzero(positive))
        labels = rng.integers(0, 2, n)
        rows = np.zeros((n, self.d), np.uint8)
        for label, side in enumerate(sides):
            chosen = np.flatnonzero(labels == label)
            rows[np.ix_(chosen, side)] = _non_isolated(len(chosen), len(side), self.p, rng)
        return rows, labels.astype(np.int64)


def _non_isolated(n: int, m: int, p: float, rng: np.random.Generator) -> np.ndarray:
    """(n, m) indicators of the vertices with an edge in n independent G(m, p) graphs."""
    upper = np.triu(rng.random((n, m, m)) < p, 1)
    return (upper.any(axis=2) | upper.any(axis=1)).astype(np.uint8)


def disjunction_dataset(family: DisjunctionFamily, n: int) -> Dataset:
    if n < 4:
        raise UsageError(f"the disjunction family needs n >= 4 rows (got {n})")
    rng = np.random.default_rng([family.seed, 0xDA7A])
    rows, labels = _sample_in_blocks(family, n, rng)
    return Dataset(
        f"disjunctions-d{family.d}-k{family.k}",
        rows.astype(np.float32),
        labels,
        ["-1", "+1"],
        class_source=ClassSource.SOURCE,
        keys=generated_keys(n),
    )


def _sample_in_blocks(
    family: DisjunctionFamily, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Rows drawn a block at a time, so the (block, m, m) edge draws stay within ~64 MB whatever n and d."""
    block = max(1, 2**23 // (family.d * family.d))
    parts = [family.sample(min(block, n - start), rng) for start in range(0, n, block)]
    return np.concatenate([rows for rows, _ in parts]), np.concatenate([labels for _, labels in parts])


def read_csv_rows(path: Path, labelled: bool = True) -> Dataset:
    """Rows of numeric features with a label in the last column (a number or a class name; data/labels.py), or
    features alone when not `labelled` (rows to classify); a header line is allowed. Labels −1/+1 are the
    classes 0/1 (the disjunction learner's convention)."""
    try:
        with open(path, newline="") as handle:
            lines = [row for row in csv.reader(handle) if row]
    except OSError as err:
        raise DataError(f"cannot read {path}: {err}") from err
    if lines and not _is_number(lines[0][0]):
        lines = lines[1:]
    if not lines or len({len(row) for row in lines}) != 1 or len(lines[0]) < 1 + labelled:
        raise DataError(
            f"{path} needs rows of equal length: features" + (", then the label" if labelled else "")
        )
    try:
        features = np.array([row[:-1] if labelled else row for row in lines], dtype=np.float64)
    except ValueError as err:
        raise DataError(f"{path} holds a feature that is not a number: {err}") from err
    if not np.isfinite(features).all():
        raise DataError(f"{path}: features must be finite")
    if not labelled:
        return Dataset(path.stem, features.astype(np.float32), no_labels(len(features)), [])
    (labels,), names = encode_labels(str(path), np.array([row[-1].strip() for row in lines]))
    return Dataset(path.stem, features.astype(np.float32), labels, names)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
