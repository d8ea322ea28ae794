"""The disjunction learner through the stages: D_{f,p} embedded with the identity backbone, the component
graph fitted on the public split, both exponential mechanisms trained, evaluated and their ledgers recomputed;
and the refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
from checks import assert_clean_failure

from pillar_cli import artifacts
from pillar_cli.audit.ledger import check_ledger
from pillar_cli.data.disjunctions import DisjunctionFamily

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def bits(tmp_path_factory, pillar):
    root = tmp_path_factory.mktemp("bits")
    pillar(
        "embed",
        "--source",
        "disjunctions",
        "--param",
        "d=60",
        "--param",
        "k=3",
        "--param",
        "p=0.8",
        "--param",
        "n=2000",
        "--seed",
        "4",
        "--backbone",
        "pixels",
        "-o",
        root / "bits.h5",
    )
    pillar("fit-pca", f"{root / 'bits.h5'}:public", "--components", "-o", root / "graph.h5")
    return root


def test_component_learner_through_the_stages(bits, pillar):
    graph = artifacts.read(bits / "graph.h5", "projection")
    positive = DisjunctionFamily(60, 3, 0.8, seed=4).positive_variables
    assert graph.attrs["method"] == "components" and graph.array("components").shape == (2, 60)
    np.testing.assert_array_equal(np.flatnonzero(graph.array("components")[1]), positive)
    pillar(
        "train-private",
        bits / "bits.h5",
        "-p",
        bits / "graph.h5",
        "--method",
        "em-components,em-disjunctions",
        "--eps",
        "0.5",
        "--seed",
        "0,1,2",
        "--private-fraction",
        "0.05",
        "-o",
        bits / "model.h5",
    )
    model = artifacts.read(bits / "model.h5", "model")
    np.testing.assert_allclose(model.array("runs/epsilon_spent"), 0.5)
    assert [check.problems for check in check_ledger(model)] == [[]] * 6
    assert model.attrs["exponential_mechanism"]["literals"] == 3
    rows = json.loads(
        pillar("evaluate", bits / "model.h5", "-e", f"{bits / 'bits.h5'}:test", "--json").stdout
    )["rows"]
    accuracy = {row["method"]: row["accuracy_mean"] for row in rows}
    assert accuracy["em-components"] >= 0.95, accuracy
    heads = [
        model.array(f"runs/{i}/weights")
        for i in np.flatnonzero(model.array("runs/method") == "em-components")
    ]
    assert all(set(np.flatnonzero(head[:, 1])) == set(positive) for head in heads)  # the disjunction f itself


def test_disjunction_learners_refuse_bad_inputs(bits, pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    public = artifacts.read_split(f"{mnist['emb']}:public").features
    row, column = np.argwhere((public != 0) & (public != 1))[0]  # the first grey pixel, row by row
    assert_clean_failure(
        pillar("fit-pca", f"{mnist['emb']}:public", "--components", "-o", out, expect=None),
        4,
        f"the public split holds non-boolean features (value {public[row, column]:g} at row {row}, "
        f"column {column}); the disjunction learners read 0/1 rows",
        out,
    )
    assert_clean_failure(
        pillar(
            "train-private",
            mnist["emb"],
            "-p",
            mnist["pca"],
            "--method",
            "em-components",
            "--eps",
            "1",
            "-o",
            out,
            expect=None,
        ),
        4,
        "method 'em-components' learns a disjunction: it needs two classes (found 10)",
        out,
    )
    assert_clean_failure(
        pillar(
            "train-private",
            bits / "bits.h5",
            "-p",
            bits / "graph.h5",
            "--method",
            "em-components",
            "--eps",
            "0",
            "-o",
            out,
            expect=None,
        ),
        2,
        "--eps must be > 0 (got 0.0); use 'inf' for non-private training",
        out,
    )
    assert_clean_failure(
        pillar(
            "check-assumptions", f"{bits / 'bits.h5'}:val", "-p", bits / "graph.h5", "-o", out, expect=None
        ),
        2,
        f"{bits / 'graph.h5'} is a component graph: the assumptions are about principal components",
        out,
    )
