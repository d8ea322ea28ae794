"""The ε a file claims, checked on every read: recomputed in full from the file's own DP event tree by its own
accountant at its δ, and refused when the claim lies below that by more than CLAIM_TOLERANCE, so that a file
whose ε was edited down (and re-hashed) is refused rather than printed, predicted with or exported.

The recomputation is `spent_epsilon`, the very function that wrote the claim; its value is kept on disk per
(accountant, tree, δ) (privacy/accountants.py), so the machine that trained a model pays nothing to read it,
and a recipient pays each tree once. The tolerance covers what differs between two evaluations of one
accountant on one tree (none here: the same function gives the same number) and the rounding of a claim
written as text; an edit that lowers ε by more than 0.2 % is refused.
"""

from __future__ import annotations

import math

from pillar_cli.privacy.accountants import spent_epsilon
from pillar_cli.privacy.events import Event

CLAIM_TOLERANCE = 0.002


def claim_problem(accountant: str, event: Event, delta: float, claimed: float) -> str | None:
    """Why a claim of ε = `claimed` for `event` at δ cannot stand (its accountant fails on it, or the claim
    lies below the tree's ε beyond the tolerance); None when it stands."""
    if not math.isfinite(claimed):
        return None  # ∞ claims nothing
    try:
        spent = spent_epsilon(accountant, event, delta)
    except (RuntimeError, ValueError, ArithmeticError):  # the accountant's own failure on an edited event
        return f"has a DP event that its accountant ({accountant}) cannot evaluate"
    if claimed < spent * (1 - CLAIM_TOLERANCE):
        return (
            f"claims ε = {claimed:.4g} for a DP event that spends ε = {spent:.4g} ({accountant}, δ = "
            f"{delta:g}): its ε was changed after it was written"
        )
    return None
