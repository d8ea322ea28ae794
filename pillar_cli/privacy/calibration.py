"""Noise calibration: the σ whose ε by an accountant meets a target, cached on disk.

The cache is a JSON file under the directory named by the environment variable PILLAR_CACHE_DIR (default
~/.cache/pillar): tight calibration takes seconds, a lookup none; a cache that cannot be written only costs
time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

from pillar_cli.errors import PrivacyError
from pillar_cli.privacy.accountants import get_accountant
from pillar_cli.privacy.cache import NumberCache
from pillar_cli.privacy.events import Segment
from pillar_cli.privacy.gaussian import gdp_mu

SECANT_STEPS = 6  # secant steps before Brent's method takes over
STEP_LIMIT = math.log(4.0)  # the largest step in log σ


def calibrate_noise(
    accountant: str,
    epsilon: float,
    delta: float,
    sample_rate: float,
    steps: int,
    rel_tol: float = 0.01,
    cache_dir: Path | None = None,
    fixed: tuple[Segment, ...] = (),
) -> float:
    """The σ whose ε (by `accountant`) for T = `steps` Poisson-sampled Gaussian steps, composed with the
    `fixed` segments already released (a noisy row count), lies in [(1 − rel_tol)·ε, ε]; cached in `cache_dir`
    (default: $PILLAR_CACHE_DIR, else ~/.cache/pillar)."""

    def eps_of(sigma: float) -> float:  # the accountant is looked up only on a cache miss
        return get_accountant(accountant).epsilon(((sigma, sample_rate, steps), *fixed), delta)

    key = f"v3|{accountant}|{epsilon!r}|{delta!r}|{sample_rate!r}|{steps}|{rel_tol!r}" + (
        f"|{fixed!r}" if fixed else ""
    )
    return calibrate(
        eps_of,
        epsilon,
        key,
        lambda goal: _bracket_guess(goal, sample_rate, steps, delta, fixed),
        rel_tol,
        cache_dir,
    )


def calibrate(
    eps_of: Callable[[float], float],
    epsilon: float,
    key: str,
    guess: Callable[[float], float],
    rel_tol: float = 0.01,
    cache_dir: Path | None = None,
) -> float:
    """The noise multiplier whose ε by `eps_of` lies in [(1 − rel_tol)·ε, ε], cached on disk under `key`.

    Brent's method on log σ ↦ log ε, bracketed around `guess(goal)`, then nudged up if needed so that the
    spent ε never exceeds the target: a handful of accountant evaluations instead of opacus' bisection, which
    stops at an absolute 0.01 in ε (10 % of the budget at ε = 0.1).
    """
    cache = NumberCache("calibration.json", cache_dir)
    if (cached := cache.get(key)) is not None:
        return cached
    sigma = solve_noise(eps_of, epsilon, guess, rel_tol)
    cache.put(key, sigma)
    return sigma


def solve_noise(
    eps_of: Callable[[float], float], epsilon: float, guess: Callable[[float], float], rel_tol: float = 0.01
) -> float:
    """`calibrate` without the cache: the noise multiplier whose ε by `eps_of` lies in [(1 − rel_tol)·ε, ε].

    A secant on log σ ↦ log ε from the guess first (near the target ε(σ) is close to a power law: two or three
    accountant evaluations, each the costly part), accepting only a σ whose ε was computed inside the band;
    Brent's method on a bracket where it does not settle within SECANT_STEPS."""
    from scipy.optimize import brentq  # imported here: commands that only read ledgers start without scipy

    goal = epsilon * (1 - rel_tol / 2)
    start = guess(goal)
    found = _secant(eps_of, goal, (epsilon * (1 - rel_tol), epsilon), start) if SECANT_STEPS else None
    if found is not None:
        return found
    low, high = _bracket(eps_of, goal, start)
    sigma = math.exp(
        brentq(
            lambda log_s: math.log(eps_of(math.exp(log_s))) - math.log(goal),
            math.log(low),
            math.log(high),
            xtol=rel_tol / 20,
        )
    )
    while eps_of(sigma) > epsilon:
        sigma *= 1 + rel_tol / 10
    return sigma


def _secant(
    eps_of: Callable[[float], float], goal: float, band: tuple[float, float], start: float
) -> float | None:
    """A σ from `start` whose computed ε lies in `band`, by secant steps on log σ ↦ log ε (each step at most a
    factor of 4 in σ); None where it does not settle, or where the accountant cannot say (ε infinite)."""
    seen: dict[float, float] = {}

    def log_eps(x: float) -> float:
        if x not in seen:
            seen[x] = math.log(eps_of(math.exp(x)))
        return seen[x]

    x0 = math.log(start)
    x1 = x0 + max(-STEP_LIMIT, min(STEP_LIMIT, log_eps(x0) - math.log(goal)))  # as if ε ∝ 1/σ
    for _ in range(SECANT_STEPS):
        y0, y1 = log_eps(x0), log_eps(x1)
        for x, y in ((x1, y1), (x0, y0)):
            if band[0] <= math.exp(y) <= band[1]:
                return math.exp(x)
        if not (math.isfinite(y0) and math.isfinite(y1)) or y0 == y1:
            return None
        step = -(y1 - math.log(goal)) * (x1 - x0) / (y1 - y0)
        x0, x1 = x1, x1 + max(-STEP_LIMIT, min(STEP_LIMIT, step))
    return None


def _bracket_guess(goal: float, q: float, steps: int, delta: float, fixed: tuple[Segment, ...] = ()) -> float:
    """σ by the (fast, approximate) GDP accountant, the `fixed` segments composed in; 1.0 where no σ in its
    bracket reaches the goal. Full batches alone are exactly Gaussian: T releases at σ are √T/σ-GDP (Dong,
    Roth and Su), which the subsampling CLT approximates slowly (seconds an evaluation at σ near 1)."""
    from scipy.optimize import brentq

    if q >= 1 and not fixed:
        return math.sqrt(steps) / gdp_mu(goal, delta)

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
