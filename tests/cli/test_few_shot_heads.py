"""The few-shot heads through the CLI on MNIST-5k: trained, their ε recomputed from the file by dp-accounting,
evaluated, released and predicted as every head is, with their options recorded."""

from __future__ import annotations

import json

import numpy as np
import pytest
from checks import assert_clean_failure

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_prototypes_and_votes_train_evaluate_release_and_predict(mnist, pillar, tmp_path):
    model = tmp_path / "m.h5"
    pillar(
        "train-private", mnist["emb"], "-p", mnist["pca"], "--method", "dp-prototypes,public-votes",
        "--eps", "1", "--seed", "0,1", "--prototype-rounds", "3", "-o", model,
    )  # fmt: skip
    stored = artifacts.read(model, "model")
    assert stored.attrs["dp_prototypes"]["prototype_rounds"] == 3
    assert stored.attrs["public_votes"]["centres"].startswith("the rule: round(ñ/(4σ))")
    assert "ok" in pillar("audit", "ledger", model).stdout
    rows = json.loads(pillar("evaluate", model, "-e", f"{mnist['emb']}:test", "--json").stdout)["rows"]
    accuracy = {row["method"]: row["accuracy_mean"] for row in rows}
    assert accuracy["dp-prototypes"] > 0.6 and accuracy["public-votes"] > 0.6, accuracy  # chance: 0.1
    pillar("release", model, "--cell", "method=dp-prototypes", "-o", tmp_path / "c.h5")
    pillar("predict", tmp_path / "c.h5", f"{mnist['emb']}:test", "-o", tmp_path / "p.csv")
    probabilities = np.loadtxt(tmp_path / "p.csv", delimiter=",", skiprows=1, usecols=range(2, 12))
    assert (
        np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-4) and len(probabilities) == mnist["rows"]["test"]
    )


def test_more_vote_centres_than_public_rows_is_one_line(mnist, pillar, tmp_path):
    out = tmp_path / "m.h5"
    votes = ("train-private", mnist["emb"], "-p", mnist["pca"], "--method", "public-votes", "--eps", "1")
    assert_clean_failure(
        pillar(*votes, "--vote-centres", "100000", "-o", out, expect=None),
        2,
        f"--vote-centres 100000 is more than the {mnist['rows']['public']} public rows",
        out,
    )
