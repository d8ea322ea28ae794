"""δ(ε) of a privacy loss distribution in numpy equals dp-accounting's own, at every ε, in any order."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting.pld import common
from dp_accounting.pld import privacy_loss_distribution as pld

from pillar_cli.privacy.pld_delta import delta_for_epsilons
from pillar_cli.privacy.risk import EPSILONS, PLD_INTERVAL


@pytest.mark.parametrize("sigma,rate,steps", [(1.0, 0.01, 1000), (0.8, 0.23, 300), (5.0, 1.0, 10)])
def test_dense_distributions_give_dp_accountings_deltas_bit_for_bit(sigma, rate, steps):
    distribution = pld.from_gaussian_mechanism(
        sigma,
        sensitivity=1.0,
        sampling_prob=rate,
        pessimistic_estimate=True,
        value_discretization_interval=PLD_INTERVAL,
    ).self_compose(steps)
    epsilons = np.concatenate([np.sort(EPSILONS), [np.inf]])
    expected = np.asarray(distribution.get_delta_for_epsilon(epsilons))
    np.testing.assert_array_equal(delta_for_epsilons(distribution, epsilons), expected)
    shuffled = np.random.default_rng(0).permutation(len(epsilons))
    np.testing.assert_array_equal(delta_for_epsilons(distribution, epsilons[shuffled]), expected[shuffled])


def test_a_sparse_distribution_is_asked_through_dp_accountings_method():
    distribution = pld.from_privacy_parameters(common.DifferentialPrivacyParameters(1.0, 1e-5))
    epsilons = np.array([2.0, 0.0, 0.5, 1.0, 0.99])
    expected = [distribution.get_delta_for_epsilon(float(eps)) for eps in epsilons]
    np.testing.assert_allclose(delta_for_epsilons(distribution, epsilons), expected, rtol=1e-12, atol=1e-18)
