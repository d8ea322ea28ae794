"""pillar predict: a released classifier applied to embedded rows, one prediction per row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.classifier import read_classifier
from pillar_cli.cli.common import ForceOption, JsonOption, check_output, cli_errors, print_json, stdout
from pillar_cli.errors import DataError
from pillar_cli.methods.estimator import DPLinearClassifier
from pillar_cli.release import write_predictions
from pillar_cli.release.predictions import prediction_format


@cli_errors
def predict(
    classifier: Path = typer.Argument(..., help="Classifier artifact from pillar release."),
    embeddings: str = typer.Argument(..., help="Embeddings FILE:SPLIT to classify (labels are not read)."),
    out: Path = typer.Option(..., "-o", "--out", help="Predictions: *.csv, *.jsonl or *.parquet."),
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Classify every row of an embeddings split: its source row id, the predicted class name and the
    probability of each class. The rows must have been embedded as the classifier's training rows were (same
    backbone, weights and preprocessing).

    Example: pillar predict classifier.h5 emb.h5:test -o predictions.csv
    """
    path, _ = artifacts.parse_ref(embeddings)
    check_output(out, [str(classifier), path], force=force)
    prediction_format(out)
    released = read_classifier(str(classifier))
    split = artifacts.read_split(embeddings)
    _require_same_recipe(released.features, artifacts.feature_recipe(split.attrs), f"{path}:{split.name}")
    probabilities = DPLinearClassifier.from_classifier(released).predict_proba(split.features)
    write_predictions(out, split.index, released.class_names, probabilities, force)
    counts = np.bincount(probabilities.argmax(axis=1), minlength=len(released.class_names))
    summary = {"output": str(out), "rows": len(split.index),
               "predicted": dict(zip(released.class_names, counts.tolist())),
               "epsilon": released.privacy["epsilon"], "delta": released.privacy["delta"]}
    if as_json:
        return print_json(summary)
    stdout.print(f"{out}: {len(split.index)} rows of {path}:{split.name} classified (classifier ε = "
                 f"{summary['epsilon']:.4g}, δ = {summary['delta']:g})")


def _require_same_recipe(trained: dict, given: dict, where: str) -> None:
    """Refuse rows embedded otherwise than the classifier's training rows (only what both record is compared)."""
    if given.get("feature_dim", trained["feature_dim"]) != trained["feature_dim"]:
        raise DataError(f"{where} has {given['feature_dim']} features; the classifier reads {trained['feature_dim']}")
    differing = [key for key in trained if key in given and given[key] != trained[key]]
    if differing:
        key = differing[0]
        raise DataError(f"{where} was embedded with {key} {given[key]!r}; the classifier's rows with {trained[key]!r}",
                        hint="embed the rows with the classifier's backbone, weights and preprocessing")
