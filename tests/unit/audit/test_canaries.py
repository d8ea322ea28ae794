"""The canary audit on real digits: sound on the real engines and closed-form heads, and powerful against the
planted bugs; what it cannot audit is refused."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli import PublicPCA, UsageError
from pillar_cli.audit.canaries import AuditSettings, CanaryMap, run_audit
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.data import PrivacySettings, SweepData


@pytest.fixture(scope="module")
def digits() -> SweepData:
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    public, private = order[:300], order[300:]
    return SweepData(
        PublicPCA(30).fit(x[public]),
        x[private].astype(np.float32),
        y[private],
        None,
        None,
        10,
        x[public].astype(np.float32),
    )


def audit(data, method="pillar", k=10, epsilon=1.0, scale=1.0, seed=0):
    config = RunConfig(0.0, 1, 0, seed) if method == "dp-ls" else RunConfig(0.5, 200, 256, seed)
    return run_audit(
        get_method(method),
        data,
        k,
        epsilon,
        config,
        PrivacySettings(delta=1e-4),
        AuditSettings(canaries=400, guesses=40, seed=seed, noise_scale=scale),
    )


@pytest.mark.parametrize("method, k", [("pillar", 10), ("dpsgd", None), ("dp-ls", 10)])
def test_sound_on_the_real_engines_and_caught_without_noise(digits, method, k):
    sound = [audit(digits, method, k, seed=seed) for seed in range(3)]
    assert all(r.epsilon_lower_bound <= r.epsilon_claimed <= 1.0 for r in sound)
    broken = audit(digits, method, k, scale=0.0)
    assert broken.correct == 80 and broken.epsilon_lower_bound > 3 > 3 * broken.epsilon_claimed - 1


def test_noise_scaled_down_tenfold_or_clipping_skipped_is_caught_on_dp_sgd(digits):
    assert audit(digits, "pillar", 10, scale=0.1).epsilon_lower_bound > 1.0
    config = RunConfig(0.5, 200, 256, 0)
    unclipped = run_audit(
        get_method("pillar"),
        digits,
        10,
        1.0,
        config,
        PrivacySettings(delta=1e-4),
        AuditSettings(canaries=400, guesses=40, clip_scale=1e6),
    )
    # the claim is that of the calibrated mechanism at the real clip
    assert unclipped.epsilon_lower_bound > 1.0 and 0.99 <= unclipped.epsilon_claimed <= 1.0


def test_canary_coordinates_stay_out_of_the_real_features(digits):
    mapping = CanaryMap(digits.pca, 10, 5)
    rows = np.hstack([digits.private_x[:3], np.zeros((3, 5), np.float32)])
    features = mapping.standardized(rows)
    np.testing.assert_allclose(features[:, :10], digits.pca.transform(digits.private_x[:3], 10), rtol=1e-6)
    assert not features[:, 10:].any() and mapping.width() == 15


def test_what_cannot_be_audited_is_refused(digits):
    with pytest.raises(UsageError, match=r"^method 'public-lda' cannot be audited with input canaries"):
        audit(digits, "public-lda")
    with pytest.raises(UsageError, match=r"^an audit needs a private configuration: epsilon must be finite$"):
        audit(digits, epsilon=float("inf"))
    with pytest.raises(UsageError, match=r"^guesses must be between 1 and half the canaries \(got 300\)$"):
        AuditSettings(canaries=400, guesses=300)
