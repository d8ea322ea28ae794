"""ε of Gaussian mechanisms without subsampling, exactly.

A Gaussian mechanism of sensitivity 1 and noise multiplier σ is exactly (1/σ)-GDP, T of them composed with
multipliers σᵢ are exactly μ-GDP with μ = √(Σ 1/σᵢ²), and μ-GDP is (ε, δ)-DP exactly when δ = Φ(−ε/μ + μ/2) −
e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Corollaries 2.13 and 3.3; the analytic Gaussian mechanism of Balle &
Wang 2018). The numerical accountants approximate this curve from above: PLD by a grid whose size grows with
1/σ (minutes per evaluation at ε = 200), PRV by a truncated domain. Full-batch segments (sample rate 1)
therefore get this formula, the tight value of which theirs are upper bounds.
"""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.privacy.events import Segment


def full_batch(segments: tuple[Segment, ...]) -> bool:
    return all(q == 1.0 for _, q, _ in segments)


def gaussian_epsilon(segments: tuple[Segment, ...], delta: float) -> float:
    """ε at δ of full-batch Gaussian segments (σ, 1, steps) composed."""
    return gdp_epsilon(math.sqrt(sum(steps / sigma**2 for sigma, _, steps in segments)), delta)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest ε at which μ-GDP is (ε, δ)-DP (0 where δ(0) ≤ δ already)."""
    from scipy.optimize import brentq  # scipy costs 0.4 s to import; `pillar inspect` never calls this

    if _delta_of(0.0, mu) <= delta:
        return 0.0
    high = 1.0
    while _delta_of(high, mu) > delta:
        high *= 2
    return float(brentq(lambda eps: _delta_of(eps, mu) - delta, 0.0, high, xtol=1e-12, rtol=1e-12))


def _delta_of(eps: float, mu: float) -> float:
    """δ(ε) of μ-GDP, the second term in logs so that e^ε does not overflow."""
    from scipy.special import log_ndtr

    return float(np.exp(log_ndtr(-eps / mu + mu / 2)) - np.exp(eps + log_ndtr(-eps / mu - mu / 2)))


def gdp_mu(epsilon: float, delta: float) -> float:
    """The μ whose μ-GDP curve passes through (ε, δ): the largest Gaussian-DP budget that is (ε, δ)-DP."""
    from scipy.optimize import brentq

    high = 1.0
    while _delta_of(epsilon, high) < delta:
        high *= 2
    return float(brentq(lambda mu: _delta_of(epsilon, mu) - delta, 1e-12, high, xtol=1e-14, rtol=1e-12))
