"""pillar predict: a released classifier applied to new rows — embedded ones, or raw inputs of a dataset
source embedded on the way by the classifier's recorded backbone — one prediction per row."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.artifacts.classifier_file import read_classifier
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.files import STDOUT
from pillar_cli.artifacts.layout import row_blocks
from pillar_cli.artifacts.stored_rows import StoredRows
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    check_output,
    print_json,
    stderr,
    stdout,
)
from pillar_cli.cli.progress import progress_bar
from pillar_cli.cli.sources import default_workers, parse_params
from pillar_cli.cli.trust import KeyOption, checked_trust
from pillar_cli.data import SourceOptions, load_source
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.release import write_predictions
from pillar_cli.release.predictions import prediction_format

if TYPE_CHECKING:
    from pillar_cli.finetune.released import NetworkClassifier
    from pillar_cli.methods.estimator import DPLinearClassifier


@cli_errors
def predict(
    classifier: Path = typer.Argument(..., help="Classifier artifact from pillar release."),
    embeddings: str | None = typer.Argument(
        None,
        help="Embeddings FILE:SPLIT to classify (labels are not read); or give raw inputs with --source.",
    ),
    out: Path = typer.Option(
        ...,
        "-o",
        "--out",
        help="Predictions: *.csv, *.jsonl or *.parquet; - writes CSV to "
        "standard output (what the command says goes to standard error).",
    ),
    source: str | None = typer.Option(
        None,
        help="Raw inputs: a dataset source (image-folder, manifest, npz, "
        "h5, ...); labels are not needed, and not read.",
    ),
    path: Path | None = typer.Option(None, help="The raw inputs on disk (with --source)."),
    param_: list[str] = typer.Option(
        [], "--param", help="Source parameter KEY=VALUE (repeatable), e.g. size=32."
    ),
    weights: Path | None = typer.Option(
        None,
        help="The backbone's weights file, when the classifier's rows were "
        "embedded with one (its hash must match the recorded one).",
    ),
    trust_checkpoint: bool = typer.Option(
        False,
        "--trust-checkpoint",
        help="Allow full unpickling of --weights (runs code from the file: trusted files only).",
    ),
    batch_size: int = typer.Option(256, min=1, help="Raw inputs per forward pass."),
    workers: int | None = typer.Option(
        None,
        min=0,
        help="Processes decoding image files ahead of the backbone "
        "(default: one per core for image files, 0 for arrays).",
    ),
    device: str = typer.Option("auto", help="Where raw inputs are embedded: auto, cpu, cuda, cuda:1, ..."),
    key: Path | None = KeyOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Classify every row: its id (source row id, or file for image files), the predicted class name and the
    probability of each class. Embedded rows must have been made as the classifier's training rows were; raw
    inputs are embedded here with exactly the recorded backbone, weights and preprocessing.

    Example: pillar predict classifier.h5 emb.h5:test -o predictions.csv

    Example: pillar predict classifier.h5 --source image-folder --path new/ --key signer.pub.pem -o p.csv
    """
    if (embeddings is None) == (source is None):
        raise UsageError(
            f"give the rows to classify: an embeddings FILE:SPLIT or {param('source')} (not both)"
        )
    inputs = (
        [str(classifier)]
        + ([artifacts.parse_ref(embeddings)[0]] if embeddings else [])
        + [str(p) for p in (path, weights) if p is not None]
    )
    if out != STDOUT:
        check_output(out, inputs, force=force)
    prediction_format(out)
    from pillar_cli.release.loading import estimator_of  # scikit-learn and torch: to run, not for --help

    released = read_classifier(str(classifier))
    say_trust = checked_trust(classifier, key)
    estimator = estimator_of(released)
    if embeddings is not None:
        split = artifacts.read_split(embeddings, on_disk=True)
        where = f"{split.ref.path}:{split.name}"
        _require_same_recipe(released.features, split.recipe.with_dim(split.features.shape[1]), where)
        counts = write_predictions(
            out, _probabilities(estimator, split.index, split.features), released.class_names, force
        )
    else:
        where = str(path or source)
        counts = _classify_raw(
            released,
            estimator,
            source,
            SourceOptions(path, parse_params(param_)),
            weights,
            trust_checkpoint,
            device,
            batch_size,
            workers,
            lambda blocks: write_predictions(out, blocks, released.class_names, force),
        )
    _report(out, released, counts, where, as_json)
    say_trust()


def _probabilities(
    estimator: DPLinearClassifier | NetworkClassifier, index: np.ndarray, features: StoredRows
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(row ids, class probabilities) a block of rows at a time: the rows stay in their file until read, and
    each block's probabilities are written before the next is read."""
    for start, block in row_blocks(features):
        yield index[start : start + len(block)], estimator.predict_proba(block)


def _classify_raw(
    released: Classifier,
    estimator: DPLinearClassifier | NetworkClassifier,
    source: str,
    options: SourceOptions,
    weights: Path | None,
    trust_checkpoint: bool,
    device: str,
    batch_size: int,
    workers: int | None,
    write: Callable[[Iterator[tuple[np.ndarray, np.ndarray]]], np.ndarray],
) -> np.ndarray:
    """A source's raw inputs, embedded by the classifier's rebuilt embedder and classified a batch at a time,
    each batch's (row names, probabilities) handed to `write` as it comes; what `write` returns."""
    from pillar_cli.release.inputs import (  # torch: raw inputs
        classify_inputs,
        decoded_as_recorded,
        input_embedder,
    )

    dataset = load_source(source, decoded_as_recorded(released, source, options))
    embedder = input_embedder(
        released, dataset, weights=weights, device=device, trust_checkpoint=trust_checkpoint
    )
    with progress_bar(f"classifying {options.path or source}", sum(dataset.part_sizes), "rows") as advance:
        return write(
            classify_inputs(
                dataset,
                embedder,
                estimator.predict_proba,
                batch_size=batch_size,
                workers=default_workers(dataset) if workers is None else workers,
                on_batch=advance,
            )
        )


def _report(out: Path, released: Classifier, counts: np.ndarray, where: str, as_json: bool) -> None:
    rows = int(counts.sum())
    summary = {
        "output": str(out),
        "rows": rows,
        "predicted": dict(zip(released.class_names, counts.tolist())),
        "epsilon": released.privacy.epsilon,
        "delta": released.privacy.delta,
    }
    if out == STDOUT:  # standard output holds the predictions
        return stderr.print(
            f"{rows} rows of {where} classified (classifier ε = "
            f"{summary['epsilon']:.4g}, δ = {summary['delta']:g})",
            soft_wrap=True,
        )
    if as_json:
        return print_json(summary)
    stdout.print(
        f"{out}: {rows} rows of {where} classified (classifier ε = "
        f"{summary['epsilon']:.4g}, δ = {summary['delta']:g})"
    )


def _require_same_recipe(trained: FeatureRecipe, given: FeatureRecipe, where: str) -> None:
    """Refuse rows embedded otherwise than the classifier's training rows (only what both record is compared;
    the shape of the images they were embedded from may differ)."""
    if given.feature_dim != trained.feature_dim:
        raise DataError(
            f"{where} has {given.feature_dim} features; the classifier reads {trained.feature_dim}"
        )
    if key := trained.first_difference(given, ignore=("image_shape",)):
        recorded, asked = trained.to_attrs()[key], given.to_attrs()[key]
        raise DataError(
            f"{where} was embedded with {key} {asked!r}; the classifier's rows with {recorded!r}",
            hint="embed the rows with the classifier's backbone, weights and preprocessing",
        )
