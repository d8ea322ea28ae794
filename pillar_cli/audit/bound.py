"""The one-run audit's statistics (Steinke, Nasr & Jagielski, "Privacy auditing with one (1) training run",
NeurIPS 2023, Theorem 5.2): m canaries, each included independently with probability ½; an auditor that makes
r guesses (in or out) and gets v right. Under (ε, δ)-DP,

    P[v or more right] ≤ P[Binomial(r, q) ≥ v] + 2mδ · max_{1 ≤ i ≤ v} P[v − i ≤ Binomial(r, q) < v] / i,

with q = e^ε / (1 + e^ε), the accuracy of ε-randomised response. ε_lb is the largest ε this rejects at the
stated confidence: the guarantee cannot hold for any smaller ε (unless the test was unlucky, with probability
≤ 1 − c). The guesses must be fixed before the scores are seen (how many "in", how many "out"); choosing them
afterwards would be a multiple test.
"""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.errors import UsageError, param
from pillar_cli.lazy import scipy_stats


def p_value(m: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """The bound above on the probability of `correct` or more right guesses out of `guesses` under (ε,
    δ)-DP."""
    q = 1 / (1 + math.exp(-epsilon))
    tail = scipy_stats.binom.sf(correct - 1, guesses, q)
    below = scipy_stats.binom.pmf(np.arange(correct - 1, -1, -1), guesses, q)  # P[Bin = v − i] for i = 1..v
    ratio = float(np.max(np.cumsum(below) / np.arange(1, correct + 1))) if correct > 0 else 0.0
    return min(1.0, float(tail) + 2 * m * delta * ratio)


def epsilon_lower_bound(m: int, guesses: int, correct: int, delta: float, confidence: float = 0.95) -> float:
    """The largest ε (to 1e-4) whose p-value is below 1 − confidence; 0 when even ε = 0 is not rejected."""
    if not 0 < confidence < 1:
        raise UsageError(f"{param('confidence')} must be in (0, 1) (got {confidence})")
    if not 0 <= correct <= guesses <= m:
        raise UsageError(f"need 0 ≤ correct ≤ guesses ≤ m (got {correct}, {guesses}, {m})")
    level = 1 - confidence
    if p_value(m, guesses, correct, 0.0, delta) >= level:
        return 0.0
    low, high = 0.0, 1.0
    while p_value(m, guesses, correct, high, delta) < level:
        low, high = high, 2 * high
        if high > 1e3:
            return math.inf
    while high - low > 1e-4:
        middle = (low + high) / 2
        low, high = (middle, high) if p_value(m, guesses, correct, middle, delta) < level else (low, middle)
    return low
