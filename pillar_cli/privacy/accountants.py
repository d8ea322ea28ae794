"""The accountants registry (prv, rdp, pld, gdp) and ε of a DP event tree at δ by one of them.

Every ε the tool writes is `spent_epsilon(accountant, event, delta)`, recomputed from the event after the
mechanism ran, never copied from a target. The named accountant reads the tree's Poisson-subsampled Gaussian
segments (the tight ones, prv and pld, give full-batch segments the exact Gaussian formula of gaussian.py);
the exponential mechanisms composed at the top of a tree add their ε (pure DP); a tree with a private
selection in it (repeat-and-select of one-of trials) is accounted by its Rényi DP curve (rdp.py), whatever the
accountant's name.

Each ε is kept on disk by (accountant, tree, δ) (privacy/cache.py): the run that writes a claim computes it
once, and every reader that checks the claim against its tree (privacy/claims.py) looks it up instead of
paying the accountant again — a second or more for PRV at ε = 0.1.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import PrivacyError, UsageError, param
from pillar_cli.privacy.cache import NumberCache
from pillar_cli.privacy.events import Event, Segment, gaussian_segments, is_private, pure_parts
from pillar_cli.privacy.gaussian import full_batch, gaussian_epsilon, gdp_epsilon
from pillar_cli.privacy.rdp import epsilon_of, event_rdp
from pillar_cli.privacy.rdp_series import remember_rdp_terms
from pillar_cli.privacy.relation import ACCOUNTED

# opacus' default RDP orders top out at 63, too small for ε ≈ 0.1 (the optimum sits near 100-200). Extend them
# with integer orders up to 1024: opacus' fractional-order series and orders above ~1100 lose precision (NaN
# or negative values), and those are discarded rather than trusted.
RDP_ORDERS = np.array(
    sorted(
        {1 + x / 10.0 for x in range(1, 100)}
        | set(range(12, 64))
        | {int(a) for a in np.geomspace(64, 1024, 30)}
    ),
    dtype=float,
)


def _rdp_epsilon(segments: tuple[Segment, ...], delta: float) -> float:
    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    remember_rdp_terms()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rdp = sum(
            compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=RDP_ORDERS)
            for sigma, q, steps in segments
        )
        rdp = np.where(np.isfinite(rdp) & (rdp >= 0), rdp, np.inf)
        return float(get_privacy_spent(orders=RDP_ORDERS, rdp=rdp, delta=delta)[0])


@functools.cache
def _fast_prv_accountant() -> type:
    """opacus' PRV accountant on a domain widened to an FFT-friendly size, its PRVs' means integrated in
    floats.

    opacus composes a PRV with itself T times as `irfft(rfft(pmf) ** T)` over its safe domain, whose size is
    whatever the mesh gives: 8,115,062 = 2·37·109,663 points at ε = 0.1 and 40,000 steps, an FFT pocketfft can
    only do by Bluestein's algorithm (3.3 s each way, 0.15 s at a 5-smooth size). The domain is widened at the
    top to the next even 5-smooth size with the same mesh and the same alignment (t_min = −(size/2 − 1)·dt,
    which the circular composition's roll assumes): a wider truncation only lowers the mass cut off, so the
    bound still holds.

    Each truncated PRV's mean (which its discretisation is shifted to keep) is opacus' quadrature of its CDF,
    called a thousand times or more a PRV with one float at a time: opacus evaluates the CDF's formula as
    numpy expressions on 0-d arrays (about 25 µs a call, a tenth of every ε), `_float_mean_prv`'s the same
    formula with math's functions; and each PRV is discretised with its CDF evaluated once at the cells' edges
    (`_discretised`)."""
    from opacus.accountants import PRVAccountant
    from opacus.accountants.analysis.prv import PoissonSubsampledGaussianPRV, compose_heterogeneous
    from opacus.accountants.analysis.prv.domain import Domain
    from scipy.fft import next_fast_len

    class FastLengthPRVAccountant(PRVAccountant):
        def _get_dprv(self, eps_error: float, delta_error: float):
            prvs = [PoissonSubsampledGaussianPRV(q, sigma) for sigma, q, _ in self.history]
            steps = [steps for _, _, steps in self.history]
            domain = self._get_domain(
                prvs=prvs, num_self_compositions=steps, eps_error=eps_error, delta_error=delta_error
            )
            return compose_heterogeneous(
                dprvs=[
                    _discretised(_float_mean_prv()(prv, domain.t_min, domain.t_max), domain) for prv in prvs
                ],
                num_self_compositions=steps,
            )

        def _get_domain(self, *args, **kwargs) -> Domain:
            safe = super()._get_domain(*args, **kwargs)
            size = next_fast_len(safe.size, real=True)
            while size % 2:
                size = next_fast_len(size + 1, real=True)
            half = size // 2 - 1
            return Domain(t_min=-half * safe.dt, t_max=(half + 1) * safe.dt, size=size)

    return FastLengthPRVAccountant


@functools.cache
def _float_mean_prv() -> type:
    """opacus' truncated Poisson-subsampled Gaussian PRV whose CDF, asked for one float (as `mean`'s
    quadrature asks), is computed in floats: ½·(2 − q·erfc((2zσ² − 1)/(2√2σ)) − (1 − q)·erfc((2zσ² +
    1)/(2√2σ))) at z = log((eᵗ + q − 1)/q) for t > log(1 − q), else 0 (Gopi et al., proposition B4),
    renormalised to [t_min, t_max)."""
    from opacus.accountants.analysis.prv.prvs import TruncatedPrivacyRandomVariable

    class FloatMeanPRV(TruncatedPrivacyRandomVariable):
        def __init__(self, prv, t_min: float, t_max: float) -> None:
            super().__init__(prv, t_min, t_max)
            self._below = float(prv.cdf(t_min))  # numpy's, as opacus renormalises by it
            q = prv.sample_rate  # what every call reads, computed once a PRV
            self._zero_below = math.log(1 - q) if q < 1 else -math.inf
            self._scale = 2 * math.sqrt(2) * prv.noise_multiplier

        def cdf(self, t):
            if not isinstance(t, float):
                return super().cdf(t)
            if t < self.t_min:
                return 0.0
            if t >= self.t_max:
                return 1.0
            return (self._untruncated(t) - self._below) / self._remaining_mass

        def _untruncated(self, t: float) -> float:
            q, sigma, scale = self._prv.sample_rate, self._prv.noise_multiplier, self._scale
            if t <= self._zero_below:
                return 0.0
            if t > 700:  # eᵗ overflows a float; the CDF is 1 there to double precision
                return 1.0
            if (ratio := (math.exp(t) + q - 1) / q) <= 0:  # eᵗ lost in rounding at q = 1: z = −∞, the CDF 0
                return 0.0
            z = math.log(ratio)
            return (
                -q * math.erfc((2 * z * sigma**2 - 1) / scale) / 2
                - (1 - q) * math.erfc((2 * z * sigma**2 + 1) / scale) / 2
                + 1.0
            )

    return FloatMeanPRV


def _discretised(prv, domain):
    """A truncated PRV on `domain` as opacus discretises it — each point the CDF's mass over its cell, the
    domain then shifted so that the discrete mean is the PRV's — with the CDF evaluated once at the cells'
    edges, which each cell shares with the next, instead of at both ends of every cell (two CDFs of millions
    of points at 40,000 steps)."""
    from opacus.accountants.analysis.prv.prvs import DiscretePRV

    centres = domain.ts
    pmf = np.diff(prv.cdf(np.append(centres - domain.dt / 2, centres[-1] + domain.dt / 2)))
    shift = prv.mean() - np.dot(centres, pmf)
    if abs(shift) >= domain.dt / 2:
        raise RuntimeError("Discrete mean differs significantly from continuous mean.")
    return DiscretePRV(pmf=pmf, domain=domain.shift_right(shift))


def _prv_epsilon(segments: tuple[Segment, ...], delta: float) -> float:
    remember_rdp_terms()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        accountant = _fast_prv_accountant()()
        accountant.history = list(segments)
        # opacus' default absolute eps_error (0.01) is 10 % of ε at ε = 0.1: tighten it for small ε.
        rough = float(accountant.get_epsilon(delta, eps_error=0.01))
        return (
            rough if rough > 2 else float(accountant.get_epsilon(delta, eps_error=max(0.005 * rough, 1e-4)))
        )


def _gdp_epsilon(segments: tuple[Segment, ...], delta: float) -> float:
    """μ-GDP composes as the root of the sum of squares (Dong et al.), each segment by opacus' CLT μ; ε at δ
    by the exact μ-GDP curve (gaussian.py; opacus' `eps_from_mu` solves the same equation with a scalar normal
    CDF at 90 µs a call, and cannot go past ε = 500)."""
    from opacus.accountants.analysis.gdp import compute_mu_poisson

    mu = math.hypot(
        *(
            compute_mu_poisson(steps=steps, noise_multiplier=sigma, sample_rate=q)
            for sigma, q, steps in segments
        )
    )
    return gdp_epsilon(float(mu), delta)


def _pld_epsilon(segments: tuple[Segment, ...], delta: float) -> float:
    from dp_accounting import dp_event, pld

    def epsilon(interval: float) -> float:
        accountant = pld.PLDAccountant(ACCOUNTED.to_dp_accounting(), value_discretization_interval=interval)
        for sigma, q, steps in segments:
            accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        return float(accountant.get_epsilon(delta))

    # The pessimistic discretisation error grows with the number of compositions (3 % at ε = 0.1, T = 40,000
    # with an interval of 1e-4): refine the grid for small ε.
    rough = epsilon(1e-4)
    return rough if rough > 1 else epsilon(2e-5)


@dataclass(frozen=True)
class Accountant:
    name: str
    description: str
    compute: Callable[[tuple[Segment, ...], float], float]  # ε of Poisson-subsampled Gaussian segments at δ
    upper_bound: bool = True
    # a numerical approximation of the exact loss distribution: full batches get the exact ε
    tight: bool = False

    def epsilon(self, segments: tuple[Segment, ...], delta: float) -> float:
        """ε at δ of the segments (full-batch ones by the exact formula where the accountant is tight, see
        gaussian.py); a configuration the numerical library cannot handle (10¹⁸ steps: an array of that size)
        is refused with one line instead of the library's exception."""
        if self.tight and full_batch(segments):
            return gaussian_epsilon(segments, delta)
        try:
            return self.compute(segments, delta)
        except (ValueError, RuntimeError, OverflowError, MemoryError, FloatingPointError) as err:
            # the longest segment (not a count's release)
            steps, rate = max((steps, q) for _, q, steps in segments)
            raise PrivacyError(
                f"the {self.name} accountant cannot account for {steps:,} steps at sampling rate "
                f"{rate:.3g}: {err}",
                hint=f"use fewer steps or another {param('accountant')}",
            ) from err


ACCOUNTANTS: dict[str, Accountant] = {
    a.name: a
    for a in (
        Accountant(
            "prv",
            "privacy random variables (Gopi et al.), opacus; tight upper bound",
            _prv_epsilon,
            tight=True,
        ),
        Accountant("rdp", "Rényi DP (Mironov), opacus, orders extended to 1,024", _rdp_epsilon),
        Accountant(
            "pld",
            "privacy loss distributions (Google dp-accounting), pessimistic discretisation; tightest",
            _pld_epsilon,
            tight=True,
        ),
        Accountant(
            "gdp",
            "Gaussian DP CLT (Dong et al.), opacus; an APPROXIMATION, not an upper bound",
            _gdp_epsilon,
            upper_bound=False,
        ),
    )
}


def get_accountant(name: str) -> Accountant:
    if name not in ACCOUNTANTS:
        raise UsageError(f"unknown accountant '{name}' (known: {', '.join(ACCOUNTANTS)})")
    return ACCOUNTANTS[name]


@functools.lru_cache(maxsize=4096)
def spent_epsilon(accountant: str, event: Event, delta: float) -> float:
    """ε at δ of the mechanisms `event` describes, by the named accountant (see the module's docstring)."""
    get_accountant(accountant)
    if not is_private(event):
        return math.inf
    tree = json.dumps(event.to_dict(), sort_keys=True)
    key = hashlib.sha256(f"v1|{accountant}|{tree}|{delta!r}".encode()).hexdigest()
    cache = NumberCache("spent.json")
    if (cached := cache.get(key)) is not None:
        return cached
    spent = computed_epsilon(accountant, event, delta)
    cache.put(key, spent)
    return spent


def computed_epsilon(accountant: str, event: Event, delta: float) -> float:
    """`spent_epsilon` computed, whatever is cached (for a private event tree)."""
    pure, approximate = pure_parts(event)
    if approximate is None:
        return pure
    segments = gaussian_segments(approximate)
    if segments is None:
        return pure + epsilon_of(event_rdp(approximate), delta)
    return pure + get_accountant(accountant).epsilon(tuple(segments), delta)
