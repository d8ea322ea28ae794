"""pillar evaluate: test metrics of the selected models, table / JSON / accuracy-vs-k plot."""

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
from pillar_cli.evaluation import accuracy_vs_k_plot, selected_accuracies


@cli_errors
def evaluate(
    ctx: typer.Context,
    models: list[Path] = typer.Argument(..., help="Model artifact(s) from train-private; several = shards, merged."),
    embeddings: str = typer.Option(..., "--embeddings", "-e", help="Embeddings FILE:SPLIT (default split: test)."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Evaluation artifact to write."),
    plot: Optional[Path] = typer.Option(None, help="PNG: accuracy vs k, one line per ε."),
    as_json: bool = JsonOption,
) -> None:
    """Accuracy of the model selected on val per (method, k, ε) on a labelled split, mean ± std over seeds.

    Several model files (the shards of one sweep) are merged before selection.

    Example: pillar evaluate model.h5 -e emb.h5:test -o eval.h5 --plot accuracy.png
    """
    path, _ = artifacts.parse_ref(embeddings)
    for output in (out, plot):
        if output is not None:
            check_output(output, [*map(str, models), path])
    model_artifacts = [artifacts.read(model, "model") for model in models]
    model_artifact = model_artifacts[0]
    split = artifacts.read_split(embeddings, default_split="test")
    if split.labels is None:
        raise DataError(f"split '{split.name}' of {path} has no labels to evaluate against")
    trained_on = {ref.path for ref in model_artifact.provenance.inputs if ref.kind == "embeddings"}
    rows = selected_accuracies(model_artifacts, split.features, split.labels)
    ledger = model_artifact.attrs["ledger"]
    seeds = sorted({seed for model in model_artifacts for seed in model.array("runs/seed").tolist()})
    title = (f"{split.attrs.get('source')} / {split.attrs.get('backbone')}: {split.name} accuracy; "
             f"n_private={model_artifact.attrs['n_private']}, δ={ledger['delta']:g}, {ledger['accountant']}, "
             f"seeds {','.join(map(str, seeds))}")
    if plot is not None:
        with atomic_file(plot) as tmp:
            accuracy_vs_k_plot(rows, tmp, title, int(model_artifact.array("mean").size))
    if out is not None:
        artifact = Artifact("evaluation", {"accuracy_mean": np.array([r["accuracy_mean"] for r in rows])},
                            {"rows": rows, "split": split.name, "trained_on": sorted(trained_on), "title": title})
        save(ctx, out, artifact, [*(m.ref() for m in model_artifacts), split.ref])
    if as_json:
        return print_json({"rows": rows, "split": split.name, "title": title})
    print_table(title, [dict(r, accuracy=f"{r['accuracy_mean']:.4f} ± {r['accuracy_std']:.4f}") for r in rows],
                ["method", "k", "epsilon", "accuracy", "seeds", "epsilon_spent", "val_accuracy"],
                {"epsilon_spent": ".4g", "val_accuracy": ".3f"})
