"""The paper's Tables 1 and 2 as pipelines: the MNIST-5k Table 1 pipeline (reduced grid) ends in a five-row
method table; a projection can be fitted on a fraction of the public rows or on another public dataset (asked
for, recorded, checked), and `report` draws accuracy against the public share."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from checks import assert_clean_failure, kept_by_fraction
from PIL import Image

from pillar_cli import artifacts
from pillar_cli.reporting.figures import AXIS_LABELS

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

EXAMPLES = Path(__file__).parents[2] / "examples.yaml"


def test_table1_pipeline_reports_the_five_methods_side_by_side(pillar, tmp_path):
    pillar(
        "run",
        EXAMPLES,
        "mnist-table1",
        "--var",
        f"workdir={tmp_path}",
        "--var",
        "k=10",
        "--var",
        "lr=1",
        "--var",
        "steps=60",
        "--var",
        "seeds=0",
    )
    lines = (tmp_path / "table1.md").read_text().splitlines()
    assert "| method | mnist5k, ε = 0.7 |" in lines and any("accountant rdp" in line for line in lines)
    body = [line.split(" | ") for line in lines if line.startswith("| ") and "method" not in line]
    assert [cells[0] for cells in body] == ["| DP-SGD", "| JL", "| AdaDPS", "| GEP", "| PILLAR"]
    assert all(0.1 < float(cells[1].split()[0]) <= 1 for cells in body)  # each a test accuracy, above chance
    report = json.loads(pillar("report", tmp_path / "mnist5k.h5", "--json").stdout)
    assert {(row["method"], row["k"]) for row in report["rows"]} == {
        ("DP-SGD", "full"),
        ("JL", 10),
        ("AdaDPS", "full"),
        ("GEP", 10),
        ("PILLAR", 10),
    }
    with Image.open(tmp_path / "table1.png") as image:
        assert image.text["Description"].startswith(f"figure=methods; x={AXIS_LABELS['methods'][0]}")
        assert (
            "series=DP-SGD, ε = 0.7|JL, ε = 0.7|AdaDPS, ε = 0.7|GEP, ε = 0.7|PILLAR, ε = 0.7"
            in image.text["Description"]
        )


def test_a_fraction_of_the_public_rows_and_the_public_share_plot(mnist, pillar, tmp_path):
    pillar("fit-pca", f"{mnist['emb']}:public", "--fraction", "0.25", "-o", tmp_path / "pca-quarter.h5")
    projection = artifacts.read(tmp_path / "pca-quarter.h5", "projection")
    public = artifacts.read_split(f"{mnist['emb']}:public")
    quarter = len(kept_by_fraction(public.features, 0.25))  # each public row by its own draw: about a quarter
    np.testing.assert_array_equal(
        projection.array("rows/public"), public.index[kept_by_fraction(public.features, 0.25)]
    )
    assert projection.attrs["n_public"] == quarter and len(projection.array("rows/public")) == quarter
    # the recipe's share, not a count over rows that include private ones
    drawn = public.attrs["public_fraction"]
    assert projection.attrs["public_share"] == pytest.approx(0.25 * drawn)
    for name, pca in (("quarter", tmp_path / "pca-quarter.h5"), ("whole", mnist["pca"])):
        pillar(
            "train-private",
            mnist["emb"],
            "-p",
            pca,
            "--k",
            "10",
            "--eps",
            "1",
            "--steps",
            "60",
            "-o",
            tmp_path / f"model-{name}.h5",
        )
        pillar(
            "evaluate",
            tmp_path / f"model-{name}.h5",
            "-e",
            f"{mnist['emb']}:test",
            "-o",
            tmp_path / f"{name}.h5",
        )
    model = artifacts.read(tmp_path / "model-quarter.h5", "model")
    assert (
        model.attrs["public_data"]["rows"] == quarter
        and model.attrs["public_data"]["kind"] == "the embeddings' own public split"
    )
    pillar("report", tmp_path / "quarter.h5", tmp_path / "whole.h5", "--public-plot", tmp_path / "share.png")
    with Image.open(tmp_path / "share.png") as image:
        assert f"x={AXIS_LABELS['public_share'][0]}" in image.text["Description"]
        ticks = f"{100 * 0.25 * drawn:.3g} %|{100 * drawn:.3g} %"
        assert f"; xticks={ticks}; series=PILLAR, ε = 1" in image.text["Description"]


def test_a_fraction_leaving_too_few_rows_is_refused(mnist, pillar, tmp_path):
    result = pillar(
        "fit-pca", f"{mnist['emb']}:public", "--fraction", "0.001", "-o", tmp_path / "p.h5", expect=None
    )
    assert_clean_failure(result, 2, "--fraction 0.001 leaves 0 public rows", tmp_path / "p.h5")


@pytest.fixture(scope="module")
def digits_projection(pillar, tmp_path_factory):
    """PCA on the sklearn digits upscaled to MNIST's 28 × 28: another public dataset in MNIST's pixel
    space."""
    root = tmp_path_factory.mktemp("other-public")
    pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "pixels",
        "--resize",
        "28",
        "--public-fraction",
        "0.5",
        "-o",
        root / "digits.h5",
    )
    pillar("fit-pca", f"{root / 'digits.h5'}:public", "--k-max", "40", "-o", root / "pca.h5")
    return root


def test_another_public_dataset_needs_asking_and_is_recorded(mnist, pillar, digits_projection, tmp_path):
    pca, out = digits_projection / "pca.h5", tmp_path / "m.h5"
    train = ["train-private", mnist["emb"], "-p", pca, "--k", "10", "--eps", "1", "--steps", "60", "-o", out]
    assert_clean_failure(
        pillar(*train, expect=None),
        3,
        f"{pca} was fitted on other data ({digits_projection / 'digits.h5'}:public) than {mnist['emb']}",
        out,
    )
    pillar(*train, "--other-public")
    recorded = artifacts.read(out, "model").attrs["public_data"]
    assert recorded["kind"] == "another public dataset"
    assert recorded["fitted_on"] == f"{digits_projection / 'digits.h5'}:public"
    notes = json.loads(pillar("evaluate", out, "-e", f"{mnist['emb']}:test", "--json").stdout)["notes"]
    assert (
        f"projection fitted on {recorded['rows']} public rows of {recorded['fitted_on']} (another public "
        "dataset)" in notes
    )


def test_another_dataset_in_another_feature_space_is_refused(mnist, pillar, tmp_path):
    pillar("embed", "--source", "digits", "--backbone", "pixels", "-o", tmp_path / "digits8.h5")
    pillar("fit-pca", f"{tmp_path / 'digits8.h5'}:public", "-o", tmp_path / "pca8.h5")
    out = tmp_path / "m.h5"
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        tmp_path / "pca8.h5",
        "--other-public",
        "--k",
        "5",
        "-o",
        out,
        expect=None,
    )
    assert_clean_failure(
        result,
        4,
        f"{tmp_path / 'pca8.h5'} was fitted on 64-dimensional features, {mnist['emb']} holds 784",
        out,
    )


def test_another_split_of_the_same_source_holding_private_rows_is_refused(mnist, pillar, tmp_path):
    pillar(
        "embed",
        "--source",
        "mnist5k",
        "--backbone",
        "pixels",
        "--seed",
        "1",
        "-o",
        tmp_path / "other-split.h5",
    )
    pillar("fit-pca", f"{tmp_path / 'other-split.h5'}:public", "-o", tmp_path / "pca.h5")
    private = artifacts.read_split(f"{mnist['emb']}:private")
    public_rows = artifacts.read(tmp_path / "pca.h5", "projection").array("rows/public")
    shared = len(set(public_rows.tolist()) & set(private.index.tolist()))
    assert shared > 0  # another split seed: some of its public rows are private rows here
    out = tmp_path / "m.h5"
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        tmp_path / "pca.h5",
        "--other-public",
        "--k",
        "5",
        "-o",
        out,
        expect=None,
    )
    assert_clean_failure(
        result,
        5,
        f"{tmp_path / 'pca.h5'} was fitted on {shared} rows of {mnist['emb']}:private "
        "(same source): the public data must not hold private rows",
        out,
    )
