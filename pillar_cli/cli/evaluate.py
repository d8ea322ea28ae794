"""pillar evaluate: metrics of the models selected on val, as a table, JSON, CSV, Markdown and a plot."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.artifacts.files import replacing_together
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    TrackOption,
    check_outputs,
    print_json,
    print_table,
    save,
    track,
)
from pillar_cli.reporting.evaluation import evaluate_models
from pillar_cli.reporting.figures import accuracy_vs_k
from pillar_cli.reporting.tables import mean_and_std, rows_to_csv, rows_to_markdown


@cli_errors
def evaluate(
    ctx: typer.Context,
    models: list[Path] = typer.Argument(
        ..., help="Model artifact(s) from train-private; several = shards, merged."
    ),
    embeddings: str = typer.Option(
        ..., "--embeddings", "-e", help="Embeddings FILE:SPLIT (default split: test)."
    ),
    out: Path | None = typer.Option(None, "-o", "--out", help="Evaluation artifact to write."),
    plot: Path | None = typer.Option(None, help="PNG: accuracy vs k, one line per (method, ε)."),
    csv: Path | None = typer.Option(None, "--csv", help="CSV table, one row per (method, k, ε)."),
    markdown: Path | None = typer.Option(None, "--markdown", help="Markdown report."),
    allow_overlap: bool = typer.Option(
        False,
        "--allow-overlap",
        help="Evaluate on a split that shares rows with "
        "what the model was trained or selected on (recorded, and printed in every table).",
    ),
    track_to: str = TrackOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Metrics of the model selected on val per (method, k, ε) on a labelled split, mean ± sample std over
    seeds.

    Accuracy, balanced accuracy, macro-F1, per-class accuracy, confusion matrix, and ROC-AUC for binary tasks.
    Several model files (the shards of one sweep) are merged before selection.

    Example: pillar evaluate model.h5 -e emb.h5:test -o eval.h5 --plot accuracy.png --csv results.csv
    """
    path, _ = artifacts.parse_ref(embeddings)
    check_outputs([out, plot, csv, markdown], [*map(str, models), path], force=force)
    model_artifacts = [artifacts.read(model, "model") for model in models]
    split = artifacts.read_split(embeddings, default_split="test", on_disk=True)
    result = evaluate_models(model_artifacts, split, allow_overlap)
    with replacing_together([csv, markdown, plot], force) as (csv_tmp, markdown_tmp, plot_tmp):
        _write_outputs(result, csv_tmp, markdown_tmp, plot_tmp)
        if out is not None:
            save(ctx, out, result.artifact(), [*(m.ref() for m in model_artifacts), split.ref])
    _report(result, as_json)
    track(track_to, "evaluate", out or Path(embeddings), result)


def _write_outputs(result: Evaluation, csv: Path | None, markdown: Path | None, plot: Path | None) -> None:
    if csv is not None:
        csv.write_text(rows_to_csv(result.rows))
    if markdown is not None:
        markdown.write_text(rows_to_markdown(result.rows, result.title, result.notes))
    if plot is not None:
        accuracy_vs_k(result.rows, plot, result.title, result.feature_dim)


def _report(result: Evaluation, as_json: bool) -> None:
    if as_json:
        return print_json(
            {"rows": result.rows, "split": result.split, "title": result.title, "notes": result.notes}
        )
    table = [dict(r, accuracy=mean_and_std(r, "accuracy")) for r in result.rows]
    columns = [
        "method",
        "k",
        "epsilon",
        "accuracy",
        "balanced_accuracy_mean",
        "macro_f1_mean",
        "seeds",
        "epsilon_spent",
    ]
    if any(r["roc_auc_mean"] is not None for r in result.rows):
        columns.insert(6, "roc_auc_mean")
    print_table(
        result.title,
        table,
        columns,
        dict.fromkeys(("balanced_accuracy_mean", "macro_f1_mean", "roc_auc_mean"), ".4f")
        | {"epsilon_spent": ".4g"},
    )
