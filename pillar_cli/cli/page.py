"""pillar page: one self-contained HTML page of a release — its guarantee in plain words, what that means for
one unit (the trade-off curve, a canary audit's points), how well it classifies, where it came from, whether
signed."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.classifier_file import read_classifier
from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.artifacts.files import replacing
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import ConfigOption, ForceOption, JsonOption, check_output, print_json, stdout
from pillar_cli.cli.trust import KeyOption
from pillar_cli.errors import UsageError


@cli_errors
def page(
    classifier: Path = typer.Argument(..., help="A release (pillar release)."),
    out: Path = typer.Option(..., "-o", "--out", help="The page to write (.html)."),
    evaluation: Path | None = typer.Option(
        None,
        "--evaluation",
        help="An evaluation (pillar evaluate) of the model "
        "released: the page shows the released head's test accuracy.",
    ),
    audit: Path | None = typer.Option(
        None,
        "--audit",
        help="A canary audit (pillar audit -o): its tests are drawn on the trade-off curve's axes.",
    ),
    key: Path | None = KeyOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Write one HTML page of a release that makes no request (no script, font or image from elsewhere;
    figures inline) and prints to PDF as it shows: the privacy statement in plain words, the trade-off curve
    (the highest true-positive rate of any membership attack on one unit at each false-positive rate) with an
    audit's points, test accuracy with per-class accuracy and the confusion matrix, the provenance, the
    signature status.

    Example: pillar page classifier.h5 --evaluation eval.h5 --audit audit.h5 -o classifier.html
    """
    from pillar_cli.release.signing import trust_of
    from pillar_cli.reporting.page import release_page

    check_output(out, [str(path) for path in (classifier, evaluation, audit) if path], force=force)
    if out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"{out}: a page is named .html, so that a browser knows what it is")
    released = read_classifier(str(classifier))
    document, text = release_page(
        released,
        trust_of(classifier, key).line,
        evaluation and Evaluation.of(artifacts.read(evaluation, "evaluation")),
        audit and artifacts.read(audit, "audit"),
    )
    with replacing(out, force) as tmp:
        tmp.write_text(text, encoding="utf-8")
    if as_json:
        return print_json({"output": str(out), **document})
    stdout.print(f"{out}: the page of {classifier}; {document['risk']['words']}", soft_wrap=True)
