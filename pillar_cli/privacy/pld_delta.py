"""δ(ε) of a dp-accounting privacy loss distribution at many ε at once, in numpy.

dp-accounting computes δ at an array of ε in one Python loop over the losses and the ε together: 0.3-1.0 s for
the risk view's 15,201 ε on a subsampled Gaussian's distribution of 68,000-390,000 losses
(benchmarks/bench_accounting.py: 2-5 ms this way). The sums it accumulates from the largest loss down are
cumulative sums taken in the same order, read at each ε's place among the losses. It reads the distribution's
dense probability masses, which dp-accounting keeps in private attributes; a distribution held otherwise
(sparse, or a version that names them differently) is asked through its public method instead."""

from __future__ import annotations

import numpy as np


def delta_for_epsilons(distribution, epsilons: np.ndarray) -> np.ndarray:
    """δ(ε) of a `PrivacyLossDistribution` at every ε (any order): the larger of its two directions' δ, as
    `distribution.get_delta_for_epsilon` gives it."""
    epsilons = np.asarray(epsilons, dtype=np.float64)
    pmfs = [getattr(distribution, "_pmf_remove", None)]
    if not getattr(distribution, "_symmetric", True):
        pmfs.append(getattr(distribution, "_pmf_add", None))
    if not all(hasattr(pmf, "_probs") and hasattr(pmf, "_lower_loss") for pmf in pmfs):
        order = np.argsort(epsilons)  # dp-accounting takes them sorted
        deltas = np.empty_like(epsilons)
        deltas[order] = distribution.get_delta_for_epsilon(epsilons[order])
        return deltas
    return np.maximum.reduce([_dense_delta(pmf, epsilons) for pmf in pmfs])


def _dense_delta(pmf, epsilons: np.ndarray) -> np.ndarray:
    """inf_mass + Σ_{loss > ε} p·(1 − e^{ε − loss}), as the two sums Σ p and Σ p·e^{−loss} over the losses
    above ε."""
    probs = np.asarray(pmf._probs, dtype=np.float64)
    losses = (np.arange(len(probs)) + pmf._lower_loss) * pmf._discretization
    # upper[m]: the m largest losses' mass
    upper = np.cumsum(np.concatenate([[pmf._infinity_mass], probs[::-1]]))
    lower = np.cumsum(np.concatenate([[0.0], (probs * np.exp(-losses))[::-1]]))
    above = len(losses) - np.searchsorted(losses, epsilons, side="right")  # how many losses exceed each ε
    deltas = upper[above] - np.exp(epsilons) * lower[above]
    return np.where(np.isposinf(epsilons), pmf._infinity_mass, deltas)
