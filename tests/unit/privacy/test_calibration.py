"""The noise solver: a σ whose ε lies in [(1 − rel_tol)·ε, ε], found by a secant on log σ ↦ log ε from the
guess, or by Brent's method on a bracket where the secant does not settle."""

from __future__ import annotations

import math

import pytest

from pillar_cli.privacy import calibration


class Counted:
    """ε(σ) = a·σ^(−b) + c, counting its evaluations."""

    def __init__(self, a: float, b: float, c: float = 0.0):
        self.a, self.b, self.c, self.calls = a, b, c, 0

    def __call__(self, sigma: float) -> float:
        self.calls += 1
        return self.a * sigma**-self.b + self.c


@pytest.mark.parametrize("off_by", [0.2, 0.7, 1.0, 1.5, 5.0])
def test_near_a_power_law_the_secant_lands_in_the_band_in_a_few_evaluations(off_by):
    eps_of, epsilon = Counted(3.0, 1.3), 0.5
    exact = (3.0 / epsilon) ** (1 / 1.3)
    sigma = calibration.solve_noise(eps_of, epsilon, lambda goal: exact * off_by)
    assert 0.99 * epsilon <= eps_of(sigma) <= epsilon
    assert eps_of.calls - 1 <= 4  # the check above is one more call


def test_where_the_secant_does_not_settle_brents_method_still_meets_the_band(monkeypatch):
    monkeypatch.setattr(calibration, "SECANT_STEPS", 0)
    eps_of, epsilon = Counted(3.0, 1.3, 0.01), 0.5
    sigma = calibration.solve_noise(eps_of, epsilon, lambda goal: 1.0)
    assert 0.99 * epsilon <= eps_of(sigma) <= epsilon


def test_an_accountant_that_cannot_say_hands_over_to_the_bracket():
    """An infinite ε (an accountant past what it can represent) ends the secant; the bracket widens from
    there."""

    def eps_of(sigma: float) -> float:
        return math.inf if sigma < 2.0 else 4.0 / sigma

    sigma = calibration.solve_noise(eps_of, 1.0, lambda goal: 1.0)
    assert 0.99 <= eps_of(sigma) <= 1.0


@pytest.mark.parametrize("epsilon, steps", [(0.1, 1), (1.0, 3), (8.0, 10)])
def test_the_guess_for_full_batches_is_the_exact_gaussian_composition(epsilon, steps):
    """T full-batch releases at σ are exactly √T/σ-GDP: the guess already spends ε by the exact accountant."""
    from pillar_cli.privacy import dp_sgd_event, spent_epsilon

    sigma = calibration._bracket_guess(epsilon, 1.0, steps, 1e-5)
    assert spent_epsilon("prv", dp_sgd_event(sigma, 1.0, steps), 1e-5) == pytest.approx(epsilon, rel=1e-3)
