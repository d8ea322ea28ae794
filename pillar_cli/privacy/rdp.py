"""Rényi DP curves at a fixed set of orders: of Gaussian and Poisson-subsampled Gaussian mechanisms, of a
trial that runs one of several mechanisms, of a private selection (Papernot & Steinke, "Hyperparameter tuning
with Rényi differential privacy", ICLR 2022), and of any DP event tree built from those; and their conversion
to (ε, δ).

K, the number of trials of a selection, is drawn independently of the data from a truncated negative binomial
distribution of shape η > 0 (η = 1: geometric) or a Poisson distribution (η = ∞). If one trial is (λ, ε_λ)-RDP
at every order λ, releasing the best of K trials is RDP with, at order λ,
- Poisson (Theorem 6): ε_λ + μ·δ̂ + log(μ)/(λ − 1), where δ̂ is the trial's δ at ε̂ = log(1 + 1/(λ − 1));
- truncated negative binomial (Theorem 2): ε_λ + (1 + η)(1 − 1/λ̂)ε_λ̂ + (1 + η)·log(1/γ)/λ̂ + log(μ)/(λ − 1),
  minimised over λ̂; γ is the distribution's parameter for mean μ.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import UsageError, param
from pillar_cli.privacy.events import (
    ComposedEvent,
    Event,
    OneOfEvent,
    RepeatAndSelectEvent,
    SelfComposedEvent,
    gaussian_segments,
)
from pillar_cli.privacy.rdp_series import remember_rdp_terms

# 64 orders: opacus' series costs ~0.1 ms per order and the search below evaluates thousands of curves; the
# optimum for ε ∈ [0.05, 10] lies between 2 and 1,000 and Theorem 2's λ̂ among the same orders.
ORDERS = np.array(
    sorted({1.25, 1.5, 1.75} | set(range(2, 33)) | {int(a) for a in np.geomspace(33, 1024, 31)}), dtype=float
)


@dataclass(frozen=True)
class TrialCount:
    """The distribution of the number of trials: its mean μ and shape η (math.inf: Poisson)."""

    mean: float
    shape: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and self.mean >= 1):
            raise UsageError(
                f"{param('trials')} (the mean number of trials) must be at least 1 (got {self.mean})"
            )
        if not self.shape > 0:
            raise UsageError(
                f"{param('trials_shape')} must be positive, or inf for Poisson (got {self.shape})"
            )

    @property
    def name(self) -> str:
        if math.isinf(self.shape):
            return "poisson"
        return "geometric" if self.shape == 1 else "truncated negative binomial"

    @functools.cached_property
    def gamma(self) -> float:
        """γ of the truncated negative binomial with this mean (its mean η(1/γ − 1)/(1 − γ^η) decreases in γ):
        the smaller end of the bisection, whose mean is at least μ, the conservative side."""
        if self.shape == 1:
            return 1.0 / self.mean
        low, high = 0.0, min(1.0, 2 * (self.shape + 1) / self.mean)
        while high > low * (1 + 1e-12):
            middle = (low + high) / 2
            if _tnb_mean(middle, self.shape) < self.mean:
                high = middle
            else:
                low = middle
        return low

    def draw(self, rng: np.random.Generator) -> int:
        """K: Poisson(μ), or a negative binomial NB(η, γ) conditioned on K ≥ 1 (drawn until positive)."""
        if math.isinf(self.shape):
            return int(rng.poisson(self.mean))
        if self.mean == 1:
            return 1
        while (count := int(rng.negative_binomial(self.shape, self.gamma))) == 0:
            pass
        return count

    def to_dict(self) -> dict:
        return {
            "distribution": self.name,
            "mean": self.mean,
            "shape": self.shape,
            **({} if math.isinf(self.shape) else {"gamma": self.gamma}),
        }


def _tnb_mean(gamma: float, shape: float) -> float:
    if gamma >= 1.0:
        return 1.0
    return shape * (1 / gamma - 1) / (1 - gamma**shape)


def gaussian_rdp(noise_multiplier: float) -> np.ndarray:
    """RDP of one Gaussian mechanism with noise σ times its L2 sensitivity: λ / (2σ²)."""
    return ORDERS / (2 * noise_multiplier**2)


def subsampled_gaussian_rdp(noise_multiplier: float, sample_rate: float, steps: int) -> np.ndarray:
    """RDP of T Poisson-subsampled Gaussian steps (opacus' analysis; invalid values at extreme orders
    dropped)."""
    return steps * _one_step_rdp(noise_multiplier, sample_rate)


@functools.lru_cache(maxsize=4096)
def _one_step_rdp(noise_multiplier: float, sample_rate: float) -> np.ndarray:
    if sample_rate == 1.0:
        return gaussian_rdp(noise_multiplier)
    from opacus.accountants.analysis.rdp import compute_rdp

    remember_rdp_terms()  # as every accountant: the same values whichever runs first in a process
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rdp = np.asarray(
            compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=1, orders=ORDERS)
        )
    return np.where(np.isfinite(rdp) & (rdp >= 0), rdp, np.inf)


def repeat_and_select_rdp(trial: np.ndarray, count: TrialCount) -> np.ndarray:
    """The selection's RDP at every order from one trial's RDP `trial` (at ORDERS)."""
    if math.isinf(count.shape):
        out = np.array(
            [
                trial[i]
                + count.mean * delta_of(trial, math.log1p(1 / (order - 1)))
                + math.log(count.mean) / (order - 1)
                for i, order in enumerate(ORDERS)
            ]
        )
    else:
        constant = (1 + count.shape) * np.min((1 - 1 / ORDERS) * trial + math.log(1 / count.gamma) / ORDERS)
        out = trial + math.log(count.mean) / (ORDERS - 1) + constant
    # RDP is non-decreasing in the order: a bound at a higher order holds at every lower one
    return np.minimum.accumulate(out[::-1])[::-1]


def epsilon_of(rdp: np.ndarray, delta: float) -> float:
    """The (ε, δ)-DP guarantee of RDP values at ORDERS (the conversion of Canonne, Kamath & Steinke)."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    return float(compute_epsilon(ORDERS, rdp, delta)[0])


def delta_of(rdp: np.ndarray, epsilon: float) -> float:
    from dp_accounting.rdp.rdp_privacy_accountant import compute_delta

    return float(compute_delta(ORDERS, rdp, epsilon)[0])


def event_rdp(event: Event) -> np.ndarray:
    """RDP at ORDERS of a tree of Gaussian segments, compositions, one-of trials and repeat-and-select."""
    segments = gaussian_segments(event)
    if segments is not None:
        return np.sum([subsampled_gaussian_rdp(*segment) for segment in segments], axis=0)
    if isinstance(event, ComposedEvent):
        return np.sum([event_rdp(part) for part in event.events], axis=0)
    if isinstance(event, SelfComposedEvent):
        return event.count * event_rdp(event.event)
    if isinstance(event, OneOfEvent):
        return np.max([event_rdp(part) for part in event.events], axis=0)
    if isinstance(event, RepeatAndSelectEvent):
        return repeat_and_select_rdp(event_rdp(event.event), TrialCount(event.mean, event.shape))
    raise UsageError(f"no Rényi DP curve for a '{event.kind}' event")
