"""Gradient Subspace Distance (Gu, Kamath, Wu; Algorithm 1) for a linear probe on embeddings.

Per-sample gradients are taken at FIXED initial weights (the same for every dataset) with random labels, so
no dataset's labels enter; the top-k right singular vectors of each gradient matrix span its gradient
subspace, and the projection metric between two subspaces, sqrt(1 − ‖V₁ᵀV₂‖²_F / k), lies in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from scipy.sparse.linalg import eigsh

from pillar_cli.errors import DataError, UsageError
from pillar_cli.privacy import calibrate_noise


def probe_initialisation(dim: int, num_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((dim, num_classes)) / np.sqrt(dim)).astype(np.float32), np.zeros(num_classes, np.float32)


def per_sample_gradients(features: np.ndarray, labels: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """(n, (D+1)·C): row i is vec([x_i, 1] ⊗ (softmax(x_i W + b) − e_{y_i})), the CE gradient wrt (W; b)."""
    x = torch.as_tensor(features, dtype=torch.float64)
    residual = torch.softmax(x @ torch.as_tensor(weights, dtype=torch.float64) + torch.as_tensor(bias, dtype=torch.float64), -1)
    residual[torch.arange(len(x)), torch.as_tensor(labels)] -= 1.0
    augmented = torch.cat([x, torch.ones(len(x), 1, dtype=x.dtype)], dim=1)
    return (augmented[:, :, None] * residual[:, None, :]).reshape(len(x), -1).numpy()


def gradient_subspace(gradients: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """The top-k right singular vectors (p, k) of the gradient matrix."""
    from sklearn.utils.extmath import randomized_svd

    if not 1 <= k <= min(gradients.shape):
        raise UsageError(f"--k {k} must be between 1 and min(samples, gradient dimension) = {min(gradients.shape)}")
    _, _, vt = randomized_svd(gradients, k, n_oversamples=20, n_iter=7, random_state=seed)
    return vt.T


def projection_metric(v1: np.ndarray, v2: np.ndarray) -> float:
    """sqrt(1 − ‖V₁ᵀV₂‖²_F / k) ∈ [0, 1]: 0 for equal subspaces, 1 for orthogonal ones."""
    k = v1.shape[1]
    overlap = float(np.linalg.norm(v1.T @ v2) ** 2) / k
    return float(np.sqrt(np.clip(1.0 - overlap, 0.0, 1.0)))


def dataset_subspace(features: np.ndarray, probe: tuple[np.ndarray, np.ndarray], k: int, seed: int,
                     max_samples: int) -> np.ndarray:
    """Gradient subspace of one dataset: seeded subsample of at most `max_samples` rows, random labels."""
    if len(features) < k:
        raise DataError(f"a GSD input has {len(features)} rows, fewer than --k {k}")
    weights, bias = probe
    rows, labels = random_rows_and_labels(len(features), max_samples, weights.shape[1], seed)
    return gradient_subspace(per_sample_gradients(features[rows], labels, weights, bias), k, seed)


def random_rows_and_labels(n: int, max_samples: int, num_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A seeded subsample of at most `max_samples` rows (all rows, in order, when n ≤ max_samples) and labels."""
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(n, min(max_samples, n), replace=False))
    return rows, rng.integers(0, num_classes, len(rows))


@dataclass(frozen=True)
class DPSettings:
    epsilon: float
    delta: float
    clip: float = 1.0


def gradient_subspace_distances(private: np.ndarray, candidates: list[np.ndarray], num_classes: int, k: int,
                                seed: int = 0, max_samples: int = 2000,
                                dp: DPSettings | None = None) -> tuple[list[float], DPSubspaceResult | None]:
    """GSD between the private features and each candidate, all probed at the same initial weights.

    With `dp`, the private subspace is (ε, δ)-DP (Analyze-Gauss over all private rows); candidates are public.
    """
    for public in candidates:
        if public.shape[1] != private.shape[1]:
            raise DataError(f"private features have {private.shape[1]} dimensions, a candidate {public.shape[1]}: "
                            "embed all sets with the same backbone")
    probe = probe_initialisation(private.shape[1], num_classes, seed)
    released = None
    if dp is None:
        reference = dataset_subspace(private, probe, k, seed, max_samples)
    else:
        released = dp_gradient_subspace(private, probe, k, dp.clip, dp.epsilon, dp.delta, seed)
        reference = released.basis
    distances = [projection_metric(reference, dataset_subspace(public, probe, k, seed + 1 + i, max_samples))
                 for i, public in enumerate(candidates)]
    return distances, released


MAX_ANALYZE_GAUSS_DIM = 12_000  # the p×p noisy second moment must fit in memory (p² floats)


@dataclass(frozen=True)
class DPSubspaceResult:
    basis: np.ndarray  # (p, k)
    noise_std: float
    noise_multiplier: float
    rows: int


def dp_gradient_subspace(features: np.ndarray, probe: tuple[np.ndarray, np.ndarray], k: int, clip: float,
                         epsilon: float, delta: float, seed: int, block: int = 2048) -> DPSubspaceResult:
    """(ε, δ)-DP top-k gradient subspace by Analyze-Gauss (Dwork, Talwar, Thakurta, Zhang 2014).

    Every private row's gradient is clipped to `clip` (all rows are used: an index-based subsample is not a fixed
    function of the neighbouring dataset); GᵀG changes by ggᵀ (Frobenius norm ≤ clip²) when a row is added or
    removed, so a symmetric Gaussian matrix of σ = z·clip² is added, z calibrated for one Gaussian mechanism by the
    PLD accountant; the top-k eigenvectors of the noisy matrix are the subspace.
    """
    weights, bias = probe
    p = (features.shape[1] + 1) * weights.shape[1]
    if p > MAX_ANALYZE_GAUSS_DIM:
        raise UsageError(f"DP-GSD forms a {p}×{p} matrix (gradient dimension {p}); at most {MAX_ANALYZE_GAUSS_DIM} "
                         "is supported", hint="reduce the feature dimension (e.g. embed with a smaller backbone)")
    _, labels = random_rows_and_labels(len(features), len(features), weights.shape[1], seed)
    second_moment = np.zeros((p, p))
    for start in range(0, len(features), block):
        grads = per_sample_gradients(features[start:start + block], labels[start:start + block], weights, bias)
        norms = np.linalg.norm(grads, axis=1, keepdims=True)
        grads *= np.minimum(1.0, clip / np.maximum(norms, 1e-12))
        second_moment += grads.T @ grads
    multiplier = calibrate_noise("pld", epsilon, delta, 1.0, 1)
    std = multiplier * clip**2
    noise = np.triu(np.random.default_rng([seed, 1]).normal(0.0, std, (p, p)))
    second_moment += noise + np.triu(noise, 1).T
    del noise
    _, vectors = eigsh(second_moment, k=k, which="LA")
    return DPSubspaceResult(vectors[:, ::-1], std, multiplier, len(features))
