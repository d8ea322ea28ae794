"""Public data chosen by a GSD ranking, inside the privacy ledger (digits pixels, 64 features: a 650-parameter
probe): the model's ε is the PLD composition of its training with the DP-GSD release, the GSD sits in the
provenance chain, and choices that would leak are refused."""

from __future__ import annotations

import json

import pytest
from checks import assert_clean_failure, edited_copy
from dp_accounting import dp_event, pld

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def digits(pillar, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("choice")
    for seed in (0, 1):
        pillar(
            "embed",
            "--source",
            "digits",
            "--backbone",
            "pixels",
            "--public-fraction",
            "0.3",
            "--seed",
            str(seed),
            "-o",
            root / f"d{seed}.h5",
        )
    pillar(
        "gsd",
        "--private",
        root / "d0.h5",
        "--public",
        f"{root / 'd0.h5'}:public",
        "--dp-eps",
        "2",
        "--dp-delta",
        "1e-4",
        "-o",
        root / "dp.h5",
    )
    pillar(
        "gsd",
        "--private",
        root / "d0.h5",
        "--public",
        f"{root / 'd0.h5'}:public",
        "--public",
        f"{root / 'd1.h5'}:public",
        "-o",
        root / "plain.h5",
    )
    return {"root": root, "emb": root / "d0.h5", "other": root / "d1.h5"}


def test_a_dp_gsd_choice_is_composed_into_the_models_epsilon(pillar, digits, tmp_path):
    pillar("fit-pca", "--public-from", digits["root"] / "dp.h5", "--k-max", "20", "-o", tmp_path / "pca.h5")
    pillar(
        "train-private",
        digits["emb"],
        "-p",
        tmp_path / "pca.h5",
        "--k",
        "10",
        "--eps",
        "3",
        "--delta",
        "1e-4",
        "--lr",
        "0.5",
        "--steps",
        "100",
        "--batch-size",
        "200",
        "-o",
        tmp_path / "model.h5",
    )  # the DP-GSD: ε = 2
    model, release = (
        artifacts.read(tmp_path / "model.h5", "model"),
        artifacts.read(digits["root"] / "dp.h5", "gsd"),
    )
    sigma, rate, steps = (
        float(model.array(f"runs/{name}")[0]) for name in ("noise_multiplier", "sample_rate", "steps")
    )
    accountant = pld.PLDAccountant(value_discretization_interval=1e-5)
    # the released row count
    accountant.compose(dp_event.GaussianDpEvent(model.attrs["guarantee"]["count"]["noise_multiplier"]))
    accountant.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), int(steps))
    accountant.compose(dp_event.GaussianDpEvent(release.attrs["ledger"]["noise_multiplier"]))
    total = accountant.get_epsilon(1e-4 + release.attrs["ledger"]["delta"])
    assert (
        model.array("runs/epsilon_spent")[0] == pytest.approx(total, rel=0.01)
        and 2.94 <= total <= 3.0 * 1.002
    )
    chain = json.loads(pillar("inspect", tmp_path / "model.h5", "--json").stdout)["chain"]
    assert any(link["kind"] == "gsd" for link in chain)
    report = json.loads(
        pillar("evaluate", tmp_path / "model.h5", "-e", f"{digits['emb']}:test", "--json").stdout
    )
    assert report["rows"][0]["epsilon_spent"] == pytest.approx(total, rel=0.01)
    assert "composed into every run's ε, at total δ = 0.0002" in " ".join(report["notes"])
    assert (
        json.loads(pillar("audit", "ledger", tmp_path / "model.h5", "--json").stdout)["runs"][0]["status"]
        == "ok"
    )


def test_choices_that_would_leak_are_refused(pillar, digits, tmp_path):
    out = tmp_path / "pca.h5"
    plain = digits["root"] / "plain.h5"
    assert_clean_failure(
        pillar("fit-pca", "--public-from", plain, "-o", out, expect=None),
        5,
        f"{plain} ranked its candidates with non-private access to the private split",
        out,
    )
    assert_clean_failure(
        pillar("fit-pca", f"{digits['emb']}:test", "--public-from", plain, "-o", out, expect=None),
        2,
        f"{digits['emb']}:test is not among the candidates {plain} ranked "
        f"({digits['emb']}:public, {digits['other']}:public)",
        out,
    )
    pillar(
        "fit-pca", f"{digits['other']}:public", "--public-from", plain, "--allow-nonprivate-choice", "-o", out
    )
    model = tmp_path / "m.h5"
    result = pillar(
        "train-private", digits["emb"], "-p", out, "--eps", "inf", "--k", "5", "-o", model, expect=None
    )
    assert (
        result.exit_code == 5
        and "rows of" in result.stderr
        and "the public data must not hold private rows" in result.stderr
        and not model.exists()
    )
    pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "pixels",
        "--public-fraction",
        "0.3",
        "--seed",
        "0",
        "--limit",
        "1500",
        "-o",
        tmp_path / "small.h5",
    )
    pillar("fit-pca", "--public-from", plain, "--allow-nonprivate-choice", "-o", tmp_path / "own.h5")
    assert_clean_failure(
        pillar(
            "train-private",
            tmp_path / "small.h5",
            "-p",
            tmp_path / "own.h5",
            "--eps",
            "inf",
            "--k",
            "5",
            "-o",
            model,
            expect=None,
        ),
        4,
        f"the projection's public split was chosen by a GSD on another private split "
        f"({digits['emb']}:private), not {tmp_path / 'small.h5'}:private",
        model,
    )


def test_a_gsd_release_naming_a_unit_pillar_does_not_know_is_refused_in_one_line(pillar, digits, tmp_path):
    """A DP-GSD ledger re-hashed to name another unit (a household): once read as a row, or a ValueError at
    training time; the GSD file and a projection that carries the release are both refused on read."""
    forged, pca = tmp_path / "forged.h5", tmp_path / "pca.h5"
    with edited_copy(digits["root"] / "dp.h5", forged) as h5:
        h5.attrs["ledger"] = json.dumps(json.loads(h5.attrs["ledger"]) | {"unit": {"unit": "household"}})
    assert_clean_failure(
        pillar("inspect", forged, expect=None),
        3,
        f"{forged}: gsd artifact has a DP release pillar does not read (its event, unit, ε or δ: a "
        "DP-GSD names its unit)",
    )
    pillar("fit-pca", "--public-from", digits["root"] / "dp.h5", "--k-max", "20", "-o", pca)
    carried = tmp_path / "carried.h5"
    with edited_copy(pca, carried) as h5:
        choice = json.loads(h5.attrs["public_choice"])
        release = choice["release"] | {"unit": {"unit": "household"}}
        h5.attrs["public_choice"] = json.dumps(choice | {"release": release})
    model = tmp_path / "m.h5"
    assert_clean_failure(
        pillar(
            "train-private",
            digits["emb"],
            "-p",
            carried,
            "--eps",
            "1",
            "--delta",
            "1e-4",
            "-o",
            model,
            expect=None,
        ),
        3,
        f"{carried}: projection artifact has a public choice whose DP release pillar does not read "
        "(its event, unit, ε or δ)",
        model,
    )
