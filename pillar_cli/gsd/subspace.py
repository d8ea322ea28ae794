"""Top-k right singular subspaces of per-sample gradient matrices too large to hold in memory.

A `GradientMatrix` produces its rows in blocks from a probe; it keeps them (float32) when they fit in
`cache_bytes` and recomputes them on every pass otherwise (a timm probe with a conv layer trainable has millions of columns).
`top_right_singular_vectors` is a randomized range finder with power iterations (Halko, Martinsson, Tropp 2011)
that only ever needs the products G·Ω and Gᵀ·Q, one pass over the blocks each.
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.gsd.probes import Probe

BLOCK_BYTES = 2**28  # one block of gradients, even upcast to float64: ≤ 256 MiB, and at most 256 rows
POWER_ITERATIONS = 4
RANK_TOLERANCE = 1e-10  # singular values below 1e-5 of the largest count as zero (float32 gradients)


class GradientMatrix:
    """The (rows, p) per-sample gradients of `probe` on `inputs` with `labels`, produced in blocks of rows."""

    def __init__(self, probe: Probe, inputs: np.ndarray, labels: np.ndarray, cache_bytes: int = 4 * 2**30):
        self.probe, self.inputs, self.labels = probe, inputs, labels
        self.rows, self.dim = len(inputs), probe.dim
        self.block = int(np.clip(BLOCK_BYTES // (8 * self.dim), 1, 256))
        self.cached = self.rows * self.dim * 4 <= cache_bytes
        self._cache: np.ndarray | None = None  # all rows (float32), once a pass has completed
        self.on_rows: Callable[[int], None] = lambda n: None  # called as gradient rows are computed

    def passes(self, subspace: bool) -> int:
        """How often each row's gradient is computed: for the top-k subspace, or for one `clipped_gram`."""
        return 1 if self.cached or not subspace else 2 * POWER_ITERATIONS + 2

    def blocks(self) -> Iterator[tuple[slice, np.ndarray]]:
        """(row slice, float32 gradients of those rows), in row order."""
        starts = [slice(start, start + self.block) for start in range(0, self.rows, self.block)]
        if self._cache is not None:
            yield from ((rows, self._cache[rows]) for rows in starts)
            return
        filling = np.empty((self.rows, self.dim), np.float32) if self.cached else None
        for rows in starts:
            gradients = np.asarray(self.probe.gradients(self.inputs[rows], self.labels[rows]), dtype=np.float32)
            self.on_rows(len(gradients))
            if filling is not None:
                filling[rows] = gradients
            yield rows, gradients
        self._cache = filling

    def times(self, right: np.ndarray) -> np.ndarray:
        """G · right (float32 products: the gradients are never upcast)."""
        right = right.astype(np.float32)
        if self._cache is not None:
            return self._cache @ right
        return np.vstack([gradients @ right for _, gradients in self.blocks()])

    def transpose_times(self, left: np.ndarray) -> np.ndarray:
        """Gᵀ · left."""
        left = left.astype(np.float32)
        if self._cache is not None:
            return self._cache.T @ left
        product = np.zeros((self.dim, left.shape[1]), np.float32)
        for rows, gradients in self.blocks():
            product += gradients.T @ left[rows]
        return product


def top_right_singular_vectors(matrix: GradientMatrix, k: int, seed: int, oversample: int = 10) -> np.ndarray:
    """(p, k) orthonormal basis of the span of G's top-k right singular vectors.

    Subspace iteration on the row side only (n×width QRs; p can be millions), then the top-k eigenvectors of the
    small Gram matrix of Qᵀ G give the right singular vectors.
    """
    if not 1 <= k <= min(matrix.rows, matrix.dim):
        raise UsageError(f"{param('k')} {k} must be between 1 and min(samples, gradient dimension) = "
                         f"{min(matrix.rows, matrix.dim)}")
    width = min(k + oversample, matrix.rows, matrix.dim)
    sketch = matrix.times(np.random.default_rng(seed).standard_normal((matrix.dim, width)))
    for _ in range(POWER_ITERATIONS):
        sketch = matrix.times(matrix.transpose_times(np.linalg.qr(sketch.astype(np.float64))[0]))
    projected = matrix.transpose_times(np.linalg.qr(sketch.astype(np.float64))[0]).astype(np.float64)  # Gᵀ Q
    values, vectors = np.linalg.eigh(projected.T @ projected)
    values, vectors = values[::-1], vectors[:, ::-1]
    rank = int(np.sum(values > RANK_TOLERANCE * max(values[0], 0.0)))
    if rank < k:
        raise DataError(f"the per-sample gradients have rank {rank} < {param('k')} {k}: the probe cannot tell this data apart",
                        hint="zero-initialised layers have zero gradients (e.g. the last conv of a random-init "
                             f"ResNet block): pick other {param('trainable')} parameters, {param('probe_weights')} or a smaller "
                             f"{param('k')}")
    top = vectors[:, :k] / np.sqrt(values[:k])
    basis = projected @ top
    return basis @ np.linalg.inv(np.linalg.cholesky(basis.T @ basis)).T  # re-orthonormalise (Cholesky QR)


def clipped_gram(matrix: GradientMatrix, clip: float) -> np.ndarray:
    """Σ_i g̃_i g̃_iᵀ over rows clipped to norm ≤ `clip`: one row changes it by at most clip² (Frobenius)."""
    gram = np.zeros((matrix.dim, matrix.dim))
    for _, gradients in matrix.blocks():
        gradients = gradients.astype(np.float64)
        norms = np.linalg.norm(gradients, axis=1, keepdims=True)
        clipped = gradients * np.minimum(1.0, clip / np.maximum(norms, 1e-12))
        gram += clipped.T @ clipped
    return gram
