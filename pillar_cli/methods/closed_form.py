"""Closed-form private heads: one Gaussian release of sufficient statistics of the private rows, then a solve
(Mehta et al., "Differentially private image classification from features", TMLR 2023).

Both read the private rows projected on the top-k public components and scaled to unit norm, so that one row moves
a released statistic by a known amount whatever its features; the head reads test rows the same way. Their ε is
that of the one release (a Gaussian mechanism: sampling rate 1, one step), calibrated and recomputed by the
accountant like every other run; nothing else touches private labels.

- `public-lda`: a linear discriminant. The shared covariance comes from the PUBLIC rows (same projection, same
  scaling) plus λ·I; the release is the per-class sums of the private rows (one row changes one sum by at most 1:
  sensitivity 1). Class sizes are taken as n / C (balanced classes assumed, and stated), because releasing noisy
  per-class counts costs 7–16 points at ε = 0.1 on MNIST (docs/methods.md).
- `dp-ls`: DP least squares. Rows a = [u, 1]/√2 (u the unit row; ‖a‖ = 1) and one-hot labels y; the release is
  [AᵀA | AᵀY] (the Gram matrix's upper triangle, mirrored: symmetric noise), whose change by one row is
  [aaᵀ | ayᵀ], of Frobenius norm at most √2: sensitivity √2. The head solves (G + λI) W = B.
"""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Cell, Method, TrainedRun, each_run
from pillar_cli.privacy import DPEvent, spent_epsilon

PUBLIC_LDA_RIDGE = 0.1  # λ on unit rows: measured on MNIST-5k (docs/methods.md); fixed, so no data chooses it


class ClosedFormHead(Method):
    """One Gaussian release of statistics of unit-norm private rows; `sensitivity` is its L2 sensitivity."""

    normalises_rows = True
    sensitivity = 1.0

    def configs(self, lrs: list[float], steps: list[int], batch_sizes: list[int], seeds: list[int],
                momentum: float, weight_decay: float, theory_steps: tuple[int, ...],
                ridges: tuple[float | None, ...]) -> list[RunConfig]:
        """One release per (λ, seed): no learning rate or steps; batch size 0 stands for all rows."""
        for ridge in ridges:
            if ridge is not None and not (math.isfinite(ridge) and ridge > 0):
                raise UsageError(f"{param('ridge')} must be a positive number (got {ridge})")
        return [RunConfig(0.0, 1, 0, seed, ridge=ridge) for ridge in ridges for seed in seeds]

    def mechanism(self, config: RunConfig, n: int) -> tuple[float, int]:
        return 1.0, 1

    def train_cell(self, cell: Cell) -> list[TrainedRun]:
        rows = self.features(cell.mapping, cell.data.private_x, cell.k)
        sigma = cell.noise_multiplier(1.0, 1)
        event = DPEvent(sigma, 1.0, 1, cell.privacy.delta, self.sensitivity,
                        mechanism=f"{self.name}: one Gaussian release, L2 sensitivity {self.sensitivity:.4g}")
        spent = spent_epsilon(cell.privacy.accountant, event)
        return [each_run(cell, c, lambda c=c: self._run(cell, rows, sigma, c, event, spent)) for c in cell.configs]

    def _run(self, cell: Cell, rows: np.ndarray, sigma: float, config: RunConfig, event: DPEvent,
             spent: float) -> TrainedRun:
        ridge = config.ridge if config.ridge is not None else self.default_ridge(sigma, rows.shape[1])
        noise = np.random.default_rng([config.seed, 0x51A7]).standard_normal
        head = self.solve(cell, rows, lambda shape: sigma * self.sensitivity * noise(shape), ridge)
        return TrainedRun(head, event, spent, ridge)

    def default_ridge(self, sigma: float, dim: int) -> float:
        raise NotImplementedError

    def solve(self, cell: Cell, rows: np.ndarray, noise, ridge: float) -> LinearHead:
        raise NotImplementedError


def class_sums(rows: np.ndarray, labels: np.ndarray, num_classes: int) -> np.ndarray:
    """(C, d): the per-class sums public-lda releases; a unit row moves one sum by at most 1."""
    sums = np.zeros((num_classes, rows.shape[1]))
    np.add.at(sums, labels, rows)
    return sums


def least_squares_statistics(rows: np.ndarray, labels: np.ndarray, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(AᵀA, AᵀY) for a = [u, 1]/√2 (‖a‖ ≤ 1 for a unit row u) and one-hot y: what dp-ls releases."""
    augmented = np.hstack([rows, np.ones((len(rows), 1))]) / math.sqrt(2.0)
    return augmented.T @ augmented, augmented.T @ np.eye(num_classes)[labels]


class PublicCovarianceLDA(ClosedFormHead):
    name = "public-lda"
    description = ("linear discriminant: covariance from the PUBLIC rows, one Gaussian release of the per-class sums "
                   "of the private rows (unit norm); k components")
    needs_public_rows = "for the shared covariance"

    def default_ridge(self, sigma: float, dim: int) -> float:
        return PUBLIC_LDA_RIDGE

    def solve(self, cell: Cell, rows: np.ndarray, noise, ridge: float) -> LinearHead:
        data = cell.data
        public = self.features(cell.mapping, data.public_x, cell.k)
        if len(public) <= public.shape[1]:
            raise DataError(f"{len(public)} public rows cannot estimate a {public.shape[1]}-dimensional covariance",
                            hint=f"use a smaller {param('k')} or more public rows")
        sums = class_sums(rows, data.private_y, data.num_classes)
        means = (sums + noise(sums.shape)) / (len(rows) / data.num_classes)
        return discriminant(means, np.cov(public.T) + ridge * np.eye(rows.shape[1]))


def discriminant(means: np.ndarray, covariance: np.ndarray) -> LinearHead:
    """The linear discriminant of classes with these means, a shared covariance and equal priors."""
    weights = np.linalg.solve(covariance, means.T)  # Σ⁻¹ μ_c per class
    bias = -0.5 * np.sum(means.T * weights, axis=0)
    return LinearHead(weights.astype(np.float32), bias.astype(np.float32))


class DPLeastSquares(ClosedFormHead):
    name = "dp-ls"
    description = ("DP least squares: one Gaussian release of [AᵀA | AᵀY] for the private rows (unit norm, bias "
                   "included), a ridge solve; k components")
    sensitivity = math.sqrt(2.0)

    def default_ridge(self, sigma: float, dim: int) -> float:
        """The spectral scale of the Gram matrix's noise, 2σΔ√(d + 1), so the noisy Gram stays positive definite;
        1 without noise."""
        return max(1.0, 2.0 * sigma * self.sensitivity * math.sqrt(dim + 1))

    def solve(self, cell: Cell, rows: np.ndarray, noise, ridge: float) -> LinearHead:
        gram, cross = least_squares_statistics(rows, cell.data.private_y, cell.data.num_classes)
        upper = np.triu(noise(gram.shape))
        gram = gram + upper + np.triu(upper, 1).T  # symmetric noise: the upper triangle released, mirrored
        solution = np.linalg.solve(gram + ridge * np.eye(len(gram)), cross + noise(cross.shape)) / math.sqrt(2.0)
        return LinearHead(solution[:-1].astype(np.float32), solution[-1].astype(np.float32))


PUBLIC_LDA = PublicCovarianceLDA()
DP_LS = DPLeastSquares()
