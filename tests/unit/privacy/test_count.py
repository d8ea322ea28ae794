"""The released row count: its noise is the share of the budget it says, it is a Gaussian mechanism of
sensitivity 1 drawn from secret randomness, and a head calibrated with it composed in still meets its target
(checked with dp-accounting)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event, pld

from pillar_cli.privacy import calibrate_noise, dp_sgd_event, spent_epsilon
from pillar_cli.privacy.count import COUNT_SHARE, RowCount, count_for, count_noise, release_count
from pillar_cli.privacy.gaussian import _delta_of, gdp_mu
from pillar_cli.randomness import SECRET, NoiseSource

DELTA = 1e-5


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
def test_the_count_takes_its_share_of_the_gaussian_dp_budget(epsilon):
    mu = gdp_mu(epsilon, DELTA)
    assert _delta_of(epsilon, mu) == pytest.approx(DELTA, rel=1e-9)  # μ-GDP is exactly (ε, δ)-DP at this μ
    sigma = count_noise(epsilon, DELTA)
    assert (1 / sigma) ** 2 == pytest.approx(COUNT_SHARE * mu**2, rel=1e-9)  # μ² adds under composition
    # the count alone is a Gaussian mechanism of sensitivity 1: its ε, by dp-accounting, is far below the
    # budget
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.GaussianDpEvent(sigma))
    assert accountant.get_epsilon(DELTA) < 0.3 * epsilon


def test_a_release_is_n_plus_gaussian_noise_from_secret_randomness():
    draws = np.array([release_count(3600, 0.1, DELTA, SECRET).value for _ in range(4000)])
    sigma = count_noise(0.1, DELTA)
    assert abs(draws.mean() - 3600) < 4 * sigma / math.sqrt(len(draws))
    assert draws.std() == pytest.approx(sigma, rel=0.05)
    assert len(np.unique(draws)) == len(draws)  # fresh entropy each time
    seeded = [release_count(3600, 0.1, DELTA, NoiseSource(7)).value for _ in range(2)]
    assert seeded[0] == seeded[1] != 3600  # experiments only: the same seed repeats the draw
    assert (
        release_count(5, 0.1, DELTA, NoiseSource(1)).value >= 1.0
    )  # post-processing keeps it a usable count


def test_what_is_derived_from_the_count():
    count = RowCount(3600.4, "noisy", 137.5, 0.05, (0.1, DELTA))
    assert count.sample_rate(512) == 512 / 3600.4 and count.expected_batch(512) == pytest.approx(512)
    assert count.sample_rate(5000) == 1.0 and count.expected_batch(5000) == 3600.4  # capped: a full batch
    assert count.all_rows == 3601
    training = dp_sgd_event(5.0, count.sample_rate(512), 100)
    assert count.without_count(count.with_count(training)) == training
    assert count.with_count(training).events[0] == count.event == dp_sgd_event(137.5, 1.0, 1)
    exact = RowCount.exact(3600)
    assert exact.with_count(training) == training and exact.segments == () and exact.event is None
    assert RowCount.from_dict(count.to_dict()) == count and RowCount.from_dict(exact.to_dict()) == exact


def test_count_for_releases_for_the_smallest_private_target_only_when_n_is_private():
    noisy = count_for(1000, [1.0, 0.2, math.inf], DELTA, SECRET)
    assert noisy.noisy and noisy.planned_for == (0.2, DELTA)
    assert noisy.noise_multiplier == count_noise(0.2, DELTA)
    assert count_for(1000, [math.inf], DELTA, SECRET) == RowCount.exact(1000)
    declared = count_for(1000, [0.2], DELTA, SECRET, declared_public=True)
    assert declared == RowCount.exact(1000, declared_public=True) and "declared public" in declared.describe()


@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_a_head_calibrated_with_the_count_meets_its_target_by_dp_accounting(epsilon):
    count = RowCount(3600.0, "noisy", count_noise(epsilon, DELTA), COUNT_SHARE, (epsilon, DELTA))
    rate, steps = count.sample_rate(512), 113
    alone = calibrate_noise("prv", epsilon, DELTA, rate, steps)
    together = calibrate_noise("prv", epsilon, DELTA, rate, steps, fixed=count.segments)
    event = count.with_count(dp_sgd_event(together, rate, steps))
    assert 0.99 * epsilon <= spent_epsilon("prv", event, DELTA) <= epsilon
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4 * epsilon)
    accountant.compose(dp_event.GaussianDpEvent(count.noise_multiplier))
    accountant.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(together)), steps)
    assert accountant.get_epsilon(DELTA) <= epsilon * 1.01
    assert alone < together < alone * 1.05  # the count's 5 % of μ² costs the head a few percent of noise
