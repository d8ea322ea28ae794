"""Noise calibration: the σ whose ε by an accountant meets a target, cached on disk.

The cache is a JSON file under the directory named by the environment variable PILLAR_CACHE_DIR (default
~/.cache/pillar): tight calibration takes seconds, a lookup none; a cache that cannot be written only costs time.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from pillar_cli.errors import PrivacyError
from pillar_cli.privacy.accountants import get_accountant
from pillar_cli.privacy.cache import NumberCache
from pillar_cli.privacy.events import Segment


def calibrate_noise(accountant: str, epsilon: float, delta: float, sample_rate: float, steps: int,
                    rel_tol: float = 0.01, cache_dir: Path | None = None, fixed: tuple[Segment, ...] = ()) -> float:
    """The σ whose ε (by `accountant`) for T = `steps` Poisson-sampled Gaussian steps, composed with the `fixed`
    segments already released (a noisy row count), lies in [(1 − rel_tol)·ε, ε]; cached in `cache_dir` (default:
    $PILLAR_CACHE_DIR, else ~/.cache/pillar)."""
    def eps_of(sigma: float) -> float:  # the accountant is looked up only on a cache miss
        return get_accountant(accountant).epsilon(((sigma, sample_rate, steps), *fixed), delta)

    key = f"v2|{accountant}|{epsilon!r}|{delta!r}|{sample_rate!r}|{steps}|{rel_tol!r}" + (f"|{fixed!r}" if fixed else "")
    return calibrate(eps_of, epsilon, key, lambda goal: _bracket_guess(goal, sample_rate, steps, delta, fixed),
                     rel_tol, cache_dir)


def calibrate(eps_of: Callable[[float], float], epsilon: float, key: str, guess: Callable[[float], float],
              rel_tol: float = 0.01, cache_dir: Path | None = None) -> float:
    """The noise multiplier whose ε by `eps_of` lies in [(1 − rel_tol)·ε, ε], cached on disk under `key`.

    Brent's method on log σ ↦ log ε, bracketed around `guess(goal)`, then nudged up if needed so that the spent ε
    never exceeds the target: a handful of accountant evaluations instead of opacus' bisection, which stops at an
    absolute 0.01 in ε (10 % of the budget at ε = 0.1).
    """
    cache = NumberCache("calibration.json", cache_dir)
    if (cached := cache.get(key)) is not None:
        return cached
    sigma = solve_noise(eps_of, epsilon, guess, rel_tol)
    cache.put(key, sigma)
    return sigma


def solve_noise(eps_of: Callable[[float], float], epsilon: float, guess: Callable[[float], float],
                rel_tol: float = 0.01) -> float:
    """`calibrate` without the cache: the noise multiplier whose ε by `eps_of` lies in [(1 − rel_tol)·ε, ε]."""
    from scipy.optimize import brentq  # imported here: commands that only read ledgers start without scipy

    goal = epsilon * (1 - rel_tol / 2)
    low, high = _bracket(eps_of, goal, guess(goal))
    sigma = math.exp(brentq(lambda log_s: math.log(eps_of(math.exp(log_s))) - math.log(goal), math.log(low),
                            math.log(high), xtol=rel_tol / 20))
    while eps_of(sigma) > epsilon:
        sigma *= 1 + rel_tol / 10
    return sigma


def _bracket_guess(goal: float, q: float, steps: int, delta: float, fixed: tuple[Segment, ...] = ()) -> float:
    """σ by the (fast, approximate) GDP accountant, the `fixed` segments composed in; 1.0 where it fails (it cannot
    represent ε above 500)."""
    from scipy.optimize import brentq

    def gdp(sigma: float) -> float:
        return get_accountant("gdp").epsilon(((sigma, q, steps), *fixed), delta)

    try:
        low, high = _bracket(gdp, goal, 1.0)
        return brentq(lambda s: gdp(s) - goal, low, high, rtol=1e-3)
    except (ValueError, PrivacyError):
        return 1.0


def _bracket(eps_of: Callable[[float], float], goal: float, guess: float) -> tuple[float, float]:
    """σ_low with ε > goal and σ_high with ε ≤ goal, widening geometrically from the guess."""
    low, high = guess * 0.9, guess * 1.1
    while eps_of(high) > goal:
        low, high = high, high * 1.5
        if high > 1e5:
            raise PrivacyError(f"cannot reach ε = {goal:g}: even σ = 1e5 is not enough")
    while eps_of(low) <= goal:
        low, high = low / 1.5, low
        if low < 1e-3:
            raise PrivacyError(f"ε = {goal:g} is reached with almost no noise; check the budget")
    return low, high
