"""Sampling the Bingham distribution: the exponential mechanism for a private top-k subspace.

The target on orthonormal (p, k) matrices V has density ∝ exp(η·tr(VᵀAV)). One column (k = 1) is sampled
exactly by the rejection sampler of Kent, Ganeiber & Mardia (2013) with an angular central Gaussian envelope.
For k > 1 a Gibbs sampler (Hoff 2009) redraws one column at a time from its exact conditional: a vector
Bingham on the orthogonal complement of the other columns. The chain approaches the target as sweeps grow; the
DP guarantee holds for the target distribution, so the sweep count is recorded with every release.
"""

from __future__ import annotations

import numpy as np

from pillar_cli.errors import DataError
from pillar_cli.lazy import scipy_optimize

CANDIDATES_PER_ROUND = 64
MAX_ROUNDS = 10_000


def sample_vector_bingham(matrix: np.ndarray, eta: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector x with density ∝ exp(η·xᵀ·matrix·x) on the sphere (exact, by rejection)."""
    values, vectors = np.linalg.eigh(matrix)
    concentrations = eta * (values[-1] - values)  # exp(−Σ λ_i z_i²) in the eigenbasis; the smallest λ is 0
    dim = len(values)
    if dim == 1:
        return vectors[:, 0] * rng.choice([-1.0, 1.0])
    b = _envelope_parameter(concentrations)
    precision = 1.0 + 2.0 * concentrations / b  # the envelope: y ~ N(0, diag(1/precision)), x = y/‖y‖
    log_bound = -(dim - b) / 2 + dim / 2 * np.log(dim / b)
    for _ in range(MAX_ROUNDS):
        y = rng.standard_normal((CANDIDATES_PER_ROUND, dim)) / np.sqrt(precision)
        x = y / np.linalg.norm(y, axis=1, keepdims=True)
        squares = x**2
        log_ratio = -(squares @ concentrations) + dim / 2 * np.log(squares @ precision) - log_bound
        accepted = np.flatnonzero(np.log(rng.uniform(size=CANDIDATES_PER_ROUND)) < log_ratio)
        if accepted.size:
            return vectors @ x[accepted[0]]
    raise DataError(f"Bingham sampling accepted nothing in {MAX_ROUNDS * CANDIDATES_PER_ROUND} proposals")


def _envelope_parameter(concentrations: np.ndarray) -> float:
    """The b in [1, q] with Σ 1/(b + 2λ_i) = 1, which minimises the rejection bound (Kent et al., eq. 3.5)."""
    dim = len(concentrations)
    excess = lambda b: float(np.sum(1.0 / (b + 2.0 * concentrations))) - 1.0  # noqa: E731
    return float(dim) if excess(dim) >= 0 else scipy_optimize.brentq(excess, 1.0, float(dim), xtol=1e-10)


def sample_matrix_bingham(
    matrix: np.ndarray, k: int, eta: float, rng: np.random.Generator, sweeps: int
) -> np.ndarray:
    """Orthonormal (p, k) V with density ∝ exp(η·tr(Vᵀ·matrix·V)): exact for k = 1, `sweeps` Gibbs sweeps
    else."""
    dim = len(matrix)
    if k == 1:
        return sample_vector_bingham(matrix, eta, rng)[:, None]
    basis = np.linalg.qr(rng.standard_normal((dim, k)))[0]  # the chain starts data-independent
    for _ in range(sweeps):
        for column in range(k):
            others = np.delete(basis, column, axis=1)
            complement = np.linalg.qr(others, mode="complete")[0][:, k - 1 :]
            restricted = complement.T @ matrix @ complement
            basis[:, column] = complement @ sample_vector_bingham((restricted + restricted.T) / 2, eta, rng)
    return basis
