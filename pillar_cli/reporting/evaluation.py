"""Evaluating model artifacts on a labelled split: the run selected on val per (method, k, ε), its metrics over
seeds, and the qualifiers every table and figure states (n, δ, accountant, seeds, how it was selected)."""

from __future__ import annotations

from dataclasses import dataclass

from pillar_cli.artifacts import Artifact, Split
from pillar_cli.errors import DataError
from pillar_cli.reporting.metrics import selected_metrics


@dataclass(frozen=True)
class Evaluation:
    rows: list[dict]
    title: str
    notes: list[str]
    split: str
    dataset: str | None
    n_private: int
    private_fraction: float
    ledger: dict
    feature_dim: int


def evaluate_models(models: list[Artifact], split: Split) -> Evaluation:
    """Several model files are the shards of one sweep: merged before selection."""
    if split.labels is None:
        raise DataError(f"split '{split.name}' of {split.ref.path} has no labels to evaluate against")
    rows = selected_metrics(models, split.features, split.labels)
    first, ledger = models[0], models[0].attrs["ledger"]
    seeds = sorted({seed for model in models for seed in model.array("runs/seed").tolist()})
    title = (f"{split.attrs.get('source')} / {split.attrs.get('backbone')}: {split.name} accuracy; "
             f"n_private={first.attrs['n_private']}, δ={ledger['delta']:g}, {ledger['accountant']}, "
             f"seeds {','.join(map(str, seeds))}")
    notes = [f"private rows n = {first.attrs['n_private']}, δ = {ledger['delta']:g}, accountant "
             f"{ledger['accountant']}, clip {ledger['clip']:g}", f"seeds {', '.join(map(str, seeds))}",
             first.attrs["selection_note"], f"evaluated on split '{split.name}' ({len(split.features)} rows)"]
    return Evaluation(rows, title, notes, split.name, split.attrs.get("source"), first.attrs["n_private"],
                      first.attrs.get("private_fraction", 1.0), ledger, int(first.array("mean").size))
