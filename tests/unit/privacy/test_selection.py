"""The privacy of accounted selection: the Papernot–Steinke bounds against dp-accounting and against the
theorems' formulas written out by hand, the trial-count distributions, and the budget plan."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant

from pillar_cli import UsageError
from pillar_cli.privacy import event_from_dict, spent_epsilon
from pillar_cli.privacy.rdp import (
    ORDERS,
    TrialCount,
    gaussian_rdp,
    repeat_and_select_rdp,
    subsampled_gaussian_rdp,
)
from pillar_cli.privacy.selection import plan_selection, selection_event


@pytest.mark.parametrize("shape", [1.0, 0.5, 3.0, math.inf])
def test_selection_epsilon_equals_dp_accounting(shape):
    """One candidate mechanism: dp-accounting's RDP accountant on RepeatAndSelect(training ∘ score) at our
    orders."""
    rate, steps, sigma, score_sigma, mean, delta = 0.16, 200, 20.0, 15.0, 6.0, 1e-5
    trial = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), steps
            ),
            dp_event.GaussianDpEvent(score_sigma),
        ]
    )
    accountant = RdpAccountant(orders=list(ORDERS))
    accountant.compose(dp_event.RepeatAndSelectDpEvent(trial, mean, shape))
    event = selection_event({(rate, steps): sigma}, score_sigma, TrialCount(mean, shape))
    for name in ("prv", "rdp"):  # a selection is accounted by its RDP curve whatever the accountant's name
        assert spent_epsilon(name, event, delta) == pytest.approx(accountant.get_epsilon(delta), rel=1e-9)


def _monotone(values: np.ndarray) -> np.ndarray:
    return np.array([values[i:].min() for i in range(len(values))])


def test_geometric_bound_by_hand():
    """Theorem 2 with η = 1 (γ = 1/μ) on a Gaussian trial (ε_λ = λ/2σ²), written out order by order."""
    sigma, mean = 3.0, 4.0
    minimum = min((1 - 1 / lh) * lh / (2 * sigma**2) + math.log(mean) / lh for lh in ORDERS)
    by_hand = np.array([lam / (2 * sigma**2) + 2 * minimum + math.log(mean) / (lam - 1) for lam in ORDERS])
    ours = repeat_and_select_rdp(gaussian_rdp(sigma), TrialCount(mean, 1.0))
    np.testing.assert_allclose(ours, _monotone(by_hand), rtol=1e-12)


def test_truncated_negative_binomial_bound_by_hand():
    """Theorem 2 with η = 2: γ solves μ = η(1/γ − 1)/(1 − γ^η), i.e. μ = 2/γ·(1 − γ)/(1 − γ²) = 2/(γ(1 +
    γ))."""
    sigma, mean, eta = 5.0, 10.0, 2.0
    gamma = (-1 + math.sqrt(1 + 8 / mean)) / 2  # the root of γ² + γ − 2/μ = 0
    count = TrialCount(mean, eta)
    assert count.gamma == pytest.approx(gamma, rel=1e-9) and count.gamma <= gamma
    minimum = min((1 - 1 / lh) * lh / (2 * sigma**2) + math.log(1 / gamma) / lh for lh in ORDERS)
    by_hand = np.array(
        [lam / (2 * sigma**2) + (1 + eta) * minimum + math.log(mean) / (lam - 1) for lam in ORDERS]
    )
    np.testing.assert_allclose(
        repeat_and_select_rdp(gaussian_rdp(sigma), count), _monotone(by_hand), rtol=1e-8
    )


def test_subsampled_rdp_composes_linearly_and_at_rate_one_is_the_gaussian():
    np.testing.assert_allclose(subsampled_gaussian_rdp(4.0, 1.0, 1), ORDERS / 32)
    np.testing.assert_allclose(
        subsampled_gaussian_rdp(2.0, 0.1, 300), 300 * subsampled_gaussian_rdp(2.0, 0.1, 1)
    )


@pytest.mark.parametrize("shape", [1.0, 0.5, 4.0, math.inf])
def test_trial_counts_have_their_mean(shape):
    count, rng = TrialCount(5.0, shape), np.random.default_rng(0)
    draws = np.array([count.draw(rng) for _ in range(20_000)])
    assert draws.mean() == pytest.approx(5.0, rel=0.05)
    assert math.isinf(shape) or draws.min() >= 1  # truncated: never zero trials
    assert TrialCount(1.0, 1.0).draw(rng) == 1


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_plan_meets_the_budget_and_states_its_split(epsilon):
    mechanisms = {(0.16, 100), (0.16, 500), (1.0, 1)}
    count, share, delta = TrialCount(6.0, math.inf), 0.3, 1e-5
    plan = plan_selection(epsilon, delta, count, share, mechanisms)
    candidates = [(sigma, rate, steps) for (rate, steps), sigma in plan.training.items()]
    spent = spent_epsilon("prv", event_from_dict(json.loads(json.dumps(plan.event.to_dict()))), delta)
    assert 0.99 * epsilon <= spent <= epsilon and spent == plan.epsilon
    trial = np.max([subsampled_gaussian_rdp(*c) for c in candidates], axis=0)
    at = list(ORDERS).index(plan.reference_order)
    assert gaussian_rdp(plan.score_sigma)[at] == pytest.approx(share / (1 - share) * trial[at], rel=1e-9)


def test_bad_selection_parameters():
    with pytest.raises(
        UsageError, match=r"trials \(the mean number of trials\) must be at least 1 \(got 0.5\)"
    ):
        TrialCount(0.5)
    with pytest.raises(UsageError, match="trials_shape must be positive, or inf for Poisson"):
        TrialCount(3.0, 0.0)
    with pytest.raises(UsageError, match=r"score_share must be in \(0, 1\) \(got 1.0\)"):
        plan_selection(1.0, 1e-5, TrialCount(3.0), 1.0, {(1.0, 1)})
