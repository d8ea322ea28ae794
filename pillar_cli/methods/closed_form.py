"""Closed-form private heads: one Gaussian release of sufficient statistics of the private rows, then a solve
(Mehta et al., "Differentially private image classification from features", TMLR 2023).

Both read the private rows projected on the top-k public components and scaled to unit norm, so that one row
moves a released statistic by a known amount whatever its features; the head reads test rows the same way.
Their ε is that of the one release (a Gaussian mechanism: sampling rate 1, one step), calibrated and
recomputed by the accountant like every other run; nothing else touches private labels.

- `public-lda`: a linear discriminant. The shared covariance comes from the PUBLIC rows (same projection, same
  scaling; Ledoit–Wolf shrinkage, which public data alone sets) plus λ·I, by default λ = k·(σC/ñ)², the
  expected squared norm of the noise on each released class mean. The release is the per-class sums of the
  private rows: one row changes one sum by at most 1 (sensitivity 1). Class sizes are taken as ñ / C from the
  sweep's released row count ñ (privacy/count.py; balanced classes assumed, and stated): nothing in the head
  is a function of the private n, and releasing noisy per-class counts instead costs 7–16 points at ε = 0.1 on
  MNIST (docs/methods.md).
- `dp-ls`: DP least squares. Rows a = [u, 1]/√2 (u the unit row; ‖a‖ = 1) and one-hot labels y; the release is
  [AᵀA | AᵀY] (the Gram matrix's upper triangle, mirrored: symmetric noise), whose change by one row is [aaᵀ |
  ayᵀ], of Frobenius norm at most √2: sensitivity √2. The head solves (G + λI) W = B; it reads no row count,
  so it spends none of its budget on one.

With the person as the privacy unit (privacy/guarantee.py), each row's term in a released sum is weighted by
1/(its person's rows): a person then moves a release at most as one row does (sensitivities unchanged), every
person weighs the same in the fit, and public-lda's class sizes read the count of persons.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType

import numpy as np

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Cannot, Cell, Method, Reads, Run, each_run
from pillar_cli.privacy import GaussianEvent
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.symmetric import symmetric_noise
from pillar_cli.privacy.unit import WEIGHTED_PERSON_BOUND


class ClosedFormHead(Method):
    """One Gaussian release of statistics of unit-norm private rows; `sensitivity` is its L2 sensitivity."""

    normalises_rows = True
    sensitivity = 1.0
    person_bound = WEIGHTED_PERSON_BOUND
    cannot: Mapping[Cannot, str] = MappingProxyType({})
    request_fields = frozenset({"k"})  # one release on all rows: no lr, steps or batch

    def configs(self, *, ridges: tuple[float | None, ...], seeds: list[int], **_: object) -> list[RunConfig]:
        """One release per (λ, seed)."""
        check_ridges(ridges)
        return [RunConfig.one_release(seed, ridge) for ridge in ridges for seed in seeds]

    def mechanism(self, config: RunConfig, count: RowCount) -> tuple[float, int]:
        return 1.0, 1

    def train_cell(self, cell: Cell) -> list[Run]:
        """The statistics once per cell; per configuration, their noisy release and a solve."""
        rows = self.features(cell.mapping, cell.data.private_x, cell.k)
        statistics = self.statistics(cell, rows, cell.units.weights)
        sigma = cell.noise_multiplier(1.0, 1)
        event = GaussianEvent(sigma)
        spent = cell.spent_epsilon(event)
        return [
            each_run(cell, c, functools.partial(self._run, cell, statistics, sigma, c, event, spent))
            for c in cell.configs
        ]

    def _run(
        self,
        cell: Cell,
        statistics: tuple,
        sigma: float,
        config: RunConfig,
        event: GaussianEvent,
        spent: float,
    ) -> Run:
        noise = cell.randomness.child("release", config).numpy().standard_normal  # secret, one per release
        head = self.solve(
            statistics, lambda size: sigma * self.sensitivity * noise(size), config.ridge, sigma
        )
        return Run(head=replace(head, steps_run=1), event=event, epsilon_spent=spent)  # one release

    def statistics(self, cell: Cell, rows: np.ndarray, row_weights: np.ndarray) -> tuple:
        """What the release perturbs (and what the solve needs besides it), computed once per cell; each row's
        term weighted by `row_weights` (Cell.units.weights)."""
        raise NotImplementedError

    def solve(
        self, statistics: tuple, noise: Callable[[tuple], np.ndarray], ridge: float | None, sigma: float
    ) -> LinearHead:
        """The head from the noisy statistics with λ = `ridge`, or (None) the method's default, set by the
        noise scale, the shapes and released values only (a run records the λ asked for, 0 for the
        default)."""
        raise NotImplementedError


def check_ridges(ridges: tuple[float | None, ...]) -> None:
    """λ values asked for: positive numbers (None: the method's default)."""
    for ridge in ridges:
        if ridge is not None and not (math.isfinite(ridge) and ridge > 0):
            raise UsageError(f"{param('ridge')} must be a positive number (got {ridge})")


def augmented(rows: np.ndarray) -> np.ndarray:
    """a = [u, 1]/√2 for unit rows u: ‖a‖ ≤ 1, the bias a weight (dp-ls and the second-order heads)."""
    return np.hstack([rows, np.ones((len(rows), 1))]) / math.sqrt(2.0)


def augmented_head(weights: np.ndarray, steps_run: int) -> LinearHead:
    """The head on unit rows u from weights on a = [u, 1]/√2, with the steps (releases) counted as they
    ran."""
    weights = weights / math.sqrt(2.0)
    return LinearHead(weights[:-1].astype(np.float32), weights[-1].astype(np.float32), steps_run)


def noise_ridge(sigma: float, sensitivity: float, dim: int) -> float:
    """λ at the spectral scale of a released (dim × dim) matrix's symmetric noise, 2σΔ√dim, at least 1: the
    released matrix plus λI stays well conditioned."""
    return max(1.0, 2.0 * sigma * sensitivity * math.sqrt(dim))


def class_sums(
    rows: np.ndarray, labels: np.ndarray, num_classes: int, row_weights: np.ndarray | None = None
) -> np.ndarray:
    """(C, d): the per-class sums public-lda releases, each row weighted by `row_weights` (None: 1); a unit
    row of weight ≤ 1 moves one sum by at most its weight."""
    weighted = rows if row_weights is None else rows * row_weights[:, None]
    return np.eye(num_classes)[labels].T @ weighted


def least_squares_statistics(
    rows: np.ndarray, labels: np.ndarray, num_classes: int, row_weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(AᵀWA, AᵀWY) for a = [u, 1]/√2 (‖a‖ ≤ 1 for a unit row u), one-hot y and W the rows' weights (None: 1):
    what dp-ls releases."""
    rows = augmented(rows)
    weighted = rows if row_weights is None else rows * row_weights[:, None]
    return weighted.T @ rows, weighted.T @ np.eye(num_classes)[labels]


class PublicCovarianceLDA(ClosedFormHead):
    name = "public-lda"
    family = "public-LDA"
    description = (
        "linear discriminant: covariance from the PUBLIC rows, one Gaussian release of the per-class sums "
        "of the private rows (unit norm); k components"
    )
    reads = MappingProxyType({Reads.PUBLIC_ROWS: "for the shared covariance"})
    cannot = MappingProxyType(
        {
            Cannot.BE_AUDITED: "its covariance comes from public rows, which hold nothing in the "
            "canaries' coordinates"
        }
    )
    mechanism_description = (
        "one Gaussian release of the per-class sums of the unit-norm rows, L2 sensitivity 1; "
        "class sizes ñ/C from the released row count"
    )

    def statistics(self, cell: Cell, rows: np.ndarray, row_weights: np.ndarray) -> tuple:
        data = cell.data
        public = self.features(cell.mapping, data.public, cell.k)
        if len(public) <= public.shape[1]:
            raise DataError(
                f"{len(public)} public rows cannot estimate a {public.shape[1]}-dimensional covariance",
                hint=f"use a smaller {param('k')} or more public rows",
            )
        return (
            class_sums(rows, data.private_y, data.num_classes, row_weights),
            cell.rows.value,
            public_covariance(public),
        )

    def solve(
        self, statistics: tuple, noise: Callable[[tuple], np.ndarray], ridge: float | None, sigma: float
    ) -> LinearHead:
        """Means from the noisy sums over ñ/C, ñ the released row count (at least one row per class); default
        λ = k·(σΔC/ñ)², the expected squared norm of a noisy class mean's noise."""
        sums, released_count, covariance = statistics
        classes, dim = sums.shape
        count = max(float(classes), released_count)
        means = (sums + noise(sums.shape)) * classes / count
        if ridge is None:
            ridge = dim * (sigma * self.sensitivity * classes / count) ** 2
        return discriminant(means, covariance + ridge * np.eye(len(covariance)))


def public_covariance(public: np.ndarray) -> np.ndarray:
    """The public rows' covariance with Ledoit–Wolf shrinkage: the shrinkage is estimated from the same
    rows."""
    from sklearn.covariance import ledoit_wolf

    return ledoit_wolf(public)[0]


def discriminant(means: np.ndarray, covariance: np.ndarray) -> LinearHead:
    """The linear discriminant of classes with these means, a shared covariance and equal priors."""
    weights = np.linalg.solve(covariance, means.T)  # Σ⁻¹ μ_c per class
    bias = -0.5 * np.sum(means.T * weights, axis=0)
    return LinearHead(weights.astype(np.float32), bias.astype(np.float32))


class DPLeastSquares(ClosedFormHead):
    name = "dp-ls"
    family = "DP-LS"
    description = (
        "DP least squares: one Gaussian release of [AᵀA | AᵀY] for the private rows (unit norm, bias "
        "included), a ridge solve; k components"
    )
    sensitivity = math.sqrt(2.0)
    reads_count = False
    mechanism_description = (
        "one Gaussian release of [AᵀA | AᵀY] for unit-norm rows [a, 1]/√2 and one-hot labels, "
        "L2 sensitivity √2"
    )

    def statistics(self, cell: Cell, rows: np.ndarray, row_weights: np.ndarray) -> tuple:
        return least_squares_statistics(rows, cell.data.private_y, cell.data.num_classes, row_weights)

    def solve(
        self, statistics: tuple, noise: Callable[[tuple], np.ndarray], ridge: float | None, sigma: float
    ) -> LinearHead:
        """Default λ: the spectral scale of the Gram matrix's noise, 2σΔ√(d + 1), so the noisy Gram stays
        positive definite; 1 without noise."""
        gram, cross = statistics
        if ridge is None:
            ridge = noise_ridge(sigma, self.sensitivity, len(gram))
        gram = gram + symmetric_noise(noise, len(gram), 1.0)  # `noise` is scaled to the release already
        return augmented_head(
            np.linalg.solve(gram + ridge * np.eye(len(gram)), cross + noise(cross.shape)), 1
        )


PUBLIC_LDA = PublicCovarianceLDA()
DP_LS = DPLeastSquares()
