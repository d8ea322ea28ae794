"""Sample sizes of the semi-private disjunction learner on D_{f,p}: public rows to recover the components,
private rows for the exponential mechanism.

Public rows. A row activates the non-isolated vertices of a G(m, p) graph on one side (V⁺, m = k, or V⁻, m = d
− k), chosen with probability ½. Two vertices of one side are both non-isolated with probability q_m = 1 − 2(1
− p)^(m−1) + (1 − p)^(2m−3), so one row joins a given pair with probability q_m / 2. If every one of the P =
C(k, 2) + C(d − k, 2) same-side pairs is joined by some row, the empirical graph is complete on each side and
its components are exactly V⁺ and V⁻ (no row ever joins the two sides). A union bound gives that this holds
with probability ≥ 1 − β once n_pub ≥ ln(P / β) / −ln(1 − q_min / 2). It asks for every pair, where
connectivity needs far fewer, so it is sufficient and loose; this is the bound derived here, stated for
comparison with measured recovery rates (the paper's Theorem 2 states its own n_unl).

Private rows. With N candidates, one of which errs on no private row, the exponential mechanism at ε (Δ = 1)
returns a candidate with empirical error above α with probability at most N·exp(−εαn / 2), below β once n ≥ 2
ln(N / β) / (εα): ln 4 for the component learner whatever d, ln Σ_{j≤L} C(d, j) for the baseline.
"""

from __future__ import annotations

import math

from pillar_cli.errors import UsageError


def pair_coactivation(m: int, p: float) -> float:
    """q_m: the probability that two given vertices of G(m, p) both have an edge."""
    return 1 - 2 * (1 - p) ** (m - 1) + (1 - p) ** (2 * m - 3)


def public_rows_bound(d: int, k: int, p: float, beta: float) -> int:
    """n_pub beyond which the empirical graph's components are V⁺ and V⁻ with probability ≥ 1 − β."""
    if not 0 < beta < 1:
        raise UsageError(f"beta must be in (0, 1) (got {beta})")
    pairs = math.comb(k, 2) + math.comb(d - k, 2)
    q = min(pair_coactivation(k, p), pair_coactivation(d - k, p))
    return math.ceil(math.log(pairs / beta) / -math.log1p(-q / 2))


def private_rows_bound(candidates: int, epsilon: float, alpha: float, beta: float) -> int:
    """n beyond which the exponential mechanism over `candidates` (one of them consistent) errs by more than α
    on the private rows with probability ≤ β."""
    return math.ceil(2 * math.log(candidates / beta) / (epsilon * alpha))


def baseline_candidates(d: int, literals: int) -> int:
    """Σ_{j≤L} C(d, j): the disjunctions of at most L of d variables, the empty one included."""
    return sum(math.comb(d, j) for j in range(literals + 1))
