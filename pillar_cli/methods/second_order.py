"""Second-order private heads: full-batch Newton-like steps on the softmax loss whose curvature is released
once or every step (Mehta et al., "Differentially private image classification from features", TMLR 2023,
Section 4).

Every head reads the rows as dp-ls does: standardised, projected on k public components (k = full: all
features) and scaled to unit norm u, then a = [u, 1]/√2, so ‖a‖ ≤ 1 and the bias is a weight. One row then
moves
- the gradient sum Σ aᵢ(pᵢ − yᵢ)ᵀ by at most ‖p − y‖ ≤ √2 (sensitivity √2, no clipping needed),
- the feature covariance (Gram) Σ aᵢaᵢᵀ by at most ‖aaᵀ‖_F ≤ 1 (sensitivity 1; its upper triangle is released
  and mirrored: symmetric noise),
- the per-class Hessian sums Σ pᵢc(1 − pᵢc) aᵢaᵢᵀ, stacked over the classes, by at most ‖a‖²·(Σ_c pc²(1 −
  pc)²)^½ ≤ ½ (sensitivity ½). Each release is a Gaussian mechanism at one noise multiplier σ (scaled by its
  sensitivity) on all rows (sampling rate 1): a run of T steps is T + 1 (dp-fc) or 2T (dp-newton) of them,
  calibrated and recomputed as one full-batch Gaussian segment by the cell's accountant; they read no row
  count. W starts at 0.

- `dp-newton`: each step releases the gradient and the per-class Hessians and takes the Newton step of each
  class column, W_c ← W_c − (Ĥ_c + λI)⁻¹ ĝ_c (the paper's per-class logistic Hessians; the cross-class blocks
  of the softmax Hessian are left out, which keeps the release C matrices of (k+1)² rather than one of
  (C(k+1))²).
- `dp-fc`: the Gram matrix is released once and preconditions every step, W ← W − 2(Ĝ + λI)⁻¹ ĝ: Böhning's
  bound (the softmax Hessian is at most ½·G in every class direction) makes 2 the step that decreases the loss
  without noise, where the paper tunes a learning rate.
- `public-fc`: dp-fc with the Gram matrix of the PUBLIC rows instead (no release), scaled to ñ/n_public rows
  by the released row count: only the gradients are released.

A released matrix is projected on the positive semi-definite cone (negative eigenvalues set to 0,
post-processing) and λI added; λ defaults to the spectral scale of its noise, 2σΔ√(k+1) (at least 1), as dp-ls
sets it (public-fc, which releases no matrix: of the gradient's noise, Δ = √2).

With the person as the privacy unit every row's term in every released sum is weighted by 1/(its person's
rows) (privacy/guarantee.py): a person moves each release at most as one row does, and public-fc's scale reads
the count of persons.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from pillar_cli.errors import DataError, param
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Cannot, Cell, Method, Reads, Run, each_run
from pillar_cli.methods.closed_form import augmented, augmented_head, check_ridges, noise_ridge
from pillar_cli.privacy import dp_sgd_event
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.symmetric import symmetric_noise
from pillar_cli.privacy.unit import WEIGHTED_PERSON_BOUND

DEFAULT_STEPS = 10  # full-batch steps of a run that gives none
GRADIENT_SENSITIVITY = math.sqrt(2.0)
GRAM_SENSITIVITY = 1.0
HESSIAN_SENSITIVITY = 0.5
BOHNING_STEP = 2.0


def probabilities(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    logits = rows @ weights
    logits -= logits.max(axis=1, keepdims=True)
    exp = np.exp(logits)
    return exp / exp.sum(axis=1, keepdims=True)


def gradient_sum(
    rows: np.ndarray,
    onehot: np.ndarray,
    weights: np.ndarray,
    probs: np.ndarray | None = None,
    row_weights: np.ndarray | None = None,
) -> np.ndarray:
    """Σ wᵢaᵢ(pᵢ − yᵢ)ᵀ, (k+1, C): the softmax loss's gradient summed over the rows, each weighted by
    `row_weights` (None: 1; `probs`: the rows' softmax at `weights`, when the caller has it already)."""
    residuals = (probabilities(rows, weights) if probs is None else probs) - onehot
    return rows.T @ (residuals if row_weights is None else residuals * row_weights[:, None])


@dataclass(frozen=True)
class WeightedRows:
    """What a fit reads of the private rows: a = [u, 1]/√2, one-hot labels, and each row's weight in a
    released sum (Cell.units.weights: 1, or 1/(its person's rows) with the person as the unit)."""

    a: np.ndarray
    onehot: np.ndarray
    weights: np.ndarray

    def gradient(self, head: np.ndarray, probs: np.ndarray | None = None) -> np.ndarray:
        return gradient_sum(self.a, self.onehot, head, probs, self.weights)

    def gram(self, curvature: np.ndarray | None = None) -> np.ndarray:
        """Σ wᵢaᵢaᵢᵀ, or with `curvature` (one value per row) Σ wᵢcᵢaᵢaᵢᵀ: a class's Hessian sum."""
        scale = self.weights if curvature is None else self.weights * curvature
        return (self.a * scale[:, None]).T @ self.a


def positive_part(matrix: np.ndarray) -> np.ndarray:
    """The nearest positive semi-definite matrix to a released symmetric one (its negative eigenvalues set to
    0): post-processing, so that with λ > 0 every step solves a positive definite system."""
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * np.maximum(values, 0.0)) @ vectors.T


class SecondOrderHead(Method):
    """T full-batch steps on unit-norm augmented rows, T from the request's steps (its own default
    otherwise)."""

    normalises_rows = True
    person_bound = WEIGHTED_PERSON_BOUND
    cannot: Mapping[Cannot, str] = MappingProxyType({})
    reads_count = False
    request_fields = frozenset({"k", "steps"})  # one full-batch run per (steps, λ, seed): no lr or batch
    steps_rule = f"{DEFAULT_STEPS} full-batch steps"

    def configs(
        self, *, steps: list[int] | None, ridges: tuple[float | None, ...], seeds: list[int], **_: object
    ) -> list[RunConfig]:
        check_ridges(ridges)
        return [
            RunConfig(0.0, t, 0, seed, ridge=ridge)
            for t in steps or [DEFAULT_STEPS]
            for ridge in ridges
            for seed in seeds
        ]

    def default_steps(self, n: float) -> int:
        return DEFAULT_STEPS

    def releases(self, steps: int) -> int:
        """The Gaussian releases of a run of `steps` steps."""
        raise NotImplementedError

    def mechanism(self, config: RunConfig, count: RowCount) -> tuple[float, int]:
        return 1.0, self.releases(config.steps)

    def train_cell(self, cell: Cell) -> list[Run]:
        rows = WeightedRows(
            augmented(self.features(cell.mapping, cell.data.private_x, cell.k)),
            np.eye(cell.data.num_classes)[cell.data.private_y],
            cell.units.weights,
        )
        prepared = self.prepare(cell, rows)
        runs = []
        for config in cell.configs:
            releases = self.releases(config.steps)
            sigma = cell.noise_multiplier(1.0, releases)
            event = dp_sgd_event(sigma, 1.0, releases)
            # secret, one stream per run
            noise = cell.randomness.child("release", config).numpy().standard_normal
            head = each_run(cell, config, functools.partial(self.fit, rows, prepared, config, sigma, noise))
            runs.append(Run(head=head, event=event, epsilon_spent=cell.spent_epsilon(event)))
        return runs

    def prepare(self, cell: Cell, rows: WeightedRows) -> object:
        """What every configuration of the cell shares (a Gram matrix), computed once."""
        return None

    def fit(self, rows: WeightedRows, prepared: object, config: RunConfig, sigma: float, noise) -> LinearHead:
        raise NotImplementedError

    @staticmethod
    def noisy_gradient(
        rows: WeightedRows, weights: np.ndarray, sigma: float, noise, probs: np.ndarray | None = None
    ) -> np.ndarray:
        return rows.gradient(weights, probs) + sigma * GRADIENT_SENSITIVITY * noise(weights.shape)


class DPNewton(SecondOrderHead):
    name = "dp-newton"
    family = "DP-Newton"
    description = (
        "DP Newton: full-batch steps, each releasing the gradient and the per-class Hessians of the "
        "unit-norm private rows; k components"
    )
    mechanism_description = (
        "2T full-batch Gaussian releases: per step the gradient sum (L2 sensitivity √2) and the "
        "per-class Hessian sums of unit-norm rows [u, 1]/√2 (sensitivity ½)"
    )

    def releases(self, steps: int) -> int:
        return 2 * steps

    def fit(self, rows, prepared, config, sigma, noise) -> LinearHead:
        dim, classes = rows.a.shape[1], rows.onehot.shape[1]
        ridge = (config.ridge or noise_ridge(sigma, HESSIAN_SENSITIVITY, dim)) * np.eye(dim)
        weights, steps_run = np.zeros((dim, classes)), 0
        for steps_run in range(1, config.steps + 1):  # noqa: B007 - the steps taken, read after the loop
            probs = probabilities(rows.a, weights)
            gradient = self.noisy_gradient(rows, weights, sigma, noise, probs)
            curvature = probs * (1.0 - probs)
            for c in range(classes):
                hessian = rows.gram(curvature[:, c])
                hessian = positive_part(hessian + symmetric_noise(noise, dim, sigma * HESSIAN_SENSITIVITY))
                weights[:, c] -= np.linalg.solve(hessian + ridge, gradient[:, c])
        return augmented_head(weights, steps_run)


class DPFeatureCovariance(SecondOrderHead):
    name = "dp-fc"
    family = "DP-FC"
    description = (
        "DP-FC: the private feature covariance released once preconditions full-batch steps that each "
        "release the gradient; k components"
    )
    mechanism_description = (
        "T + 1 full-batch Gaussian releases: the Gram matrix of the unit-norm rows [u, 1]/√2 "
        "once (L2 sensitivity 1), the gradient sum per step (sensitivity √2)"
    )

    def releases(self, steps: int) -> int:
        return steps + 1

    def prepare(self, cell: Cell, rows: WeightedRows) -> object:
        return rows.gram()

    def covariance(self, gram: np.ndarray, sigma: float, noise) -> np.ndarray:
        """The Gram matrix as released, and the ridge default its noise sets."""
        return positive_part(gram + symmetric_noise(noise, len(gram), sigma * GRAM_SENSITIVITY))

    def default_ridge(self, sigma: float, dim: int) -> float:
        return noise_ridge(sigma, GRAM_SENSITIVITY, dim)

    def fit(self, rows, prepared, config, sigma, noise) -> LinearHead:
        dim = rows.a.shape[1]
        covariance = self.covariance(prepared, sigma, noise)
        preconditioner = covariance + (config.ridge or self.default_ridge(sigma, dim)) * np.eye(dim)
        weights, steps_run = np.zeros((dim, rows.onehot.shape[1])), 0
        for steps_run in range(1, config.steps + 1):  # noqa: B007 - the steps taken, read after the loop
            gradient = self.noisy_gradient(rows, weights, sigma, noise)
            weights -= BOHNING_STEP * np.linalg.solve(preconditioner, gradient)
        return augmented_head(weights, steps_run)


class PublicFeatureCovariance(DPFeatureCovariance):
    name = "public-fc"
    family = "public-FC"
    description = (
        "DP-FC with the feature covariance of the PUBLIC rows (no release): full-batch steps that each "
        "release the gradient; k components"
    )
    reads = MappingProxyType({Reads.PUBLIC_ROWS: "for the feature covariance"})
    reads_count = True
    cannot = MappingProxyType(
        {
            Cannot.BE_AUDITED: "its covariance comes from public rows, which hold nothing in the "
            "canaries' coordinates"
        }
    )
    mechanism_description = (
        "T full-batch Gaussian releases of the gradient sum of unit-norm rows [u, 1]/√2 (L2 "
        "sensitivity √2), preconditioned by the public rows' Gram matrix scaled to ñ/n_public "
        "rows (ñ the released row count)"
    )

    def releases(self, steps: int) -> int:
        return steps

    def prepare(self, cell: Cell, rows: WeightedRows) -> object:
        public = augmented(self.features(cell.mapping, cell.data.public, cell.k))
        if len(public) <= public.shape[1]:
            raise DataError(
                f"{len(public)} public rows cannot estimate a {public.shape[1]}-dimensional covariance",
                hint=f"use a smaller {param('k')} or more public rows",
            )
        return public.T @ public * (cell.rows.value / len(public))

    def covariance(self, gram: np.ndarray, sigma: float, noise) -> np.ndarray:
        return gram

    def default_ridge(self, sigma: float, dim: int) -> float:
        """Nothing released to regularise: the scale of the gradient's noise, 2σ√2·√(k+1), damps the
        directions where it dominates (with λ = 1 the steps follow the noise: 0.65 against 0.80 at ε = 0.1 on
        real features)."""
        return noise_ridge(sigma, GRADIENT_SENSITIVITY, dim)


DP_NEWTON = DPNewton()
DP_FC = DPFeatureCovariance()
PUBLIC_FC = PublicFeatureCovariance()
