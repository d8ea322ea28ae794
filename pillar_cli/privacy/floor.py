"""A floor under the ε a file claims: a value the true ε of its DP event is at least, cheap enough to check on every
read, so that a file whose ε was edited down (and re-hashed) is refused rather than printed.

Recomputing the claim as written costs a second or more per event (PRV at ε = 0.1). The floor instead asks the PRV
accountant (Gopi et al. 2021) for its LOWER bound at a coarse error, ε_err = max(10 % of the claim, 0.01): a
discretisation with that error is 10-100× faster and its lower bound stays below the true ε (measured: 0.89 × ε at
ε = 0.1, 1 and 8). Where the claim's own accountant is cheap and exact for the tree (a full batch under prv and
pld, any tree under rdp or gdp, a private selection, the exponential mechanism), the floor is that value less 1 %.
A claim below its floor is refused; an honest claim never is, since every accountant's ε is at least the true one
and gdp, the one that is not, is recomputed as it was written. Floors are cached on disk (floors.json beside the
calibration cache): the accountants import opacus and torch, about 3 s, which a second `pillar inspect` of the same
model does not pay.
"""

from __future__ import annotations

import functools
import json
import warnings

from pillar_cli.privacy.accountants import spent_epsilon
from pillar_cli.privacy.calibration import NumberCache
from pillar_cli.privacy.events import Event, Segment, gaussian_segments, is_private, pure_parts
from pillar_cli.privacy.gaussian import full_batch

SLACK = 0.01  # the accountants' own discretisation and conversion errors stay below this share
PRV_ERROR_SHARE, PRV_ERROR_MIN, PRV_ERROR_MAX = 0.1, 0.01, 1.0  # a wider error makes PRV's grid fail


@functools.lru_cache(maxsize=4096)
def epsilon_floor(accountant: str, event: Event, delta: float, claimed: float) -> float:
    """A value the ε at δ of `event` is at least (0 for a tree without a guarantee: its claim is ∞ already)."""
    if not is_private(event):
        return 0.0
    cache = NumberCache("floors.json")
    key = f"v2|{accountant}|{json.dumps(event.to_dict(), sort_keys=True)}|{delta!r}|{claimed!r}"
    if (cached := cache.get(key)) is not None:
        return cached
    floor = _floor(accountant, event, delta, claimed)
    cache.put(key, floor)
    return floor


def _floor(accountant: str, event: Event, delta: float, claimed: float) -> float:
    """The floor, computed (epsilon_floor looks it up first)."""
    pure, approximate = pure_parts(event)
    segments = None if approximate is None else gaussian_segments(approximate)
    if accountant in ("prv", "pld") and segments is not None and not full_batch(tuple(segments)):
        error = min(max(PRV_ERROR_SHARE * claimed, PRV_ERROR_MIN), PRV_ERROR_MAX)
        return pure + prv_lower_bound(tuple(segments), delta, error)
    return spent_epsilon(accountant, event, delta) * (1 - SLACK)


def prv_lower_bound(segments: tuple[Segment, ...], delta: float, eps_error: float) -> float:
    """The PRV accountant's lower bound on ε at δ of Poisson-subsampled Gaussian segments, at error `eps_error`."""
    from opacus.accountants import PRVAccountant

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        accountant = PRVAccountant()
        accountant.history = list(segments)
        delta_error = delta / 1000  # opacus' default
        discrete = accountant._get_dprv(eps_error=eps_error, delta_error=delta_error)  # its get_epsilon's first step
        lower, _, _ = discrete.compute_epsilon(delta, delta_error, eps_error)
    return max(float(lower), 0.0)
