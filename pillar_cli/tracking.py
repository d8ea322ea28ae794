"""Runs logged to an experiment tracker (`--track mlflow` on train-private, evaluate and release), so that ε,
δ, σ, q, the membership risk and the test accuracies sit beside each other without being copied by hand.

What is logged is what a release may hold: a head's configuration (method, k, lr, steps, batch size, the ε
target), its ledger's numbers (ε spent, δ, σ, the sampling rate and steps, all read off the released count
inside ε, never n), the TPR any membership attack reaches at 1 % FPR, an evaluation's test metrics, a
release's signed statement as a JSON artifact. Never a row count, a row id, a val accuracy (computed on
private rows without noise) or an accounted selection's noisy scores.

The store is MLFLOW_TRACKING_URI where it is set, else MLflow's local file store `./mlruns`, which MLflow 3
keeps in maintenance mode behind MLFLOW_ALLOW_FILE_STORE: pillar sets that for its own default only. One
MLflow run per head, cell or release, in the experiment `pillar` (MLFLOW_EXPERIMENT_NAME overrides it).

May import: `errors`, `version`, `artifacts` (the files whose runs it logs), `privacy` (a run's risk, from its
event).
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from pillar_cli.artifacts.core import Artifact
from pillar_cli.artifacts.model import run_rows
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.errors import UsageError, param
from pillar_cli.privacy import event_from_dict
from pillar_cli.privacy.risk import risk_of
from pillar_cli.version import PROGRAM, __version__

TRACKERS = ("none", "mlflow")
EXPERIMENT = PROGRAM  # the experiment every run goes to
DEFAULT_STORE = "file:./mlruns"
RISK_FPR = 0.01  # the false-positive rate the logged membership risk is read at


@dataclass(frozen=True)
class TrackedRun:
    """One run as a tracker shows it: parameters, metrics (finite numbers), tags, JSON documents by name."""

    name: str
    params: dict[str, Any]
    metrics: dict[str, float]
    tags: dict[str, str] = field(default_factory=dict)
    documents: dict[str, dict] = field(default_factory=dict)


def check_tracker(tracker: str, importable: bool = False) -> None:
    """A known tracker; with `importable`, one whose client is installed."""
    if tracker not in TRACKERS:
        raise UsageError(f"unknown {param('track')} '{tracker}' (known: {', '.join(TRACKERS)})")
    if importable and tracker == "mlflow":
        _mlflow()


def log_runs(tracker: str, command: str, output: Path, runs: list[TrackedRun]) -> str | None:
    """Log `runs` of `command` (which wrote `output`) to the tracker; the store's URI (None: not tracked)."""
    check_tracker(tracker)
    if tracker == "none" or not runs:
        return None
    mlflow = _mlflow()
    uri = os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_STORE
    if uri == DEFAULT_STORE:
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    logging.getLogger("mlflow").setLevel(logging.WARNING)  # its notes of each experiment it creates
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT)
    for run in runs:
        tags = {"pillar.command": command, "pillar.output": str(output), "pillar.version": __version__}
        with mlflow.start_run(run_name=run.name, tags=tags | run.tags):
            mlflow.log_params({name: _param_text(value) for name, value in run.params.items()})
            mlflow.log_metrics({name: value for name, value in run.metrics.items() if math.isfinite(value)})
            for name, document in run.documents.items():
                mlflow.log_dict(document, name)
    return uri


def _mlflow():
    try:
        import mlflow
    except ImportError:
        raise UsageError(
            f"{param('track')} mlflow needs MLflow: pip install 'pillar-cli[mlflow]' (or mlflow-skinny)"
        ) from None
    return mlflow


def _param_text(value: Any) -> str:
    """A parameter as MLflow stores it (text): all features as 'full', no ε as 'inf', numbers short."""
    if value is None:
        return "full"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value)


def model_runs(model: Artifact) -> list[TrackedRun]:
    """One run per cell of a model: the cell's configuration and its ledger, the largest over its seeds (val
    accuracies and noisy selection scores stay in the working file)."""
    record, runs = ModelRecord.of(model), run_rows(model)
    tracked = []
    for cell in record.selection:
        chosen = [runs[i] for i in cell.run_ids]
        tracked.append(
            TrackedRun(
                name=f"{cell.method} k={_param_text(cell.k)} ε={_param_text(float(cell.epsilon))}",
                params={
                    "method": cell.method,
                    "k": cell.k,
                    "epsilon_target": float(cell.epsilon),
                    "lr": float(cell.lr),
                    "steps": cell.steps,
                    "batch_size": "all" if cell.batch_size is None else cell.batch_size,
                    "seeds": len(chosen),
                    "selected": cell.selected,
                },
                metrics={
                    "epsilon_spent": max(run.epsilon_spent for run in chosen),
                    "delta": float(record.guarantee.delta),
                    "noise_multiplier": chosen[0].noise_multiplier,
                    "sample_rate": chosen[0].sample_rate,
                    "steps_run": math.nan if chosen[0].steps_run is None else float(chosen[0].steps_run),
                    "tpr_at_1pct_fpr": max(
                        risk_of(event_from_dict(run.event)).tpr_at(RISK_FPR) for run in chosen
                    ),
                },
                tags={"pillar.kind": "model cell"},
            )
        )
    return tracked


def evaluation_runs(rows: list[dict], split: str) -> list[TrackedRun]:
    """One run per evaluated cell: its test metrics (means over seeds) and the ε it spent."""
    metrics = ("accuracy_mean", "balanced_accuracy_mean", "macro_f1_mean", "roc_auc_mean", "epsilon_spent")
    return [
        TrackedRun(
            name=f"{row['method']} k={_param_text(row['k'])} ε={_param_text(row['epsilon'])} on {split}",
            params={
                "method": row["method"],
                "k": row["k"],
                "epsilon_target": row["epsilon"],
                "seeds": row["seeds"],
            },
            metrics={name: float(row[name]) for name in metrics if row.get(name) is not None},
            tags={"pillar.kind": "evaluation", "pillar.split": split},
        )
        for row in rows
    ]


def runs_of(written: Any) -> list[TrackedRun]:
    """The runs of what a command wrote: a model's cells, an evaluation's rows, a release."""
    from pillar_cli.artifacts.classifier import Classifier
    from pillar_cli.artifacts.evaluation import Evaluation

    if isinstance(written, Classifier):
        return [release_run(written)]
    if isinstance(written, Evaluation):
        return evaluation_runs(written.rows, written.split)
    return model_runs(written)


def release_run(classifier: Any) -> TrackedRun:
    """A release: its head, its guarantee and risk, its statement (as signed) as statement.json."""
    statement, head = classifier.privacy, classifier.head
    attrs = statement.to_attrs()
    risk = attrs.get("risk") or {}
    return TrackedRun(
        name=f"release of {head['method']} k={_param_text(head['k'])}",
        params={
            "method": head["method"],
            "k": head["k"],
            "epsilon_target": statement.epsilon_target,
            "accountant": statement.accountant,
            "unit": statement.unit.noun,
        },
        metrics={
            "epsilon": float(statement.epsilon),
            "delta": float(statement.delta),
            **{f"tpr_at_fpr_{fpr}": float(tpr) for fpr, tpr in (risk.get("tpr_at_fpr") or {}).items()},
            **({"advantage": float(risk["advantage"])} if "advantage" in risk else {}),
        },
        tags={"pillar.kind": "release", "pillar.release_hash": classifier.content_hash, "pillar.by": PROGRAM},
        documents={"statement.json": attrs},
    )
