"""Passes over public rows, a block at a time so that rows left on disk stay there and no float64 copy of
every row is held: the rows' digests, their columns' moments and their principal axes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from pillar_cli.artifacts.stored_rows import Rows


def l2_normalized_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


CHUNK_ROWS = 8192  # rows summed at a time into a Gram matrix
TEMPORARY_BYTES = 2**25  # a float64 temporary of rows being standardised or projected: 32 MiB whatever D


def rows_per_block(dim: int) -> int:
    """Rows standardised or projected at a time: float64 temporaries of TEMPORARY_BYTES (2,048 rows at D =
    2,048)."""
    return max(256, TEMPORARY_BYTES // (8 * max(dim, 1)))


def row_digests(x: Rows) -> np.ndarray:
    """A 64-bit digest of each row's float32 bytes: equal rows, equal digests (how training spots public
    rows); a block of rows at a time, so that rows left on disk stay there."""
    step = rows_per_block(x.shape[1])
    return np.concatenate(
        [_block_digests(x[start : start + step]) for start in range(0, len(x), step)]
        or [np.zeros(0, np.uint64)]
    )


def _block_digests(block: np.ndarray) -> np.ndarray:
    rows = np.ascontiguousarray(block, dtype=np.float32)
    return np.array(
        [int.from_bytes(hashlib.blake2b(row.tobytes(), digest_size=8).digest(), "little") for row in rows],
        dtype=np.uint64,
    )


def digests_and_moments(
    x: Rows, normalise: Callable[[np.ndarray], np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(`row_digests(x)`, and the mean and standard deviation (ddof 0) of each column of the normalised rows
    in float64) from one reading of the rows: each block's mean and squared deviations are merged into the
    running ones by Chan, Golub and LeVeque's pairwise update, as stable as numpy's two passes."""
    n, dim = x.shape
    digests, mean, squares, seen = [], np.zeros(dim), np.zeros(dim), 0
    for start in range(0, n, CHUNK_ROWS):
        raw = x[start : start + CHUNK_ROWS]
        digests.append(_block_digests(raw))
        block = normalise(np.asarray(raw, dtype=np.float64))
        block_mean = block.mean(axis=0)
        block_squares = ((block - block_mean) ** 2).sum(axis=0)
        total, shift = seen + len(block), block_mean - mean
        mean = mean + shift * (len(block) / total)
        squares = squares + block_squares + shift**2 * (seen * len(block) / total)
        seen = total
    return np.concatenate(digests or [np.zeros(0, np.uint64)]), mean, np.sqrt(squares / max(n, 1))


class ScaledRows:
    """Rows (n, d) as float64, L2-normalised when asked, centred and scaled, made a block at a time when
    sliced: a fit never holds a float64 copy of every row."""

    def __init__(
        self,
        rows: np.ndarray,
        normalise: Callable[[np.ndarray], np.ndarray],
        mean: np.ndarray,
        scale: np.ndarray,
    ):
        self.rows, self.normalise, self.mean, self.scale = rows, normalise, mean, scale
        self.shape = rows.shape

    def __getitem__(self, rows: slice) -> np.ndarray:
        return (self.normalise(np.asarray(self.rows[rows], dtype=np.float64)) - self.mean) / self.scale


def principal_axes(
    x: np.ndarray | ScaledRows, on_rows: Callable[[int], None] = lambda n: None
) -> tuple[np.ndarray, np.ndarray]:
    """The singular values of x (n, d) and its right singular vectors as rows, largest first, from the
    eigenvalues of the smaller of its two Gram matrices (d × d, or n × n with V = XᵀU/σ): a few times faster
    than the SVD of x itself, whose work the thin matrix does not need; directions of zero variance come back
    with σ = 0. The Gram matrix is summed a block of rows at a time, `on_rows(m)` hearing of each block (the
    eigh after is d³ or n³); rows fewer than the dimensions are taken whole (n × d ≤ d²)."""
    n, dim = x.shape
    if n >= dim:
        gram = np.zeros((dim, dim))
        for start in range(0, n, CHUNK_ROWS):
            block = x[start : start + CHUNK_ROWS]
            gram += block.T @ block
            on_rows(len(block))
        eigenvalues, vectors = np.linalg.eigh(gram)
        order = np.argsort(eigenvalues)[::-1]
        return np.sqrt(np.clip(eigenvalues[order], 0.0, None)), vectors[:, order].T
    on_rows(n)
    x = x[0:n]  # a ScaledRows as its float64 matrix; an array as itself
    eigenvalues, left = np.linalg.eigh(x @ x.T)
    order = np.argsort(eigenvalues)[::-1]
    singular = np.sqrt(np.clip(eigenvalues[order], 0.0, None))
    right = (x.T @ left[:, order]) / np.where(singular > 0, singular, 1.0)
    return singular, right.T
