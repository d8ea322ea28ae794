"""The model's run table: one schema (schema.RUN_COLUMNS), written and read back row by row."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli import artifacts
from pillar_cli.artifacts.model import RunKey, RunRecord, model_artifact, run_rows, stored_runs
from pillar_cli.artifacts.model_record import ModelLedger, ModelRecord
from pillar_cli.artifacts.schema import RUN_COLUMNS
from pillar_cli.errors import ArtifactError
from pillar_cli.privacy import GaussianEvent
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.unit import PrivacyUnit

# ε ≈ 0.05 at δ = 1e-5: the rows' claims (0.9, 0.1) are above its floor
EVENT = GaussianEvent(100.0).to_dict()


def _records() -> list[RunRecord]:
    weights, bias = np.ones((3, 2)), np.zeros(2)
    return [
        RunRecord(
            key=RunKey(method="dpsgd", k=None, epsilon=1.0, lr=0.5, steps=100, batch_size=64, seed=0),
            event=EVENT,
            noise_multiplier=2.0,
            sample_rate=0.01,
            epsilon_spent=0.9,
            val_accuracy=0.7,
            steps_run=100,
            weights=np.ones((5, 2)),
            bias=bias,
        ),
        RunRecord(
            key=RunKey(
                method="public-lda", k=3, epsilon=0.1, lr=0.0, steps=1, batch_size=0, seed=1, ridge=0.25
            ),
            event=EVENT,
            epsilon_spent=0.1,
            val_accuracy=0.6,
            row_normalised=True,
            weights=weights,
            bias=bias,
        ),
    ]


def _model(records: list[RunRecord]):
    record = ModelRecord(
        num_classes=2,
        n_private=10,
        selection_note="",
        ledger=ModelLedger(clip=1.0),
        guarantee=Guarantee(unit=PrivacyUnit(), count=None, accountant="rdp", delta=1e-5),
    )
    return model_artifact(records, {("public-lda", 3): np.eye(5)[:, :3]}, np.zeros(5), np.ones(5), record)


def test_every_column_is_written_and_every_row_reads_back(tmp_path):
    records = _records()
    path = tmp_path / "m.h5"
    artifacts.write(path, _model(records))
    stored = artifacts.read(path, "model")
    assert {
        name.removeprefix("runs/")
        for name in stored.arrays
        if name.count("/") == 1 and name.startswith("runs/")
    } == set(RUN_COLUMNS)
    rows = run_rows(stored)
    for row, record in zip(rows, records, strict=True):
        assert row.key == record.key and row.event == record.event and row.steps_run == record.steps_run
        assert row.row_normalised == record.row_normalised
        np.testing.assert_equal(
            [row.noise_multiplier, row.sample_rate, row.epsilon_spent, row.val_accuracy],
            [record.noise_multiplier, record.sample_rate, record.epsilon_spent, record.val_accuracy],
        )
    assert [run.key for run in stored_runs([stored])] == [row.key for row in rows]


def test_an_older_model_without_optional_columns_reads_with_their_defaults(tmp_path):
    path, model = tmp_path / "m.h5", _model(_records()[:1])
    for name in ("ridge", "row_normalised", "steps_run"):
        del model.arrays[f"runs/{name}"]
    artifacts.write(path, model)
    stored = artifacts.read(path, "model")
    (row,) = run_rows(stored)
    assert (row.key.ridge, row.row_normalised, row.steps_run) == (0.0, False, None)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("seed", None, "has no dataset '/runs/seed'"),
        ("lr", np.array(["a"]), r"has a malformed dataset '/runs/lr' \(<U1, 1-d\)"),
        ("steps_run", np.array([1, 2]), "has run tables of different lengths"),
    ],
)
def test_a_run_table_that_breaks_the_schema_is_refused(tmp_path, column, value, message):
    model = _model(_records()[:1])
    del model.arrays[f"runs/{column}"]
    if value is not None:
        model.arrays[f"runs/{column}"] = value
    artifacts.write(tmp_path / "m.h5", model)
    with pytest.raises(ArtifactError, match=message):
        artifacts.read(tmp_path / "m.h5", "model")
