"""The trade-off curve of a guarantee (privacy/risk.py): equal to the closed form for Gaussian mechanisms, to
riskcal's (Kulynych et al.) for subsampled Gaussian runs, and on the safe side where it can only bound."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from pillar_cli import DPLinearClassifier, sweep
from pillar_cli.errors import UsageError
from pillar_cli.privacy.events import ExponentialEvent, GaussianEvent, composed, dp_sgd_event
from pillar_cli.privacy.risk import (
    FPRS,
    PLD_INTERVAL,
    _rdp_delta,
    attribute_accuracy,
    delta_curve,
    risk_of,
    risk_words,
    trade_off,
)
from pillar_cli.privacy.risk_target import RELATIVE_TOLERANCE, RiskTarget


@pytest.mark.parametrize("sigma", [0.5, 1.0, 4.0, 15.0])
def test_a_gaussian_mechanisms_curve_is_the_closed_form(sigma):
    """μ-GDP with μ = 1/σ: TPR(α) = 1 − Φ(Φ⁻¹(1 − α) − μ), within 1e-6 at every sampled FPR; advantage 2Φ(μ/2)
    − 1."""
    risk = risk_of(GaussianEvent(sigma))
    fprs, mu = np.array(risk.fprs), 1 / sigma
    np.testing.assert_allclose(risk.tprs, 1 - norm.cdf(norm.ppf(1 - fprs) - mu), atol=1e-6)
    assert risk.advantage == pytest.approx(2 * norm.cdf(mu / 2) - 1, abs=1e-9)
    assert set(FPRS) <= set(risk.fprs)  # the quoted rates are sampled, not interpolated


@pytest.mark.parametrize("curve", ["gaussian", "staircase"])
def test_the_envelope_is_every_lines_maximum(curve):
    """β(α) from the envelope walked along α equals the maximum of every (ε, δ) pair's two lines and 0 at
    every α, for a Gaussian's δ(ε) and for a random non-increasing δ(ε) with δ = 1 stretches (lines that never
    count)."""
    rng = np.random.default_rng(7)
    epsilons = np.linspace(0.0, 30.0, 3001)
    deltas = (
        np.minimum(delta_curve(GaussianEvent(0.7))(epsilons), 1.0)
        if curve == "gaussian"
        else np.where(rng.random(3001) < 0.3, 1.0, np.sort(rng.random(3001))[::-1] * 0.5)
    )
    alphas = np.concatenate([[0.0, 1.0], np.geomspace(1e-7, 1.0, 300), rng.random(200)])
    e, d, a = epsilons[:, None], deltas[:, None], alphas[None, :]
    direct = np.maximum(np.maximum(1 - d - np.exp(e) * a, np.exp(-e) * (1 - d - a)).max(axis=0), 0.0)
    np.testing.assert_allclose(
        trade_off(alphas, epsilons, deltas), np.clip(direct, 0.0, 1.0), rtol=0, atol=1e-15
    )


@pytest.mark.parametrize("sigma, rate, steps", [(2.0, 0.05, 500), (8.0, 0.2, 100)])
def test_a_subsampled_gaussian_run_agrees_with_riskcal(sigma, rate, steps):
    riskcal = pytest.importorskip("riskcal")
    from dp_accounting.pld import privacy_loss_distribution as pld
    from riskcal.analysis import get_advantage_from_pld, get_beta_from_pld

    distribution = pld.from_gaussian_mechanism(
        sigma, sampling_prob=rate, pessimistic_estimate=True, value_discretization_interval=PLD_INTERVAL
    ).self_compose(steps)
    ours = risk_of(dp_sgd_event(sigma, rate, steps))
    alphas = np.array([*FPRS, 0.3, 0.5])
    theirs = 1 - get_beta_from_pld(distribution, alpha=alphas)
    # both read the same discretised loss distribution; ours is its (ε, δ(ε)) envelope on a grid, never below
    assert np.all(np.array([ours.tpr_at(a) for a in alphas]) >= theirs - 1e-6)
    np.testing.assert_allclose([ours.tpr_at(a) for a in alphas], theirs, atol=2e-5)
    assert ours.advantage == pytest.approx(get_advantage_from_pld(distribution), abs=1e-9)
    assert riskcal is not None


def test_bounds_by_renyi_dp_and_pure_parts_lie_on_the_safe_side():
    run = dp_sgd_event(3.0, 0.1, 200)
    epsilons = np.linspace(0, 6, 200)
    exact, renyi = delta_curve(run)(epsilons), _rdp_delta(run)(epsilons)
    assert np.all(renyi >= exact - 1e-9)  # the Rényi conversion bounds δ(ε) from above: a looser, valid curve
    # a pure ε composed on top shifts every ε
    with_choice = composed(ExponentialEvent(0.5), GaussianEvent(4.0))
    np.testing.assert_allclose(
        delta_curve(with_choice)(np.array([0.5, 1.5])), delta_curve(GaussianEvent(4.0))(np.array([0.0, 1.0]))
    )
    assert risk_of(with_choice).tpr_at(0.01) > risk_of(GaussianEvent(4.0)).tpr_at(0.01)


def test_the_risk_in_words_names_the_unit():
    said = risk_words({"0.001": 0.002, "0.01": 0.0196, "0.1": 0.155}, 0.105, "person")
    assert said == (
        "an attacker who knows everything else and accepts a 1 % false-positive rate tells whether a "
        "given person was used with probability at most 1.96 % (at 0.1 %: 0.2 %; at 10 %: 15.5 %); no "
        "attack does better than chance by more than 10.5 points (its advantage)"
    )


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    return x[order[:400]], x[order[400:]], y[order[400:]]


@pytest.mark.parametrize("target", [(0.05, 0.01), (0.2, 0.1)])
def test_a_risk_target_calibrates_epsilon_tightly(digits, target):
    """On digits (1,397 private rows, the noisy count in the tree): the recomputed TPR at the target's FPR is
    at most the target and within 5 % of it; the estimator's ledger and the plan record the ε it took."""
    public, x, y = digits
    max_tpr, at_fpr = target
    result = sweep(x, y, public=public, method=["dp-ls"], max_tpr=max_tpr, at_fpr=at_fpr, delta=1e-4)
    (run,) = result.runs
    reached = risk_of(run.event).tpr_at(at_fpr)
    assert 0.95 * max_tpr <= reached <= max_tpr
    assert (
        result.plan.risk_target == RiskTarget(max_tpr, at_fpr)
        and run.key.epsilon == result.plan.request.epsilon[0]
    )
    assert result.count.noisy and run.epsilon_spent <= run.key.epsilon
    clf = DPLinearClassifier(method="dp-ls", max_tpr=max_tpr, at_fpr=at_fpr, delta=1e-4).fit(
        x, y, public=public
    )
    assert 0.95 * max_tpr <= risk_of(clf.ledger_.event).tpr_at(at_fpr) <= max_tpr
    assert clf.ledger_.epsilon_target == pytest.approx(run.key.epsilon, rel=0.05)


def test_a_risk_target_is_refused_where_it_cannot_hold(digits):
    public, x, y = digits
    with pytest.raises(
        UsageError, match=r"^max_tpr must be above at_fpr \(0.1: chance\) and below 1 \(got 0.05\)$"
    ):
        sweep(x, y, public=public, max_tpr=0.05, at_fpr=0.1)
    with pytest.raises(UsageError, match=r"^give epsilon or max_tpr, not both: the risk target sets ε$"):
        sweep(x, y, public=public, epsilon=[0.5], max_tpr=0.05)
    with pytest.raises(UsageError, match=r"^give epsilon or max_tpr, not both: the risk target sets ε$"):
        DPLinearClassifier(epsilon=1.0, max_tpr=0.05).fit(x, y, public=public)
    with pytest.raises(
        UsageError,
        match=r"^method 'noisy-sgd' draws its own mechanism, which a risk target cannot "
        r"calibrate$",
    ):
        sweep(x, (y > 4).astype(int), public=public, method=["noisy-sgd"], max_tpr=0.05)


@pytest.mark.parametrize(
    ("max_tpr", "at_fpr", "scale"), [(0.05, 0.01, 0.3), (0.2, 0.01, 7.0), (0.5, 0.1, 2.0), (0.03, 0.01, 2.0)]
)
def test_the_largest_epsilon_meeting_a_target_is_the_closed_form_one(max_tpr, at_fpr, scale):
    """With σ = scale / ε, TPR(α) = Φ(ε / scale + Φ⁻¹(α)): the largest ε meeting the target is scale ·
    (Φ⁻¹(max_tpr) − Φ⁻¹(α)). The search finds it from below to its tolerance, in at most 13 calibrations
    (bisection: 12 to 16)."""
    calls = []

    def event_at(epsilon):
        calls.append(epsilon)
        return GaussianEvent(scale / epsilon)

    target = RiskTarget(max_tpr, at_fpr)
    found = target.largest_epsilon(event_at, 1.0)
    exact = scale * (norm.ppf(max_tpr) - norm.ppf(at_fpr))
    assert target.tpr(event_at(found)) <= max_tpr
    assert np.exp(-RELATIVE_TOLERANCE) * exact <= found <= exact * (1 + 1e-5)
    assert len(calls) <= 14  # 13 and the check above


@pytest.mark.parametrize(
    "sigma, rate, steps, prior",
    [
        (1.0, 1.0, 1, 0.5),
        (2.0, 1.0, 1, 0.05),
        (0.5, 1.0, 1, 0.9),
        (2.0, 0.05, 500, 0.95),
        (8.0, 0.2, 100, 0.7),
        (1.0, 0.01, 1000, 0.5),
    ],
)
def test_the_attribute_risk_at_a_prior_is_riskcals_bayes_risk(sigma, rate, steps, prior):
    """An attacker's best accuracy at a yes/no attribute of prevalence `prior` is one minus riskcal's Bayes
    risk (Kulynych et al. 2025) of the same mechanism: its closed form for a Gaussian mechanism (μ = 1/σ), its
    PLD for subsampled runs; the same for the prevalence 1 − prior; never below guessing the majority."""
    pytest.importorskip("riskcal")
    from dp_accounting.pld import privacy_loss_distribution as pld
    from riskcal.analysis import get_bayes_risk_from_gdp, get_bayes_risk_from_pld

    event = dp_sgd_event(sigma, rate, steps)
    if rate == 1.0:
        theirs, tolerance = 1 - get_bayes_risk_from_gdp(1 / sigma, prior), 1e-9
    else:
        distribution = pld.from_gaussian_mechanism(
            sigma, sampling_prob=rate, pessimistic_estimate=True, value_discretization_interval=PLD_INTERVAL
        ).self_compose(steps)
        theirs, tolerance = 1 - get_bayes_risk_from_pld(distribution, prior), 1e-6
    assert attribute_accuracy(event, prior) == pytest.approx(theirs, abs=tolerance)
    assert attribute_accuracy(event, 1 - prior) == pytest.approx(attribute_accuracy(event, prior), abs=1e-12)
    assert attribute_accuracy(event, prior) >= max(prior, 1 - prior)
