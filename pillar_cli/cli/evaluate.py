"""pillar evaluate: metrics of the models selected on val, as a table, JSON, CSV, Markdown and a plot."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact
from pillar_cli.cli.common import (JsonOption, atomic_file, check_output, cli_errors, print_json, print_table,
                                   save)
from pillar_cli.errors import DataError
from pillar_cli.reporting.figures import accuracy_vs_k
from pillar_cli.reporting.metrics import selected_metrics
from pillar_cli.reporting.tables import rows_to_csv, rows_to_markdown


@cli_errors
def evaluate(
    ctx: typer.Context,
    models: list[Path] = typer.Argument(..., help="Model artifact(s) from train-private; several = shards, merged."),
    embeddings: str = typer.Option(..., "--embeddings", "-e", help="Embeddings FILE:SPLIT (default split: test)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Evaluation artifact to write."),
    plot: Optional[Path] = typer.Option(None, help="PNG: accuracy vs k, one line per (method, ε)."),
    csv: Optional[Path] = typer.Option(None, "--csv", help="CSV table, one row per (method, k, ε)."),
    markdown: Optional[Path] = typer.Option(None, "--markdown", help="Markdown report."),
    as_json: bool = JsonOption,
) -> None:
    """Metrics of the model selected on val per (method, k, ε) on a labelled split, mean ± std over seeds.

    Accuracy, balanced accuracy, macro-F1, per-class accuracy, confusion matrix, and ROC-AUC for binary tasks.
    Several model files (the shards of one sweep) are merged before selection.

    Example: pillar evaluate model.h5 -e emb.h5:test -o eval.h5 --plot accuracy.png --csv results.csv
    """
    path, _ = artifacts.parse_ref(embeddings)
    outputs = [o for o in (out, plot, csv, markdown) if o is not None]
    for output in outputs:
        check_output(output, [*map(str, models), path])
    model_artifacts = [artifacts.read(model, "model") for model in models]
    split = artifacts.read_split(embeddings, default_split="test")
    if split.labels is None:
        raise DataError(f"split '{split.name}' of {path} has no labels to evaluate against")
    rows = selected_metrics(model_artifacts, split.features, split.labels)
    title, notes = _describe(model_artifacts, split)
    for target, render in ((csv, lambda: rows_to_csv(rows)), (markdown, lambda: rows_to_markdown(rows, title, notes))):
        if target is not None:
            with atomic_file(target) as tmp:
                tmp.write_text(render())
    if plot is not None:
        with atomic_file(plot) as tmp:
            accuracy_vs_k(rows, tmp, title, int(model_artifacts[0].array("mean").size))
    if out is not None:
        artifact = Artifact("evaluation", {"accuracy_mean": np.array([r["accuracy_mean"] for r in rows])},
                            {"rows": rows, "split": split.name, "title": title, "notes": notes,
                             "dataset": split.attrs.get("source"), "n_private": model_artifacts[0].attrs["n_private"],
                             "private_fraction": model_artifacts[0].attrs.get("private_fraction", 1.0),
                             "ledger": model_artifacts[0].attrs["ledger"]})
        save(ctx, out, artifact, [*(m.ref() for m in model_artifacts), split.ref])
    if as_json:
        return print_json({"rows": rows, "split": split.name, "title": title, "notes": notes})
    table = [dict(r, accuracy=f"{r['accuracy_mean']:.4f} ± {r['accuracy_std']:.4f}") for r in rows]
    columns = ["method", "k", "epsilon", "accuracy", "balanced_accuracy_mean", "macro_f1_mean", "seeds", "epsilon_spent"]
    if any(r["roc_auc_mean"] is not None for r in rows):
        columns.insert(6, "roc_auc_mean")
    print_table(title, table, columns, {c: ".4f" for c in ("balanced_accuracy_mean", "macro_f1_mean", "roc_auc_mean")}
                | {"epsilon_spent": ".4g"})


def _describe(models: list[Artifact], split: artifacts.Split) -> tuple[str, list[str]]:
    """The title and the qualifiers every figure and report states: n, δ, accountant, seeds, selection."""
    ledger = models[0].attrs["ledger"]
    seeds = sorted({seed for model in models for seed in model.array("runs/seed").tolist()})
    title = (f"{split.attrs.get('source')} / {split.attrs.get('backbone')}: {split.name} accuracy; "
             f"n_private={models[0].attrs['n_private']}, δ={ledger['delta']:g}, {ledger['accountant']}, "
             f"seeds {','.join(map(str, seeds))}")
    notes = [f"private rows n = {models[0].attrs['n_private']}, δ = {ledger['delta']:g}, accountant "
             f"{ledger['accountant']}, clip {ledger['clip']:g}", f"seeds {', '.join(map(str, seeds))}",
             models[0].attrs["selection_note"], f"evaluated on split '{split.name}' ({len(split.features)} rows)"]
    return title, notes
