"""DP events as values and the accountants registry (prv, rdp, pld, gdp).

A DP-SGD run is recorded as a `DPEvent`: Poisson-sampled Gaussian mechanism (σ, q) self-composed T times at
clip C, under add/remove-one adjacency, with δ. Any accountant can recompute ε from it later; the ε written to a
model is recomputed from the event after training, never copied from the target.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from pillar_cli.errors import UsageError

# opacus' default RDP orders top out at 63, too small for ε ≈ 0.1 (the optimum sits near 100-200). Extend them
# with integer orders up to 1024: opacus' fractional-order series and orders above ~1100 lose precision (NaN or
# negative values), and those are discarded rather than trusted.
RDP_ORDERS = np.array(sorted({1 + x / 10.0 for x in range(1, 100)} | set(range(12, 64))
                             | {int(a) for a in np.geomspace(64, 1024, 30)}), dtype=float)


@dataclass(frozen=True)
class DPEvent:
    """What was run: enough for any accountant to recompute ε."""

    noise_multiplier: float
    sample_rate: float
    steps: int
    delta: float
    clip: float
    mechanism: str = "poisson-subsampled gaussian, add/remove-one adjacency"
    kind: str = "gaussian"  # or "exponential": one exponential mechanism, noise_multiplier its Gumbel scale / Δ

    def to_dict(self) -> dict:
        return asdict(self)


def exponential_mechanism_event(epsilon: float, sensitivity: float, candidates: int) -> DPEvent:
    """The exponential mechanism at ε over scores of sensitivity Δ: sampling ∝ exp(ε·score / 2Δ), which is the
    report-noisy-max of the scores plus Gumbel noise of scale 2Δ/ε. Pure ε-DP (δ = 0) under add/remove-one and
    replace-one adjacency alike; every accountant reports ε = 2 / noise_multiplier."""
    return DPEvent(2.0 / epsilon, 1.0, 1, 0.0, sensitivity, kind="exponential",
                   mechanism=f"exponential mechanism over {candidates:,} candidates, score sensitivity {sensitivity:g}")


def _rdp_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rdp = compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=RDP_ORDERS)
        rdp = np.where(np.isfinite(rdp) & (rdp >= 0), rdp, np.inf)
        return float(get_privacy_spent(orders=RDP_ORDERS, rdp=rdp, delta=delta)[0])


def _opacus_epsilon(name: str, sigma: float, q: float, steps: int, delta: float) -> float:
    from opacus.accountants import GaussianAccountant, PRVAccountant

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # opacus warns on every GDP construction; the registry labels it instead
        accountant = {"prv": PRVAccountant, "gdp": GaussianAccountant}[name]()
        accountant.history = [(sigma, q, steps)]
        if name == "prv":
            # opacus' default absolute eps_error (0.01) is 10 % of ε at ε = 0.1: tighten it for small ε.
            rough = float(accountant.get_epsilon(delta, eps_error=0.01))
            return rough if rough > 2 else float(accountant.get_epsilon(delta, eps_error=max(0.005 * rough, 1e-4)))
        return float(accountant.get_epsilon(delta))


def _pld_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    from dp_accounting import dp_event, pld

    def epsilon(interval: float) -> float:
        accountant = pld.PLDAccountant(value_discretization_interval=interval)
        accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
        return float(accountant.get_epsilon(delta))

    # The pessimistic discretisation error grows with the number of compositions (3 % at ε = 0.1, T = 40,000 with
    # an interval of 1e-4): refine the grid for small ε.
    rough = epsilon(1e-4)
    return rough if rough > 1 else epsilon(2e-5)


@dataclass(frozen=True)
class Accountant:
    name: str
    description: str
    epsilon: Callable[[float, float, int, float], float]
    upper_bound: bool = True


ACCOUNTANTS: dict[str, Accountant] = {a.name: a for a in (
    Accountant("prv", "privacy random variables (Gopi et al.), opacus; tight upper bound",
               functools.partial(_opacus_epsilon, "prv")),
    Accountant("rdp", "Rényi DP (Mironov), opacus, orders extended to 1,024",
               _rdp_epsilon),
    Accountant("pld", "privacy loss distributions (Google dp-accounting), pessimistic discretisation; tightest",
               _pld_epsilon),
    Accountant("gdp", "Gaussian DP CLT (Dong et al.), opacus; an APPROXIMATION, not an upper bound",
               functools.partial(_opacus_epsilon, "gdp"), upper_bound=False),
)}


def get_accountant(name: str) -> Accountant:
    if name not in ACCOUNTANTS:
        raise UsageError(f"unknown accountant '{name}' (known: {', '.join(ACCOUNTANTS)})")
    return ACCOUNTANTS[name]


@functools.lru_cache(maxsize=4096)
def spent_epsilon(accountant: str, event: DPEvent) -> float:
    if event.noise_multiplier == 0:
        return math.inf
    if event.kind == "exponential":
        return 2.0 / event.noise_multiplier
    return get_accountant(accountant).epsilon(event.noise_multiplier, event.sample_rate, event.steps, event.delta)
