"""Gradient Subspace Distance (Gu, Kamath, Wu; Algorithm 1): how close a public dataset is to the private one.

Per-sample gradients of one probe (see probes.py) at FIXED initial weights, shared by every dataset, with
random labels, so no dataset's labels enter; the top-k right singular vectors of each gradient matrix span its
gradient subspace, and the projection metric between two subspaces, sqrt(1 − ‖V₁ᵀV₂‖²_F / k), lies in [0, 1].
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import DataError, param
from pillar_cli.gsd.probes import Probe
from pillar_cli.gsd.releases import DPSettings, DPSubspaceResult, dp_gradient_subspace
from pillar_cli.gsd.subspace import GradientMatrix, Subspace, top_right_singular_vectors
from pillar_cli.privacy.unit import Units


def projection_metric(v1: np.ndarray, v2: np.ndarray) -> float:
    """sqrt(1 − ‖V₁ᵀV₂‖²_F / k) ∈ [0, 1]: 0 for equal subspaces, 1 for orthogonal ones."""
    k = v1.shape[1]
    overlap = float(np.linalg.norm(v1.T @ v2) ** 2) / k
    return float(np.sqrt(np.clip(1.0 - overlap, 0.0, 1.0)))


def row_labels(inputs: np.ndarray, num_classes: int, seed: int) -> np.ndarray:
    """A random label for every row drawn from the row itself (blake2b of its bytes, keyed by the seed):
    deleting one row leaves every other row's label as it was, which labels by position would not (the
    DP-GSD's neighbours)."""
    key = seed.to_bytes(8, "little", signed=True)
    return np.array(
        [
            int.from_bytes(
                hashlib.blake2b(np.ascontiguousarray(row).tobytes(), digest_size=8, key=key).digest(),
                "little",
            )
            % num_classes
            for row in inputs
        ],
        dtype=np.int64,
    )


def random_rows_and_labels(
    n: int, max_samples: int, num_classes: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """A seeded subsample of at most `max_samples` rows (all rows, in order, when n ≤ max_samples) and
    labels."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, min(max_samples, n), replace=False))
    return rows, rng.integers(0, num_classes, len(rows))


@dataclass(frozen=True)
class GSDSettings:
    k: int
    num_classes: int
    seed: int = 0
    max_samples: int = 2000
    dp: DPSettings | None = None
    normalize_rows: bool = False  # unit-norm gradient rows before the SVD (the authors' released script)


def gradient_matrix(
    probe: Probe, inputs: np.ndarray, settings: GSDSettings, seed: int, max_samples: int | None = None
) -> GradientMatrix:
    """Per-sample gradients on a seeded subsample of at most `max_samples` rows, with seeded random labels."""
    if len(inputs) < settings.k:
        raise DataError(f"a GSD input has {len(inputs)} rows, fewer than {param('k')} {settings.k}")
    rows, labels = random_rows_and_labels(
        len(inputs), max_samples or settings.max_samples, settings.num_classes, seed
    )
    return GradientMatrix(probe, inputs[rows], labels, normalize_rows=settings.normalize_rows)


@dataclass
class GSDPlan:
    """The gradient matrices of one GSD ranking, built before any gradient is computed (to size progress
    bars).

    With `settings.dp`, the private subspace is released by a DP mechanism over all private rows; candidates
    are public and probed as without DP.
    """

    private: GradientMatrix
    candidates: list[GradientMatrix]
    settings: GSDSettings
    units: Units | None = None  # the private rows' units, which a DP release bounds (None: each row its own)

    @property
    def gradient_rows(self) -> int:
        """Per-sample gradients the plan computes, recomputations of uncached matrices included."""
        private = self.private.rows * self.private.passes(subspace=self.settings.dp is None)
        return private + sum(m.rows * m.passes(subspace=True) for m in self.candidates)

    def run(self, on_rows: Callable[[int], None] = lambda n: None) -> GSDResult:
        k, seed = self.settings.k, self.settings.seed
        for matrix in (self.private, *self.candidates):
            matrix.on_rows = on_rows
        released, private = None, None
        if self.settings.dp is None:
            private = top_right_singular_vectors(self.private, k, seed)
            reference = private.basis
        else:
            released = dp_gradient_subspace(self.private, k, self.settings.dp, self.units)
            reference = released.basis
        candidates = [
            top_right_singular_vectors(matrix, k, seed + 1 + i) for i, matrix in enumerate(self.candidates)
        ]
        distances = [projection_metric(reference, subspace.basis) for subspace in candidates]
        return GSDResult(distances, released, private, candidates)


@dataclass(frozen=True)
class GSDResult:
    distances: list[float]
    released: DPSubspaceResult | None  # the DP release of the private subspace, if any
    private: Subspace | None  # the private subspace computed without DP
    candidates: list[Subspace]


def plan_gsd(
    private: tuple[np.ndarray, Probe],
    candidates: list[tuple[np.ndarray, Probe]],
    settings: GSDSettings,
    units: Units | None = None,
) -> GSDPlan:
    """GSD between the private inputs and each candidate, each read by its copy of the same probe; with DP,
    every private row, labelled from its own content, and `units` (the private rows' persons, where they name
    them)."""
    inputs, probe = private
    if settings.dp is None:
        matrix = gradient_matrix(probe, inputs, settings, settings.seed)
    else:
        if len(inputs) < settings.k:
            raise DataError(f"a GSD input has {len(inputs)} rows, fewer than {param('k')} {settings.k}")
        rows = np.asarray(inputs)
        matrix = GradientMatrix(
            probe,
            rows,
            row_labels(rows, settings.num_classes, settings.seed),
            normalize_rows=settings.normalize_rows,
        )
    return GSDPlan(
        matrix,
        [gradient_matrix(p, x, settings, settings.seed + 1 + i) for i, (x, p) in enumerate(candidates)],
        settings,
        units,
    )
