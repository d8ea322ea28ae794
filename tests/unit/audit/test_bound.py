"""The one-run audit bound: the paper's binomial-tail formula computed directly, its monotonicity, and the
lower bound it gives for known guesses."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from pillar_cli import UsageError
from pillar_cli.audit.bound import epsilon_lower_bound, p_value


def direct(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """Theorem 5.2 term by term: the binomial tail plus 2mδ times the largest mean of the i probabilities
    below v."""
    q = math.exp(epsilon) / (1 + math.exp(epsilon))
    tail = sum(stats.binom.pmf(j, r, q) for j in range(v, r + 1))
    ratio = max(sum(stats.binom.pmf(v - j, r, q) for j in range(1, i + 1)) / i for i in range(1, v + 1))
    return min(1.0, tail + 2 * m * delta * ratio)


@pytest.mark.parametrize(
    ("m", "r", "v", "epsilon", "delta"),
    [
        (1000, 200, 150, 1.0, 1e-5),
        (1000, 100, 100, 3.0, 1e-5),
        (100, 40, 25, 0.5, 0.0),
        (50, 10, 3, 2.0, 1e-3),
    ],
)
def test_p_value_is_the_papers_formula(m, r, v, epsilon, delta):
    assert p_value(m, r, v, epsilon, delta) == pytest.approx(
        direct(m, r, v, epsilon, delta), rel=1e-9, abs=1e-15
    )


def test_the_bound_grows_with_correct_guesses_and_rejects_what_it_says():
    bounds = [epsilon_lower_bound(1000, 200, v, 1e-5) for v in range(100, 201, 10)]
    assert bounds == sorted(bounds) and bounds[0] == 0.0 and bounds[-1] > 3
    for v, bound in zip(range(100, 201, 10), bounds):
        if bound > 0:
            assert p_value(1000, 200, v, bound, 1e-5) < 0.05 <= p_value(1000, 200, v, bound + 2e-4, 1e-5)


def test_all_guesses_right_without_delta_has_a_closed_form():
    """P[Bin(r, q) ≥ r] = q^r < 0.05 ⇔ ε > log(q*/(1 − q*)) with q* = 0.05^(1/r)."""
    q = 0.05 ** (1 / 100)
    assert epsilon_lower_bound(100, 100, 100, 0.0) == pytest.approx(math.log(q / (1 - q)), abs=2e-4)


def test_bad_bound_inputs():
    with pytest.raises(UsageError, match=r"confidence must be in \(0, 1\) \(got 1.0\)"):
        epsilon_lower_bound(100, 10, 5, 1e-5, confidence=1.0)
    with pytest.raises(UsageError, match="need 0 ≤ correct ≤ guesses ≤ m"):
        epsilon_lower_bound(100, 10, 11, 1e-5)
