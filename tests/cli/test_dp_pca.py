"""PILLAR without public data (digits pixels): a DP-PCA projection fitted on the private split, whose release
every model and release built on it composes into its ε and states; fits and uses that would not be covered
are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from checks import assert_clean_failure, edited_copy
from dp_accounting import dp_event, pld

from pillar_cli import artifacts
from pillar_cli.privacy.release import DPRelease

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def digits(pillar, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("dppca")
    for seed in (0, 1):
        pillar(
            "embed",
            "--source",
            "digits",
            "--backbone",
            "pixels",
            "--seed",
            str(seed),
            "-o",
            root / f"d{seed}.h5",
        )
    pillar(
        "fit-pca", f"{root / 'd0.h5'}:private", "--dp-eps", "0.5", "--k-max", "20", "-o", root / "dppca.h5"
    )
    return {"root": root, "emb": root / "d0.h5", "other": root / "d1.h5", "pca": root / "dppca.h5"}


def test_a_dp_pca_is_composed_into_every_model_and_release_built_on_it(pillar, digits, tmp_path):
    projection = artifacts.read(digits["pca"], "projection")
    release = projection.attrs["private_release"]
    assert (
        projection.attrs["n_public"] == 0 and "rows/public" not in projection.arrays
    )  # nothing counts the rows
    pillar(
        "train-private",
        digits["emb"],
        "-p",
        digits["pca"],
        "--k",
        "10",
        "--eps",
        "1",
        "--lr",
        "0.5",
        "--steps",
        "100",
        "--batch-size",
        "200",
        "-o",
        tmp_path / "model.h5",
    )
    model = artifacts.read(tmp_path / "model.h5", "model")
    sigma, rate, steps = (
        float(model.array(f"runs/{name}")[0]) for name in ("noise_multiplier", "sample_rate", "steps")
    )
    accountant = pld.PLDAccountant(value_discretization_interval=1e-5)
    # the released row count
    accountant.compose(dp_event.GaussianDpEvent(model.attrs["guarantee"]["count"]["noise_multiplier"]))
    accountant.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), int(steps))
    accountant.compose(dp_event.GaussianDpEvent(release["event"]["noise_multiplier"]))  # the DP-PCA
    # the target covers the DP-PCA too: the run's noise was calibrated for it
    total = accountant.get_epsilon(2e-5)
    assert model.array("runs/epsilon_spent")[0] == pytest.approx(total, rel=0.01) and 0.98 <= total <= 1.002
    pillar("release", tmp_path / "model.h5", "-o", tmp_path / "release.h5")
    statement = json.loads(pillar("inspect", tmp_path / "release.h5", "--json").stdout)["attrs"]["privacy"]
    assert statement["epsilon"] == pytest.approx(total, rel=0.01) and statement["delta"] == pytest.approx(
        2e-5
    )
    assert any(
        line.startswith("fitting the projection on the private rows (Analyze Gauss")
        and f"ε = {release['epsilon']:.4g}, δ = 1e-05, composed in" in line
        for line in statement["covers"]
    )
    assert not any("public data" in line for line in statement["not_covered"])
    assert "ok    epsilon" in pillar("verify", tmp_path / "release.h5").stdout


def test_dp_pca_fits_and_uses_that_would_not_be_covered_are_refused(pillar, digits, tmp_path):
    out = tmp_path / "pca.h5"
    assert_clean_failure(
        pillar("fit-pca", f"{digits['emb']}:public", "--dp-eps", "1", "-o", out, expect=None),
        2,
        "--dp-eps fits on the private split: give it as FILE:private",
        out,
    )
    assert_clean_failure(
        pillar("fit-pca", f"{digits['emb']}:private", "--dp-eps", "0", "-o", out, expect=None),
        2,
        "--dp-eps must be a positive number (got 0.0)",
        out,
    )
    # δ ≥ 1/n once went through to a release; the refusal shows no n
    assert_clean_failure(
        pillar(
            "fit-pca",
            f"{digits['emb']}:private",
            "--dp-eps",
            "1",
            "--dp-delta",
            "0.01",
            "-o",
            out,
            expect=None,
        ),
        5,
        "--dp-delta 0.01 is not below 1/n of the private rows read: such a δ permits releasing "
        "individual records",
        out,
    )
    model = tmp_path / "m.h5"
    assert_clean_failure(
        pillar(
            "train-private",
            digits["other"],
            "-p",
            digits["pca"],
            "--eps",
            "1",
            "--k",
            "5",
            "-o",
            model,
            expect=None,
        ),
        4,
        f"{digits['pca']} is a DP-PCA of {digits['emb']}:private, not of {digits['other']}:private: its "
        "release covers the rows it read, not these",
        model,
    )
    forged = tmp_path / "forged.h5"
    with edited_copy(digits["pca"], forged) as h5:  # a unit no stage knows, re-hashed: once read as a row
        release = json.loads(h5.attrs["private_release"])
        h5.attrs["private_release"] = json.dumps(release | {"unit": release["unit"] | {"unit": "household"}})
    assert_clean_failure(
        pillar("train-private", digits["emb"], "-p", forged, "--eps", "1", "-o", model, expect=None),
        3,
        f"{forged}: projection artifact has a DP-PCA release pillar does not read (its event, unit, ε or δ)",
        model,
    )


def test_a_dp_pca_read_from_its_file_is_composed_by_the_python_api_too(digits):
    """PublicPCA.from_artifact carries the release, so a notebook that loads the file spends what the command
    does."""
    from pillar_cli import DPLinearClassifier, PublicPCA

    projection = artifacts.read(digits["pca"], "projection")
    loaded = PublicPCA.from_artifact(projection)
    assert loaded.release_ == DPRelease.from_attrs(projection.attrs["private_release"])
    private = artifacts.read_split(f"{digits['emb']}:private")
    clf = DPLinearClassifier(projection=loaded, k=10, epsilon=1.0, delta=1e-5, steps=50).fit(
        private.features, private.labels
    )
    assert clf.ledger_.delta == pytest.approx(2e-5) and clf.ledger_.epsilon_spent <= 1.0
    assert "fitting the projection on the private rows (Analyze Gauss" in clf.ledger_.covers


def test_the_neighbours_check_reruns_a_dp_pca_pipeline_and_finds_nothing_deterministic(
    pillar, digits, tmp_path
):
    """Without public data the projection is itself a release of the private rows: the neighbours check fits
    it on each run's private split, and nothing shipped follows the deleted record except through the two
    releases."""
    result = pillar(
        "audit",
        "neighbours",
        digits["emb"],
        "--fit-pca",
        "--dp-eps 1 --k-max 10",
        "--train",
        "--eps 1 --k 10",
        "--runs",
        "2",
        "--export",
        "safetensors",
        "--workdir",
        tmp_path / "nb",
        "--json",
    )
    found = json.loads(result.stdout)
    assert found["findings"] == []
    # k fixed: the releases hold nothing coarse; the published evaluation's confusion counts (0 or 1 in a
    # cell, and the page's copy of them) can repeat by chance in 2 runs a side, which the confirming runs then
    # dismiss
    coarse = ("attrs/rows/0/confusion_per_seed/", "attrs/rows/0/confusion_summed_over_seeds/", "html/")
    assert found["runs_per_side"] == (5 if found["dismissed"] else 2)
    assert all(finding["value"].startswith(coarse) for finding in found["dismissed"]), found["dismissed"]
    assert found["files"] == [
        "eval.h5",
        "figure.png",
        "pillar-eps1-0.h5",
        "pillar-eps1-0.html",
        "pillar-eps1-0.safetensors",
        "table.csv",
        "table.md",
    ]
    projection = artifacts.read(Path(found["runs_kept_in"]) / "with" / "run1" / "pca.h5", "projection")
    assert (
        projection.attrs["fitted_on"]["split"] == "private"
        and projection.attrs["private_release"]["epsilon"] <= 1
    )
