"""evaluate and report over a 3-seed sweep: metrics, CSV / Markdown, and the three figures read back from
PNG."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from PIL import Image

from pillar_cli import artifacts
from pillar_cli.reporting.figures import AXIS_LABELS

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def evaluations(mnist, pillar, tmp_path_factory):
    root = tmp_path_factory.mktemp("reports")
    grid = ["--k", "5,20,full", "--eps", "0.1,inf", "--lr", "0.1,0.5", "--steps", "60", "--seed", "0,1,2"]
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], *grid, "-o", root / "full.h5")
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        *grid,
        "--private-fraction",
        "0.5",
        "-o",
        root / "half.h5",
    )
    pillar("embed", "--source", "digits", "-o", root / "digits.h5")
    pillar("fit-pca", f"{root / 'digits.h5'}:public", "-o", root / "digits-pca.h5")
    pillar(
        "train-private",
        root / "digits.h5",
        "-p",
        root / "digits-pca.h5",
        *grid,
        "-o",
        root / "digits-model.h5",
    )
    table = pillar(
        "evaluate",
        root / "full.h5",
        "-e",
        f"{mnist['emb']}:test",
        "-o",
        root / "eval-full.h5",
        "--plot",
        root / "fig4.png",
        "--csv",
        root / "full.csv",
        "--markdown",
        root / "full.md",
    )
    pillar("evaluate", root / "half.h5", "-e", f"{mnist['emb']}:test", "-o", root / "eval-half.h5")
    pillar(
        "evaluate",
        root / "digits-model.h5",
        "-e",
        f"{root / 'digits.h5'}:test",
        "-o",
        root / "eval-digits.h5",
    )
    return root, table.stdout


def test_table_reports_mean_and_std_over_three_seeds(evaluations, mnist, pillar):
    root, stdout = evaluations
    assert stdout.count("±") == 6 and "seeds 0,1,2" in stdout
    rows = json.loads(pillar("evaluate", root / "full.h5", "-e", f"{mnist['emb']}:test", "--json").stdout)[
        "rows"
    ]
    assert all(r["seeds"] == 3 and len(r["accuracies"]) == 3 for r in rows)
    assert all(
        0 <= r["balanced_accuracy_mean"] <= 1 and 0 <= r["macro_f1_mean"] <= 1 and r["roc_auc_mean"] is None
        for r in rows
    )
    test_rows = mnist["rows"]["test"]
    assert all(sum(map(sum, r["confusion_summed_over_seeds"])) == 3 * test_rows for r in rows)
    for row in rows:  # per seed, and the sample std (ddof = 1) of the three accuracies
        assert [sum(map(sum, matrix)) for matrix in row["confusion_per_seed"]] == [test_rows] * 3
        assert row["accuracy_std"] == pytest.approx(np.std(row["accuracies"], ddof=1))


def test_csv_and_markdown_reports(evaluations):
    root, _ = evaluations
    with open(root / "full.csv") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == 6 and {r["k"] for r in table} == {"5", "20", "full"} and table[0]["seeds"] == "3"
    markdown = (root / "full.md").read_text()
    assert "NOT accounted" in markdown and "δ = 1e-05" in markdown and markdown.count("\n| pillar |") == 6


def test_report_markdown_to_a_dash_is_the_table_on_standard_output_not_a_file_named_dash(
    evaluations, pillar, tmp_path, monkeypatch
):
    root, _ = evaluations
    monkeypatch.chdir(tmp_path)
    shown = pillar("report", root / "eval-full.h5", root / "eval-half.h5", "--markdown", "-").stdout
    assert shown.startswith("# ") and shown.count("\n| PILLAR |") == 1 and list(tmp_path.iterdir()) == []
    both = pillar("report", root / "eval-full.h5", "--markdown", "-", "--json", expect=2)
    assert both.stderr.splitlines()[0] == (
        "error: --markdown - and --json both write standard output: give --markdown a file"
    )
    for command in (
        ["report", root / "eval-full.h5", "--methods-plot"],
        ["evaluate", root / "full.h5", "-e", f"{root / 'digits.h5'}:test", "--markdown"],
    ):
        refused = pillar(*command, "-", expect=2)
        assert (
            refused.stderr.splitlines()[0] == "error: output '-': this output is a file, not standard output"
        )
    assert list(tmp_path.iterdir()) == []


def test_the_three_figures_are_pngs_with_their_axes(evaluations, pillar):
    root, _ = evaluations
    pillar("report", root / "eval-full.h5", root / "eval-digits.h5", "--methods-plot", root / "fig5.png")
    pillar("report", root / "eval-full.h5", root / "eval-half.h5", "--fraction-plot", root / "fig7.png")
    for name, kind in (("fig4", "accuracy_vs_k"), ("fig5", "methods"), ("fig7", "private_fraction")):
        with Image.open(root / f"{name}.png") as image:
            assert image.format == "PNG" and image.width > 300
            xlabel, ylabel = AXIS_LABELS[kind]
            assert image.text["Description"].startswith(f"figure={kind}; x={xlabel}; y={ylabel}; xticks=")
            assert "δ=1e-05" in image.text["Title"] and "seeds" in image.text["Title"]
    with Image.open(root / "fig4.png") as image:  # k = 5, 20 and full, the last labelled as such
        assert "; xticks=5|20|full (784); " in image.text["Description"]


def test_the_spectrum_leaves_out_numerically_zero_eigenvalues(mnist, pillar, tmp_path):
    pillar(
        "check-assumptions",
        f"{mnist['emb']}:val",
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--plot-spectrum",
        tmp_path / "s.png",
        "-o",
        tmp_path / "a.h5",
    )
    eigenvalues = artifacts.read(mnist["pca"], "projection").array("eigenvalues")
    kept = int((eigenvalues > eigenvalues.max() * 1e-10).sum())
    assert kept < len(eigenvalues)  # 400 public rows of 784 pixels: many directions carry nothing
    with Image.open(tmp_path / "s.png") as image:
        assert (
            f"series=public eigenvalues ({kept} of {len(eigenvalues)} above 1e-10"
            in image.text["Description"]
        )


def test_binary_tasks_get_roc_auc(pillar, tmp_path):
    pillar(
        "embed",
        "--source",
        "synthetic-gmm",
        "--param",
        "theta=4",
        "--param",
        "sigma=0.5",
        "-o",  # not separable
        tmp_path / "g.h5",
    )
    pillar("fit-pca", f"{tmp_path / 'g.h5'}:public", "--k-max", "5", "-o", tmp_path / "p.h5")
    pillar(
        "train-private",
        tmp_path / "g.h5",
        "-p",
        tmp_path / "p.h5",
        "--k",
        "2",
        "--eps",
        "inf",
        "--steps",
        "50",
        "--batch-size",
        "128",
        "-o",
        tmp_path / "m.h5",
    )
    rows = json.loads(
        pillar("evaluate", tmp_path / "m.h5", "-e", f"{tmp_path / 'g.h5'}:test", "--json").stdout
    )["rows"]
    assert rows[0]["roc_auc_mean"] > rows[0]["accuracy_mean"] > 0.9


def test_example_1_accuracy_against_the_dimension(pillar, tmp_path):
    """The Example-1 figure: one evaluation per d, each recording the dimension its models read."""
    for d in (8, 32):
        emb, pca, model = tmp_path / f"g{d}.h5", tmp_path / f"p{d}.h5", tmp_path / f"m{d}.h5"
        pillar("embed", "--source", "synthetic-gmm", "--param", f"d={d}", "--param", "n=800", "-o", emb)
        pillar("fit-pca", f"{emb}:public", "--k-max", "4", "-o", pca)
        pillar("train-private", emb, "-p", pca, "--k", "2,full", "--eps", "1", "--steps", "30", "-o", model)
        pillar("evaluate", model, "-e", f"{emb}:test", "-o", tmp_path / f"d{d}.h5")
        assert artifacts.read(tmp_path / f"d{d}.h5", "evaluation").attrs["feature_dim"] == d
    pillar("report", tmp_path / "d32.h5", tmp_path / "d8.h5", "--dimension-plot", tmp_path / "ex1.png")
    with Image.open(tmp_path / "ex1.png") as image:
        xlabel, ylabel = AXIS_LABELS["dimension"]
        assert (
            image.text["Description"] == f"figure=dimension; x={xlabel}; y={ylabel}; xticks=8|32; "
            "series=DP-SGD, ε = 1|PILLAR, ε = 1"
        )
