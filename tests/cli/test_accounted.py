"""Accounted selection through the CLI on MNIST-5k: the artifact lists every selection's events and inspect
recomputes each ε from them; evaluate reports the released runs; bad selection settings are refused
cleanly."""

from __future__ import annotations

import json

import numpy as np
import pytest
from checks import assert_clean_failure

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_accounted_model_lists_and_recomputes_every_event(mnist, pillar, tmp_path):
    out = tmp_path / "acc.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "10",
        "--eps",
        "1,inf",
        "--lr",
        "0.1,0.5,2",
        "--steps",
        "100,300",
        "--batch-size",
        "512",
        "--seed",
        "0,1",
        "--select",
        "accounted",
        "-o",
        out,
    )
    model = artifacts.read(out, "model")
    private = model.array("runs/epsilon_target") == 1
    assert private.sum() == 2 and np.all(model.array("runs/epsilon_spent")[private] <= 1)
    assert "trials_drawn" not in json.dumps(
        model.attrs
    )  # K stays secret: Papernot–Steinke's bounds assume it
    assert "add/remove-one adjacency" in model.attrs["mechanisms"]["pillar"]
    assert (~private).sum() == 12  # the non-private cell keeps every configuration and selects on val
    shown = json.loads(pillar("inspect", out, "--json").stdout)["selection_check"]
    assert [(c["seed"], c["epsilon_target"]) for c in shown] == [(0, 1.0), (1, 1.0)]
    assert all(c["recomputed_epsilon"] == pytest.approx(c["epsilon"], rel=1e-9) for c in shown)
    tree = pillar("inspect", out).stdout
    assert tree.count("✓") == 2 and tree.count("candidate lr") == 12 and "MISMATCH" not in tree
    assert (
        tree.count("candidate mechanism: σ") == 4
    )  # per selection, one per (sample rate, steps) of its tree
    report = json.loads(pillar("evaluate", out, "-e", f"{mnist['emb']}:test", "--json").stdout)
    cells = {row["epsilon"]: row for row in report["rows"]}
    assert cells[1.0]["seeds"] == 2 and cells[1.0]["selected"] == "in ε" and cells[1.0]["accuracy_mean"] > 0.5
    assert "covers training AND that selection" in " ".join(report["notes"])


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--lr", "0.5"],
            "--select accounted needs a private cell with at least two configurations to choose from; a "
            "single configuration needs no selection",
        ),
        (
            ["--lr", "0.1,0.5", "--trials", "0"],
            "--trials (the mean number of trials) must be at least 1 (got 0.0)",
        ),
        (
            ["--lr", "0.1,0.5", "--trials-shape", "0"],
            "--trials-shape must be positive, or inf for Poisson (got 0.0)",
        ),
        (["--lr", "0.1,0.5", "--score-share", "1"], "--score-share must be in (0, 1) (got 1.0)"),
        (
            ["--lr", "0.1,0.5", "--shard", "0/2"],
            "--select accounted sees every configuration of a cell: it cannot be sharded",
        ),
    ],
)
def test_bad_selection_settings(mnist, pillar, tmp_path, flags, message):
    out = tmp_path / "m.h5"
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--eps",
        "1",
        "--steps",
        "20",
        "--select",
        "accounted",
        *flags,
        "-o",
        out,
        expect=None,
    )
    assert_clean_failure(result, 2, message, out)


def test_unknown_select(mnist, pillar, tmp_path):
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--select",
        "best",
        "-o",
        tmp_path / "m.h5",
        expect=None,
    )
    assert_clean_failure(result, 2, "unknown --select 'best' (known: val, accounted)", tmp_path / "m.h5")


def test_an_accounted_selections_scores_are_named_noisy_where_shown(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    shown = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        *("--k", "10", "--eps", "1", "--lr", "0.1,0.5", "--steps", "30", "--batch-size", "256"),
        *("--select", "accounted", "-o", out),
    ).stdout
    assert "noisy_val_score" in shown and "val_accuracy_mean" not in shown
    kind = artifacts.read(out, "model").attrs["whole_file"]["kind"]
    assert "noisy val scores (what the accounted selection released, inside ε; not accuracies)" in kind
    assert "exact val accuracies" not in kind
