"""The privacy rules every entry point shares, one function each, each breach a PrivacyError (exit 5) unless
the input is simply malformed: a usable (ε, δ) for the row count (privacy/count.py), public rows disjoint from
private rows, a starting point that saw no private row.
"""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.errors import PrivacyError, UsageError, param
from pillar_cli.privacy.count import PUBLIC, RowCount
from pillar_cli.privacy.unit import Units

MAX_EPSILON = 700.0  # e^ε, which every accountant evaluates, overflows float64 just above 709


def check_epsilon(epsilon: float, non_private_allowed: bool = True) -> None:
    """ε > 0 and within what the accountants compute in floating point (`non_private_allowed`: inf, no
    privacy, is a valid choice here, which the error then mentions)."""
    if not epsilon > 0:
        raise UsageError(
            f"{param('epsilon')} must be > 0 (got {epsilon})"
            + ("; use 'inf' for non-private training" if non_private_allowed else "")
        )
    if math.isfinite(epsilon) and epsilon > MAX_EPSILON:
        raise UsageError(
            f"{param('epsilon')} {epsilon:g} is above {MAX_EPSILON:g}, where e^ε overflows the accountants' "
            "floating point: no guarantee can be computed for it"
            + ("; use 'inf' for non-private training" if non_private_allowed else "")
        )


def validate_budget(
    epsilon: float, delta: float, rows: RowCount | int | None = None, non_private_allowed: bool = True
) -> None:
    """ε > 0 and 0 < δ < 1/n for the row count `rows` (a released noisy count is read as it is: the exact n is
    private; None: the count is not known yet); `non_private_allowed`: ε = inf (no privacy) is a valid choice
    here, which the error for ε ≤ 0 then mentions."""
    check_epsilon(epsilon, non_private_allowed)
    if not 0 < delta < 1:
        raise UsageError(f"{param('delta')} must be in (0, 1) (got {delta})")
    count = RowCount.exact(rows) if isinstance(rows, int) else rows
    if count is not None and delta >= 1.0 / count.value:
        of = (
            f"1/n = {1.0 / count.value:.3g} for the declared-public n = {count.value:.0f}"
            if count.kind == PUBLIC
            else "1/ñ of the count of training rows released with noise"
            if count.noisy
            else "1/n of the private rows read"
        )  # no private value in a refusal: repeating it tells nothing
        raise PrivacyError(
            f"{param('delta')} {delta:g} is not below {of}: such a δ permits releasing individual records",
            hint=f"use a smaller {param('delta')}, or leave it out: the default follows the released count",
        )


def require_disjoint(private_index: np.ndarray, public_index: np.ndarray, source: str) -> None:
    """Public rows must never be private rows: a row in both would be fitted on outside the DP guarantee."""
    shared = np.intersect1d(private_index, public_index)
    if len(shared):
        raise PrivacyError(
            f"{source}: {len(shared)} rows of the public split also appear in the private split",
            hint="re-embed: the splits of one source must be disjoint",
        )


def require_persons_apart(private: Units, public: Units, source: str) -> None:
    """No person may have rows on both sides: their public rows would tell of their private ones."""
    if private.grouped and public.grouped and len(both := np.intersect1d(private.ids, public.ids)):
        raise PrivacyError(
            f"{source}: {len(both)} persons have rows in both the public and the private split",
            hint="re-embed: splits drawn over persons put each person's rows in one split",
        )


def require_public_start(start: str, seen: str | None) -> None:
    """A starting point — a warm-start head, a pre-trained network, the split a network is pre-trained on —
    must have seen no private row: what it learnt from one is released without DP by everything built on it.
    `seen` says which private rows it saw (None: none)."""
    if seen:
        raise PrivacyError(
            f"{start} {seen}: a starting point must come from public data, or the private rows it saw "
            "leak outside DP",
            hint="start from public data (another source, or rows disjoint from the private split)",
        )
