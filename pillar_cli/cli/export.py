"""pillar export: a released classifier as ONNX, TorchScript or safetensors, its privacy statement inside."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli.artifacts.classifier import read_classifier
from pillar_cli.cli.common import ForceOption, JsonOption, check_output, cli_errors, print_json, stdout
from pillar_cli.release.export import EXPORT_FORMATS, export_classifier


@cli_errors
def export(
    classifier: Path = typer.Argument(..., help="Classifier artifact from pillar release."),
    fmt: str = typer.Option(..., "--format", help=f"{' | '.join(EXPORT_FORMATS)}."),
    out: Path = typer.Option(..., "-o", "--out", help="File to write."),
    features_only: bool = typer.Option(False, "--features-only", help="The module reads embedded features (N, D); "
                                       "without it, a classifier on raw pixels reads uint8 images (N, H, W, C)."),
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Write one self-contained module, inputs → class probabilities (the scaler, basis and head of the release, a
    softmax), with the release's privacy statement, class names and feature recipe inside the file; pillar inspect
    reads them back. safetensors holds the tensors by name and the same metadata.

    Example: pillar export classifier.h5 --format onnx --features-only -o classifier.onnx
    """
    check_output(out, [str(classifier)], force=force)
    released = read_classifier(str(classifier))
    reads = export_classifier(released, fmt, features_only, out, force)
    if as_json:
        return print_json({"output": str(out), "format": fmt, "input": reads, "privacy": released.privacy["summary"]})
    stdout.print(f"{out}: {fmt}, reads {reads}, outputs the probabilities of {len(released.class_names)} classes; "
                 f"ε = {released.privacy['epsilon']:.4g}, δ = {released.privacy['delta']:g} inside the file")
