"""Accountants and calibration: σ gives ε ≤ target (tightly), accountants agree in the expected order."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from pillar_cli.errors import PrivacyError, UsageError
from pillar_cli.privacy import ACCOUNTANTS, calibrate_noise, dp_sgd_event, spent_epsilon, validate_budget
from pillar_cli.privacy.count import NOISY, RowCount

Q, STEPS, DELTA = 1024 / 45000, 500, 1e-5


# Every accountant × ε at 500 and 40,000 steps; PRV at 40,000 steps costs ~30 s a calibration, so it is
# checked at the two ends of the ε range only (and left to `make test`: marked slow).
CALIBRATION_CASES = [
    pytest.param(a, e, t, r, marks=[pytest.mark.slow] if (a, t) == ("prv", 40_000) else [])
    for a in sorted(ACCOUNTANTS)
    for e in (0.1, 0.7, 1.0, 2.0, 8.0)
    for t, r in ((500, Q), (40_000, 64 / 45000))
    if not (a == "prv" and t == 40_000 and e in (0.7, 1, 2))
]


@pytest.mark.parametrize("accountant, epsilon, steps, rate", CALIBRATION_CASES)
def test_calibrated_sigma_spends_at_most_the_target_and_within_one_percent(accountant, epsilon, steps, rate):
    sigma = calibrate_noise(accountant, epsilon, DELTA, rate, steps)
    spent = spent_epsilon(accountant, dp_sgd_event(sigma, rate, steps), DELTA)
    assert 0.99 * epsilon <= spent <= epsilon


def test_prv_calibration_at_small_epsilon_is_tighter_than_opacus_default():
    # opacus' get_noise_multiplier(accountant="prv") gives 17.5 here; a tight PLD search gives about 15.7.
    assert calibrate_noise("prv", 0.1, DELTA, Q, STEPS) <= 16.2


@pytest.mark.parametrize("sigma, rate, steps", [(1.0, 0.02, 500), (3.0, 0.01, 3000), (15.7, Q, STEPS)])
def test_prv_on_an_fft_friendly_domain_equals_opacus_prv_accountant(sigma, rate, steps):
    """The domain is widened to an even 5-smooth size with opacus' mesh and alignment; ε is opacus' own."""
    from opacus.accountants import PRVAccountant
    from opacus.accountants.analysis.prv import PoissonSubsampledGaussianPRV

    from pillar_cli.privacy.accountants import _fast_prv_accountant

    def prv_epsilon(accountant) -> float:  # as accountants.py asks: a rough ε, then an error of 0.5 % of it
        accountant.history = [(sigma, rate, steps)]
        rough = accountant.get_epsilon(DELTA, eps_error=0.01)
        return rough if rough > 2 else accountant.get_epsilon(DELTA, eps_error=max(0.005 * rough, 1e-4))

    assert ACCOUNTANTS["prv"].epsilon(((sigma, rate, steps),), DELTA) == pytest.approx(
        prv_epsilon(PRVAccountant()), rel=1e-6
    )
    fast, opacus = (
        accountant._get_domain(
            prvs=[PoissonSubsampledGaussianPRV(rate, sigma)],
            num_self_compositions=[steps],
            eps_error=1e-3,
            delta_error=DELTA / 1000,
        )
        for accountant in (_fast_prv_accountant()(), PRVAccountant())
    )
    size = fast.size
    for prime in (2, 3, 5):
        while size % prime == 0:
            size //= prime
    assert size == 1 and fast.size % 2 == 0 and opacus.size <= fast.size < 1.1 * opacus.size
    assert fast.dt == pytest.approx(opacus.dt, rel=1e-12) and fast.t_min == pytest.approx(
        -(fast.size / 2 - 1) * fast.dt
    )


@pytest.mark.parametrize("rate, sigma", [(0.02, 1.0), (Q, 15.7), (0.23, 0.8), (1.0, 40.0)])
def test_a_prvs_cdf_in_floats_and_its_mean_are_opacus_own(rate, sigma):
    """The CDF asked for one float (as the mean's quadrature asks) is opacus' formula to 1e-14 at every t,
    within the domain and outside it; the truncated mean opacus shifts the discretisation by agrees to 1e-9 of
    itself."""
    from opacus.accountants.analysis.prv import PoissonSubsampledGaussianPRV
    from opacus.accountants.analysis.prv.prvs import TruncatedPrivacyRandomVariable

    from pillar_cli.privacy.accountants import _float_mean_prv

    prv = PoissonSubsampledGaussianPRV(rate, sigma)
    theirs, ours = TruncatedPrivacyRandomVariable(prv, -12.0, 30.0), _float_mean_prv()(prv, -12.0, 30.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # opacus' log(1 − q) at q = 1
        for t in np.concatenate([np.linspace(-13.0, 31.0, 881), np.geomspace(1e-6, 1.0, 60), [-12.0, 30.0]]):
            assert ours.cdf(float(t)) == pytest.approx(float(theirs.cdf(t)), abs=1e-14), t
        assert ours.mean() == pytest.approx(theirs.mean(), rel=1e-9)
        assert ours.cdf(np.array([-1.0, 0.5])) == pytest.approx(
            theirs.cdf(np.array([-1.0, 0.5])), abs=0
        )  # arrays


@pytest.mark.parametrize("rate", [1e-4, 0.0014, 0.02, Q, 0.5, 0.999])
def test_the_rdp_series_summed_as_arrays_is_opacus_own(rate):
    """log A_α at fractional orders and at integer orders up to 1,024, for σ from 0.3 to 200: its series term
    by term in Python (opacus) and as arrays agree to 1e-12 (absolute below 1, relative above)."""
    from opacus.accountants.analysis import rdp

    from pillar_cli.privacy.rdp_series import fractional_log_a, integer_log_a

    for sigma in (0.3, 0.6, 1.1, 3.0, 15.7, 200.0):
        for alpha in (1.1, 1.5, 2.3, 4.7, 7.9, 10.9, 2, 12, 63, 1024):
            ours, opacus_series = (
                (fractional_log_a, rdp._compute_log_a_for_frac_alpha)
                if alpha % 1
                else (integer_log_a, rdp._compute_log_a_for_int_alpha)
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                theirs = opacus_series(rate, sigma, alpha)
            assert abs(ours(rate, sigma, alpha) - theirs) <= 1e-12 * max(1.0, abs(theirs)), (sigma, alpha)


def test_rdp_is_looser_than_prv_and_pld_tighter_than_prv_for_the_same_sigma():
    from dp_accounting import dp_event, pld

    sigma = calibrate_noise("prv", 1.0, DELTA, Q, STEPS)
    event = dp_sgd_event(sigma, Q, STEPS)
    prv, rdp = spent_epsilon("prv", event, DELTA), spent_epsilon("rdp", event, DELTA)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.PoissonSampledDpEvent(Q, dp_event.GaussianDpEvent(sigma)), STEPS)
    assert accountant.get_epsilon(DELTA) <= prv < rdp


def test_budget_validation_messages():
    with pytest.raises(
        UsageError, match=r"^epsilon must be > 0 \(got 0.0\); use 'inf' for non-private training$"
    ):
        validate_budget(0.0, 1e-5, 1000)
    with pytest.raises(UsageError, match=r"^delta must be in \(0, 1\)"):
        validate_budget(1.0, 1.0, 1000)
    with pytest.raises(
        PrivacyError,
        match=r"^delta 0.01 is not below 1/n of the private rows read: such a δ permits "
        r"releasing individual records$",
    ):  # no private n in a refusal
        validate_budget(1.0, 0.01, 1000)
    with pytest.raises(
        PrivacyError,
        match=r"^delta 0.01 is not below 1/ñ of the count of training rows released with "
        r"noise: such a δ",
    ):  # nor the count: a repeated refusal tells nothing new
        validate_budget(1.0, 0.01, RowCount(100.7, NOISY, 10.0, 0.05, (1.0, 1e-5)))
    with pytest.raises(
        PrivacyError, match=r"^delta 0.01 is not below 1/n = 0.001 for the declared-public n = 1000"
    ):
        validate_budget(1.0, 0.01, RowCount.exact(1000, declared_public=True))
    validate_budget(math.inf, 1e-5, 1000)


def test_calibration_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("PILLAR_CACHE_DIR", str(tmp_path))
    first = calibrate_noise("rdp", 0.5, DELTA, 0.01, 300)
    assert (tmp_path / "calibration.json").exists()
    monkeypatch.setitem(ACCOUNTANTS, "rdp", None)  # a cache hit must not consult the accountant
    assert calibrate_noise("rdp", 0.5, DELTA, 0.01, 300) == first
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.undo()  # the accountant again, and the environment's cache directory
    assert calibrate_noise("rdp", 0.5, DELTA, 0.01, 300, cache_dir=elsewhere) == first
    assert (elsewhere / "calibration.json").exists()


def test_pld_is_the_tightest_accountant_at_small_epsilon():
    sigma_prv = calibrate_noise("prv", 0.1, DELTA, Q, STEPS)
    sigma_pld = calibrate_noise("pld", 0.1, DELTA, Q, STEPS)
    assert sigma_pld < sigma_prv
    assert spent_epsilon("pld", dp_sgd_event(sigma_prv, Q, STEPS), DELTA) <= 0.1
