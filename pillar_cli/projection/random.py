"""A seeded Gaussian random projection: the data-free baseline of the paper (JL)."""

from __future__ import annotations

import numpy as np

from pillar_cli.artifacts.stored_rows import Rows
from pillar_cli.errors import UsageError
from pillar_cli.projection.pca import PublicPCA, project


class GaussianProjection:
    """Johnson-Lindenstrauss baseline: x ↦ Gᵀx / √k with G (D, k) i.i.d. N(0, 1), seeded, using no data at
    all.

    Features are standardised with the same public scaler as PCA so that the two differ only in the subspace.
    Bases are nested: the first k rows of one seeded (k_max, D) Gaussian draw, for every k.
    """

    def __init__(self, scaler: PublicPCA, seed: int = 0):
        self.scaler, self.seed = scaler, seed
        self._dim = scaler.dim

    @property
    def dim(self) -> int:
        return self._dim

    def standardized(self, x: Rows) -> np.ndarray:
        return self.scaler.standardized(x)

    def transform(self, x: Rows, k: int | None) -> np.ndarray:
        return project(self, x, k)

    def basis(self, k: int) -> np.ndarray:
        if not 1 <= k <= self._dim:
            raise UsageError(f"k={k} is out of range for a random projection of {self._dim} dimensions")
        rows = np.random.default_rng(self.seed).standard_normal((k, self._dim))
        return (rows.T / np.sqrt(k)).astype(np.float32)
