"""Accountants, noise calibration and the privacy ledger.

A DP-SGD run is recorded as a `DPEvent`: Poisson-sampled Gaussian mechanism (σ, q) self-composed T times at
clip C, under add/remove-one adjacency, with δ. Any accountant can recompute ε from it later; the ε written to a
model is recomputed from the event after training, never copied from the target.
"""

from __future__ import annotations

import functools
import json
import math
import os
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from pillar_cli.errors import PrivacyError, UsageError

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

    def to_dict(self) -> dict:
        return asdict(self)


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

    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    return float(accountant.get_epsilon(delta))


@dataclass(frozen=True)
class Accountant:
    name: str
    description: str
    epsilon: Callable[[float, float, int, float], float]
    upper_bound: bool = True


ACCOUNTANTS: dict[str, Accountant] = {a.name: a for a in (
    Accountant("prv", "privacy random variables (Gopi et al.), opacus; tight upper bound",
               lambda s, q, t, d: _opacus_epsilon("prv", s, q, t, d)),
    Accountant("rdp", "Rényi DP (Mironov), opacus, orders extended to 1,024",
               _rdp_epsilon),
    Accountant("pld", "privacy loss distributions (Google dp-accounting), pessimistic discretisation; tightest",
               _pld_epsilon),
    Accountant("gdp", "Gaussian DP CLT (Dong et al.), opacus; an APPROXIMATION, not an upper bound",
               lambda s, q, t, d: _opacus_epsilon("gdp", s, q, t, d), upper_bound=False),
)}


def get_accountant(name: str) -> Accountant:
    if name not in ACCOUNTANTS:
        raise UsageError(f"unknown accountant '{name}' (known: {', '.join(ACCOUNTANTS)})")
    return ACCOUNTANTS[name]


def validate_budget(epsilon: float, delta: float, n_private: int) -> None:
    if not epsilon > 0:
        raise UsageError(f"--eps must be > 0 (got {epsilon}); use 'inf' for non-private training")
    if not 0 < delta < 1:
        raise UsageError(f"--delta must be in (0, 1) (got {delta})")
    if delta >= 1.0 / n_private:
        raise PrivacyError(f"--delta {delta:g} is not below 1/n = {1.0 / n_private:.3g} for n = {n_private} private "
                           "rows: such a δ permits releasing individual records", hint="use a smaller --delta")


@functools.lru_cache(maxsize=4096)
def spent_epsilon(accountant: str, event: DPEvent) -> float:
    if event.noise_multiplier == 0:
        return math.inf
    return get_accountant(accountant).epsilon(event.noise_multiplier, event.sample_rate, event.steps, event.delta)


def calibrate_noise(accountant: str, epsilon: float, delta: float, sample_rate: float, steps: int,
                    rel_tol: float = 0.01) -> float:
    """The smallest σ (to `rel_tol`) whose ε is ≤ `epsilon`: spent ε lands in [(1 − rel_tol)·ε, ε]."""
    key = f"v1|{accountant}|{epsilon!r}|{delta!r}|{sample_rate!r}|{steps}|{rel_tol!r}"
    cache = _CalibrationCache()
    if (cached := cache.get(key)) is not None:
        return cached
    eps_of = get_accountant(accountant).epsilon
    low, high = 0.0, 1.0
    while (eps_high := eps_of(high, sample_rate, steps, delta)) > epsilon:
        low, high = high, high * 2
        if high > 1e5:
            raise PrivacyError(f"cannot reach ε = {epsilon} with {accountant}: even σ = 1e5 is not enough")
    while eps_high < (1 - rel_tol) * epsilon and high - low > 1e-6 * high:
        middle = (low + high) / 2
        eps_middle = eps_of(middle, sample_rate, steps, delta)
        if eps_middle > epsilon:
            low = middle
        else:
            high, eps_high = middle, eps_middle
    cache.put(key, high)
    return high


class _CalibrationCache:
    """σ by (accountant, ε, δ, q, T) in a JSON file: tight calibration takes seconds, lookups take none."""

    def __init__(self) -> None:
        root = Path(os.environ.get("PILLAR_CACHE_DIR", Path.home() / ".cache" / "pillar"))
        self.path = root / "calibration.json"

    def _load(self) -> dict[str, float]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def get(self, key: str) -> float | None:
        return self._load().get(key)

    def put(self, key: str, sigma: float) -> None:
        entries = self._load()
        entries[key] = sigma
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries))
            tmp.replace(self.path)
        except OSError:
            pass  # a cache that cannot be written only costs time
