"""The number of training rows is private: nothing a user ships is a function of it but the count released
inside ε. Tried as an attacker holding the shipped files: the default path twice on the same data, the
neighbouring-datasets check on the data and the data less one row, and the ledger recomputed with
dp-accounting."""

from __future__ import annotations

import json
import re

import pytest

from pillar_cli import artifacts
from pillar_cli.audit.stored_values import stored_values
from pillar_cli.privacy import event_from_dict, gaussian_segments
from pillar_cli.privacy.count import RowCount

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

BATCH = 512


def _ship(pillar, mnist, folder, *options: str) -> dict:
    """The default path, a release of its ε = 1 cell and its safetensors and ONNX exports: what a user ships;
    and the evaluation and report table a researcher publishes."""
    folder.mkdir()
    pillar(
        "train-private", mnist["emb"], "-p", mnist["pca"], "--eps", "0.1,1", *options, "-o", folder / "m.h5"
    )
    pillar("release", folder / "m.h5", "--cell", "eps=1", "-o", folder / "rel.h5")
    shipped = {"rel.h5": folder / "rel.h5"}
    for fmt, suffix in (("safetensors", "safetensors"), ("onnx", "onnx")):
        pillar("export", folder / "rel.h5", "--format", fmt, "-o", folder / f"rel.{suffix}")
        shipped[f"rel.{suffix}"] = folder / f"rel.{suffix}"
    pillar("evaluate", folder / "m.h5", "-e", f"{mnist['emb']}:test", "-o", folder / "eval.h5")
    pillar("report", folder / "eval.h5", "--markdown", folder / "table.md")
    shipped["eval.h5"] = folder / "eval.h5"
    statement = artifacts.read(folder / "rel.h5", "classifier").attrs["privacy"]
    (count, training) = event_from_dict(statement["event"]).events
    ((_, rate, _),) = gaussian_segments(training)
    return {
        "model": artifacts.read(folder / "m.h5", "model"),
        "statement": statement,
        "count_event": count,
        "rate": rate,
        "values": {name: stored_values(path) for name, path in shipped.items()},
        "table": (folder / "table.md").read_text(),
    }


PUBLISHED = [
    "eval.h5",
    "figure.png",
    "pillar-eps1-0.html",
    "table.csv",
    "table.md",
]  # what the check publishes of
# each run besides the releases and exports: the evaluation, its tables and figure, the first release's page


def training_rows(mnist) -> int:
    """The rows the MNIST-5k default path trains on: the private and the val split's (about 3,600)."""
    return mnist["rows"]["private"] + mnist["rows"]["val"]


def test_the_default_path_ships_nothing_derived_from_the_exact_row_count(pillar, mnist, tmp_path):
    n = training_rows(mnist)
    one, two = _ship(pillar, mnist, tmp_path / "one"), _ship(pillar, mnist, tmp_path / "two")
    # the count is released once for these rows and read again by the second pipeline: the same ñ, never n
    assert one["rate"] == two["rate"] and BATCH / n not in (one["rate"], two["rate"])
    for shipped in (one, two):
        model, statement = shipped["model"], shipped["statement"]
        count = RowCount.from_dict(model.attrs["guarantee"]["count"])
        assert (
            count.noisy and shipped["count_event"] == count.event and shipped["rate"] == BATCH / count.value
        )
        for lr, steps, epsilon in zip(
            model.array("runs/lr"), model.array("runs/steps"), model.array("runs/epsilon_target")
        ):  # the rule reads ñ, never n
            assert 32 * lr * steps / epsilon == pytest.approx(count.value) != pytest.approx(n, abs=1e-6)
        integers = {
            name: key
            for name, values in shipped["values"].items()
            for key, value in values.items()
            if value in (str(n), f"{float(n)!r}")
        }
        assert (
            integers == {}
        )  # no stored value of the release, its exports or the evaluation is the row count
        assert str(n) not in shipped["table"] and f"{n:,}" not in shipped["table"]
        assert f"private rows ñ = {count.value:,.1f} (released with noise)" in shipped["table"]
        assert any(
            line.startswith("the number of training rows, released once with Gaussian noise")
            for line in statement["covers"]
        )
        assert "reads no label, only the released count ñ and ε" in "; ".join(statement["covers"])
        assert statement["epsilon"] <= 1.0 and statement["count"]["value"] == count.value


def test_a_count_declared_public_is_read_exactly_and_the_statement_says_so(pillar, mnist, tmp_path):
    n = training_rows(mnist)
    shipped = _ship_public(pillar, mnist, tmp_path)
    assert shipped["rate"] == BATCH / n
    assert any(
        line.startswith(f"the number of training rows, n = {n}, is declared public knowledge")
        for line in shipped["statement"]["not_covered"]
    )
    inspected = pillar("inspect", tmp_path / "public" / "rel.h5").stdout
    assert "declared public knowledge" in " ".join(
        re.sub("[│├└─]", " ", inspected).split()
    )  # the tree's wrapping


def _ship_public(pillar, mnist, tmp_path) -> dict:
    folder = tmp_path / "public"
    folder.mkdir()
    pillar(
        "train-private", mnist["emb"], "-p", mnist["pca"], "--eps", "1", "--n-public", "-o", folder / "m.h5"
    )
    pillar("release", folder / "m.h5", "-o", folder / "rel.h5")
    statement = artifacts.read(folder / "rel.h5", "classifier").attrs["privacy"]
    ((_, rate, _),) = gaussian_segments(event_from_dict(statement["event"]))
    return {"statement": statement, "rate": rate}


def test_the_ledger_check_recomputes_the_counts_release_with_dp_accounting(pillar, mnist, tmp_path):
    folder = tmp_path / "ledger"
    folder.mkdir()
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--eps", "0.1,1", "-o", folder / "m.h5")
    pillar("release", folder / "m.h5", "--cell", "eps=0.1", "-o", folder / "rel.h5")
    for path in (folder / "m.h5", folder / "rel.h5"):
        checked = json.loads(pillar("audit", "ledger", path, "--json").stdout)
        assert checked["runs"] and all(run["status"] == "ok" for run in checked["runs"])
        assert all(run["epsilon_recomputed"] <= run["epsilon_target"] * 1.001 for run in checked["runs"])


def test_the_neighbours_check_finds_nothing_on_the_default_path_and_the_planted_leak(pillar, tmp_path):
    emb = tmp_path / "digits.h5"
    pillar("embed", "--source", "digits", "--backbone", "pixels", "-o", emb)
    # 4 runs a side (7 where confirming): a coarse DP output the deleted record shifts (a confusion count of
    # its label's test images) repeated on each side in all of 5 runs (2 + 3) once in a clean-clone run
    quiet = pillar(
        "audit", "neighbours", emb, "--train", "--eps 1", "--export", "safetensors", "--runs", "4", "--json"
    )
    report = json.loads(quiet.stdout)
    assert report["findings"] == [] and report["files"] == sorted(
        [*PUBLISHED, "pillar-eps1-0.h5", "pillar-eps1-0.safetensors"]
    )
    leaked = pillar(
        "audit",
        "neighbours",
        emb,
        "--train",
        "--eps 1 --n-public",
        "--export",
        "safetensors",
        "--runs",
        "2",
        "--json",
        expect=5,
    )
    report = json.loads(leaked.stdout)
    assert report["runs_per_side"] == 5  # 2, then 3 more a side confirming what the first 2 found
    found = {(finding["file"], finding["value"]) for finding in report["findings"]}
    for file, prefix in (
        ("pillar-eps1-0.h5", "attrs/privacy/"),
        ("pillar-eps1-0.safetensors", "metadata/pillar_privacy/"),
    ):
        assert {
            (file, prefix + "event/event/sample_rate"),
            (file, prefix + "event/event/event/noise_multiplier"),
            (file, prefix + "count/value"),
        } <= found
    assert ("eval.h5", "attrs/count/value") in found  # the published evaluation is compared as well
    assert "error: " in leaked.stderr and "deterministic function of the private rows" in leaked.stderr
