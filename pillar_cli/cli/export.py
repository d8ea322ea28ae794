"""pillar export: a released classifier as ONNX, TorchScript, safetensors or a Hugging Face model folder with
a model card, its privacy statement inside."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli.artifacts import read
from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.artifacts.classifier_file import read_classifier
from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.artifacts.outputs import claim
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    SignOption,
    print_json,
    signed_output,
    stdout,
)
from pillar_cli.cli.trust import KeyOption, checked_trust
from pillar_cli.errors import UsageError
from pillar_cli.release.exported import EXPORT_FORMATS
from pillar_cli.release.folder import check_folder_target
from pillar_cli.release.signing import sign_file, signature_path


@cli_errors
def export(
    classifier: Path = typer.Argument(..., help="Classifier artifact from pillar release."),
    fmt: str = typer.Option(..., "--format", help=f"{' | '.join(EXPORT_FORMATS)}."),
    out: Path = typer.Option(..., "-o", "--out", help="File to write."),
    features_only: bool = typer.Option(
        False,
        "--features-only",
        help="The module reads embedded features (N, D); "
        "without it, uint8 images (N, H, W, C) (uint16 when embedded from 16-bit "
        "images) through the recorded backbone.",
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
    evaluation: Path | None = typer.Option(
        None,
        "--evaluation",
        help="hf: an evaluation (pillar evaluate) of "
        "the model released, whose test metrics for the head's cell the model card states.",
    ),
    sign: Path | None = SignOption,
    key: Path | None = KeyOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Write one self-contained module, uint8 images → class probabilities (the recorded preprocessing and
    backbone, then the release's scaler, basis and head, a softmax; fp32), with the release's privacy
    statement, class names and feature recipe inside the file; pillar inspect reads them back. safetensors
    holds the head's tensors by name and the same metadata.

    Example: pillar export classifier.h5 --format onnx -o classifier.onnx

    Example: pillar export classifier.h5 --format hf --evaluation eval.h5 -o classifier-hf --sign
    signer.key.pem
    """
    from pillar_cli.release.export import export_classifier  # torch: imported to run, not for --help

    if evaluation is not None and fmt != "hf":
        raise UsageError(
            f"--evaluation states test metrics in a model card, which only --format hf writes (not {fmt})"
        )
    signed_output(
        out,
        sign,
        [str(classifier)] + [str(path) for path in (weights, evaluation) if path],
        force,
        folder=fmt == "hf",
    )
    released = read_classifier(str(classifier))
    say_trust = checked_trust(classifier, key)
    metrics = (
        None if evaluation is None else card_metrics(Evaluation.of(read(evaluation, "evaluation")), released)
    )
    inputs = [classifier, *(path for path in (weights, evaluation) if path)]
    if fmt == "hf":  # before anything is written
        check_folder_target(out, inputs, force)
    reads = export_classifier(
        released,
        fmt,
        out,
        features_only=features_only,
        weights=weights,
        trust_checkpoint=trust_checkpoint,
        force=force,
        metrics=metrics,
        inputs=inputs,
    )
    if sign is not None:
        claim(signature_path(out))  # taken back with the export if signing does not finish
        sign_file(out, sign)
    if as_json:
        print_json(
            {
                "output": str(out),
                "format": fmt,
                "input": reads,
                "privacy": released.privacy.summary,
                "unit": released.privacy.unit.described,
            }
        )
    else:
        stdout.print(
            f"{out}: {fmt}, reads {reads}, outputs the probabilities of {len(released.class_names)} "
            f"classes; ε = {released.privacy.epsilon:.4g}, δ = {released.privacy.delta:g} for "
            f"{released.privacy.unit.described}, inside the file"
        )
    say_trust()


def card_metrics(evaluation: Evaluation, released: Classifier) -> dict:
    """The evaluation's metrics for the released head's cell, or one line saying it holds none."""
    from pillar_cli.release.card import evaluation_metrics

    metrics = evaluation_metrics(evaluation, released)
    if metrics is None:
        raise UsageError(
            f"{evaluation.path} is no evaluation of the released head (method {released.head['method']}, "
            f"k {released.head['k']}, ε {released.privacy.epsilon_target:g}): none of its heads is this "
            "one, so a card quoting it would describe another model",
            hint="evaluate the model this classifier was released from (pillar evaluate MODEL -o eval.h5)",
        )
    return metrics
