"""The closed-form heads through the CLI on MNIST-5k: the public-covariance discriminant beats DP-SGD at ε = 0.1."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from checks import assert_clean_failure

from pillar_cli import artifacts
from pillar_cli.methods.closed_form import COUNT_WEIGHT

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_public_lda_beats_pillar_dp_sgd_at_small_epsilon(mnist, pillar, tmp_path):
    common = ["train-private", mnist["emb"], "-p", mnist["pca"], "--k", "10", "--eps", "0.1", "--seed", "0,1,2"]
    pillar(*common, "--method", "public-lda", "-o", tmp_path / "lda.h5")
    pillar(*common, "--method", "pillar", "--lr", "0.1", "--steps", "100", "--batch-size", "512", "-o",
           tmp_path / "sgd.h5")
    accuracy = {}
    for name in ("lda", "sgd"):
        rows = json.loads(pillar("evaluate", tmp_path / f"{name}.h5", "-e", f"{mnist['emb']}:test", "--json").stdout)
        accuracy[name] = rows["rows"][0]["accuracy_mean"]
    assert accuracy["lda"] > accuracy["sgd"], accuracy
    model = artifacts.read(tmp_path / "lda.h5", "model")
    sigma, n = model.array("runs/noise_multiplier")[0], model.attrs["n_private"]
    assert model.array("runs/row_normalised").all()
    # λ = k·(σΔC/ñ)² with ñ the count released with the sums (noise σΔ/w): the attacker's n is ñ, not n
    sensitivity = math.sqrt(1 + COUNT_WEIGHT**2)
    estimates = np.sqrt(10) * sigma * sensitivity * 10 / np.sqrt(model.array("runs/ridge"))
    spread = sigma * sensitivity / COUNT_WEIGHT
    assert len(set(estimates.round(3))) == 3 and np.all(np.abs(estimates - n) < 5 * spread), (estimates, spread)
    assert np.all(model.array("runs/epsilon_spent") <= 0.1) and (model.array("runs/sample_rate") == 1.0).all()


def test_bad_closed_form_inputs(mnist, pillar, tmp_path):
    base = ["train-private", mnist["emb"], "-p", mnist["pca"], "--eps", "1", "-o", tmp_path / "m.h5"]
    assert_clean_failure(pillar(*base, "--method", "dp-ls", "--k", "5", "--ridge", "0", expect=None), 2,
                         "--ridge must be a positive number (got 0.0)", tmp_path / "m.h5")
    assert_clean_failure(pillar(*base, "--method", "nope", expect=None), 2,
                         "unknown method 'nope' (known: pillar, dpsgd, jl, gep, noisy-sgd, public-lda, dp-ls, adadps, "
                         "em-components, em-disjunctions)",
                         tmp_path / "m.h5")
