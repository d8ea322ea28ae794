"""Full-batch Gaussian segments: the exact μ-GDP formula against Google dp-accounting's PLD of the same
events."""

from __future__ import annotations

import pytest
from dp_accounting import dp_event, pld

from pillar_cli.privacy import ACCOUNTANTS, calibrate_noise
from pillar_cli.privacy.gaussian import gaussian_epsilon


def dp_accounting_epsilon(segments, delta: float) -> float:
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    for sigma, _, steps in segments:
        accountant.compose(dp_event.GaussianDpEvent(sigma), steps)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize(
    "segments", [((1.0, 1.0, 1),), ((5.0, 1.0, 20),), ((0.5, 1.0, 3),), ((20.0, 1.0, 100), (3.0, 1.0, 2))]
)
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_the_exact_formula_is_what_dp_accounting_approximates_from_above(segments, delta):
    exact, reference = gaussian_epsilon(segments, delta), dp_accounting_epsilon(segments, delta)
    assert exact <= reference <= exact * (1 + 1e-3)


def test_tight_accountants_use_it_for_full_batch_segments_and_rdp_stays_a_looser_bound():
    segments = ((5.0, 1.0, 20),)
    exact = gaussian_epsilon(segments, 1e-5)
    assert ACCOUNTANTS["prv"].epsilon(segments, 1e-5) == ACCOUNTANTS["pld"].epsilon(segments, 1e-5) == exact
    assert ACCOUNTANTS["rdp"].epsilon(segments, 1e-5) > exact


def test_a_large_epsilon_release_calibrates_at_once(tmp_path):
    """ε = 200 for 20 full-batch releases: dp-accounting's PLD took 32 s per evaluation, 13 per
    calibration."""
    sigma = calibrate_noise("pld", 200.0, 1e-5, 1.0, 20, cache_dir=tmp_path)
    assert 0.99 * 200 <= gaussian_epsilon(((sigma, 1.0, 20),), 1e-5) <= 200
