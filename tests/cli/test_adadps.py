"""AdaDPS through the CLI on MNIST-5k with the sklearn digits (upscaled to 28 × 28) as the labelled public
set: it trains, records the public labels it used, passes the ledger check; public labels that are private are
refused."""

from __future__ import annotations

import json

import pytest
from checks import assert_clean_failure

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_adadps_with_a_separately_embedded_labelled_public_set(mnist, pillar, tmp_path):
    pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "pixels",
        "--resize",
        "28",
        "--public-fraction",
        "0.1",
        "-o",
        tmp_path / "digits.h5",
    )
    out = tmp_path / "ada.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--method",
        "adadps",
        "--eps",
        "1",
        "--lr",
        "0.5",
        "--steps",
        "100",
        "--public-labelled",
        f"{tmp_path / 'digits.h5'}:test",
        "-o",
        out,
    )
    model = artifacts.read(out, "model")
    assert model.attrs["adadps"]["conditioner"] == 1e-3 and "LABELLED" in model.attrs["adadps"]["note"]
    assert any(ref.kind == "embeddings" and ref.split == "test" for ref in model.provenance.inputs)
    runs = json.loads(pillar("audit", "ledger", out, "--json").stdout)["runs"]
    assert [run["status"] for run in runs] == ["ok"]
    rows = json.loads(pillar("evaluate", out, "-e", f"{mnist['emb']}:test", "--json").stdout)["rows"]
    assert rows[0]["accuracy_mean"] > 0.5


@pytest.mark.parametrize(
    ("split", "code", "message"),
    [
        ("val", 5, "{emb}:val is drawn from the private pool; --public-labelled needs public data"),
        ("public", 2, "{emb}:public has no labels; --public-labelled needs a labelled public split"),
    ],
)
def test_private_or_unlabelled_public_labels_are_refused(mnist, pillar, tmp_path, split, code, message):
    out = tmp_path / "m.h5"
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--method",
        "adadps",
        "--eps",
        "1",
        "--public-labelled",
        f"{mnist['emb']}:{split}",
        "-o",
        out,
        expect=None,
    )
    assert_clean_failure(result, code, message.format(emb=mnist["emb"]), out)


def test_adadps_without_public_labels(mnist, pillar, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar(
        "train-private", mnist["emb"], "-p", mnist["pca"], "--method", "adadps", "-o", out, expect=None
    )
    assert_clean_failure(
        result, 2, "method 'adadps' needs a labelled public split for its preconditioner", out
    )
