"""What a shell user reaches for: a dry run that prints the plan the run will train (and writes nothing), an error
that is one JSON document on stdout under --json, and the ε each cell spent in train-private's JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def digits(pillar, tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    pillar("embed", "--source", "digits", "--public-fraction", "0.2", "-o", root / "emb.h5")
    pillar("fit-pca", f"{root / 'emb.h5'}:public", "-o", root / "pca.h5")
    return root


def test_a_dry_run_prints_the_runs_the_run_trains_and_writes_nothing(pillar, digits):
    out = digits / "model.h5"
    argv = ["train-private", digits / "emb.h5", "-p", digits / "pca.h5", "--eps", "0.1,1", "--n-public", "-o", out]
    planned = json.loads(pillar(*argv, "--dry-run", "--json").stdout)["runs"]
    assert not out.exists()
    trained = json.loads(pillar(*argv, "--json").stdout)
    model = artifacts.read(out, "model")
    assert [(r["method"], r["k"], r["epsilon"], r["steps"], r["batch_size"]) for r in planned] == \
        [(c["method"], c["k"], c["epsilon"], c["steps"], c["batch_size"]) for c in trained["selection"]]
    np.testing.assert_allclose([r["lr"] for r in planned], model.array("runs/lr"))
    np.testing.assert_allclose([r["noise_multiplier"] for r in planned], model.array("runs/noise_multiplier"))
    np.testing.assert_allclose([r["sample_rate"] for r in planned], model.array("runs/sample_rate"))
    assert [cell["epsilon_spent"] for cell in trained["selection"]] == list(model.array("runs/epsilon_spent"))
    assert trained["whole_file_epsilon"] == model.attrs["whole_file"]["epsilon"] and \
        math.isfinite(trained["whole_file_epsilon"])


def test_an_error_under_json_is_also_one_json_document_on_stdout(pillar, tmp_path):
    missing = tmp_path / "missing.h5"
    result = pillar("train-private", missing, "-p", missing, "--eps", "1", "-o", tmp_path / "m.h5", "--json",
                    expect=3)
    assert json.loads(result.stdout) == {"error": f"artifact not found: {missing}", "hint": None, "exit_code": 3}
    assert result.stderr == f"error: artifact not found: {missing}\n"


def test_a_parser_error_under_json_is_one_json_document_too(pillar, tmp_path):
    result = pillar("train-private", tmp_path / "e.h5", "-p", tmp_path / "p.h5", "--json", expect=2)
    assert json.loads(result.stdout) == {"error": "Missing option '-o' / '--out'.",
                                         "hint": "see pillar train-private --help", "exit_code": 2}
    assert result.stderr == "error: Missing option '-o' / '--out'.\nhint: see pillar train-private --help\n"
    without = pillar("train-private", tmp_path / "e.h5", "-p", tmp_path / "p.h5", expect=2)
    assert without.stdout == ""
