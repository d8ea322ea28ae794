"""One request, three entry points, one plan (methods/request.py, methods/plan.py): `pillar train-private
--eps 1`, `sweep(..., epsilon=[1])` and `DPLinearClassifier(epsilon=1).fit` decide the same role for the val
rows, release the same count, set the same k, lr and steps by the rule, and — with one experiment-only noise
seed for all three — train the same head."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pillar_cli import DPLinearClassifier, PublicPCA, artifacts, sweep
from pillar_cli.cli import train
from pillar_cli.methods.plan import plan_sweep

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

NOISE_SEED = 11


def test_the_command_the_sweep_and_the_estimator_plan_and_train_alike(pillar, tmp_path, monkeypatch):
    emb, pca_path, out = tmp_path / "digits.h5", tmp_path / "pca.h5", tmp_path / "model.h5"
    pillar("embed", "--source", "digits", "--backbone", "pixels", "--public-fraction", "0.2", "-o", emb)
    pillar("fit-pca", f"{emb}:public", "-o", pca_path)
    seen = {}
    run_plan = train.run_plan

    def recording(data, plan, *args, **kwargs):
        seen["data"], seen["plan"] = data, plan
        return run_plan(data, plan, *args, **kwargs)

    monkeypatch.setattr(train, "run_plan", recording)
    pillar("train-private", emb, "-p", pca_path, "--eps", "1", "--noise-seed", str(NOISE_SEED), "-o", out)
    model = artifacts.read(out, "model")
    private, val = (artifacts.read_split(f"{emb}:{name}") for name in ("private", "val"))
    pca = PublicPCA.from_artifact(artifacts.read(pca_path, "projection"))
    result = sweep(
        private.features,
        private.labels,
        val.features,
        val.labels,
        projection=pca,
        epsilon=[1.0],
        noise_seed=NOISE_SEED,
    )
    clf = DPLinearClassifier(epsilon=1.0, projection=pca, noise_seed=NOISE_SEED).fit(
        np.concatenate([private.features, val.features]), np.concatenate([private.labels, val.labels])
    )

    # the val rows train beside the private rows everywhere (nothing is chosen on them), in the same order
    np.testing.assert_array_equal(seen["data"].private_y, np.concatenate([private.labels, val.labels]))
    assert seen["data"].val_x is None and result.plan == seen["plan"]
    # one request three ways: the estimator's differs only where it has no val rows and keeps to the CPU
    assert dataclasses.replace(clf.request(), val="auto", device="auto") == seen["plan"].request
    estimator_plan = plan_sweep(seen["data"], clf.request())
    assert (estimator_plan.grids, estimator_plan.count) == (seen["plan"].grids, seen["plan"].count)
    assert clf.ledger_.count == seen["plan"].count and seen["plan"].count.noisy
    (cli_run,) = result.runs
    assert (
        (clf.k_, clf.ledger_.steps)
        == (cli_run.key.k, cli_run.key.steps)
        == (int(model.array("runs/k")[0]), int(model.array("runs/steps")[0]))
    )
    assert cli_run.key.lr == pytest.approx(float(model.array("runs/lr")[0]))
    np.testing.assert_allclose(cli_run.head.weights, model.array("runs/0/weights"), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(clf.head_.weights, cli_run.head.weights, rtol=1e-6, atol=1e-7)
    assert clf.ledger_.epsilon_spent == cli_run.epsilon_spent == float(model.array("runs/epsilon_spent")[0])
