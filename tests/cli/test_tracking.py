"""`--track mlflow`: train-private, evaluate and release log their runs to MLflow's local store (./mlruns
by default), read back here with MLflow's own client: each cell's configuration and ledger as the model holds
it, each evaluated cell's test metrics, the release's statement as signed; no row count, row id or val
accuracy."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from pillar_cli import artifacts
from pillar_cli.artifacts.model import run_rows
from pillar_cli.privacy import event_from_dict
from pillar_cli.privacy.risk import risk_of

mlflow = pytest.importorskip("mlflow")
pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_the_three_commands_log_what_a_release_may_hold_and_no_more(pillar, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    pillar("embed", "--source", "digits", "-o", "emb.h5")
    pillar("fit-pca", "emb.h5:public", "--k-max", "10", "-o", "pca.h5")
    trained = pillar("train-private", "emb.h5", "-p", "pca.h5", "--eps", "1", "--k", "5,10", "--lr", "0.5",
                     "--steps", "20", "-o", "m.h5", "--track", "mlflow")  # fmt: skip
    assert "logged 2 run(s) to mlflow at file:./mlruns" in trained.stderr and "INFO" not in trained.stderr
    pillar("evaluate", "m.h5", "-e", "emb.h5:test", "-o", "eval.h5", "--track", "mlflow")
    pillar("release", "m.h5", "--cell", "k=10", "-o", "rel.h5", "--track", "mlflow")

    client = mlflow.tracking.MlflowClient(f"file:{tmp_path / 'mlruns'}")
    experiment = client.get_experiment_by_name("pillar")
    logged = client.search_runs([experiment.experiment_id])
    by_kind = {
        kind: [r for r in logged if r.data.tags["pillar.kind"] == kind]
        for kind in ("model cell", "evaluation", "release")
    }
    assert [len(runs) for runs in by_kind.values()] == [2, 2, 1]

    model = artifacts.read(tmp_path / "m.h5", "model")
    for run in by_kind["model cell"]:
        (head,) = [r for r in run_rows(model) if str(r.key.k) == run.data.params["k"]]
        assert run.data.params["epsilon_target"] == "1" and run.data.params["lr"] == "0.5"
        assert run.data.metrics["epsilon_spent"] == pytest.approx(head.epsilon_spent, rel=1e-12)
        assert run.data.metrics["noise_multiplier"] == pytest.approx(head.noise_multiplier, rel=1e-12)
        assert run.data.metrics["sample_rate"] == pytest.approx(head.sample_rate, rel=1e-12)
        tpr = risk_of(event_from_dict(head.event)).tpr_at(0.01)
        assert run.data.metrics["tpr_at_1pct_fpr"] == pytest.approx(tpr, rel=1e-12)

    rows = json.loads(pillar("evaluate", "m.h5", "-e", "emb.h5:test", "--json").stdout)["rows"]
    for run in by_kind["evaluation"]:
        (row,) = [r for r in rows if str(r["k"]) == run.data.params["k"]]
        assert run.data.metrics["accuracy_mean"] == pytest.approx(row["accuracy_mean"], rel=1e-12)
        assert run.data.tags["pillar.split"] == "test"

    (release,) = by_kind["release"]
    with h5py.File(tmp_path / "rel.h5") as h5:
        statement = json.loads(h5.attrs["privacy"])  # as the release holds it, signed
    folder = tmp_path / "mlruns" / experiment.experiment_id / release.info.run_id / "artifacts"
    assert json.loads((folder / "statement.json").read_text()) == statement
    assert release.data.metrics["epsilon"] == pytest.approx(statement["epsilon"], rel=1e-12)

    # nothing private: no count of rows, no val accuracy, anywhere in what was logged
    n_private = len(artifacts.read_split("emb.h5:private").index)
    val_accuracies = set(np.round(model.array("runs/val_accuracy"), 12).tolist())
    for run in logged:
        names = {*run.data.params, *run.data.metrics}
        assert not {
            name
            for name in names
            if name in ("n", "rows", "count") or name.startswith(("val", "n_", "noisy"))
        }
        assert str(n_private) not in run.data.params.values()
        assert not val_accuracies & {round(value, 12) for value in run.data.metrics.values()}


def test_an_unknown_tracker_is_refused_before_any_work(pillar, tmp_path):
    refused = pillar("release", tmp_path / "none.h5", "-o", tmp_path / "r.h5", "--track", "wandb", expect=2)
    assert (
        "unknown track 'wandb' (known: none, mlflow)" in refused.stderr and not (tmp_path / "r.h5").exists()
    )
