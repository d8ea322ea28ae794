"""The model artifact: every run of a sweep (its head, its DP event, its val accuracy) and the bases that map
projected heads back to the standardised feature space; read back run by run for selection and evaluation.

Arrays: `mean`, `scale` (the public scaler), `runs/<column>` (the run table, schema.RUN_COLUMNS, one entry per
run; `runs/event` holds each run's DP event tree as JSON, from which every ε is recomputed),
`runs/<i>/weights` and `runs/<i>/bias`, `bases/<method>/<k>`. Attributes: the caller's `ModelRecord`
(artifacts/model_record.py).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np

from pillar_cli.artifacts.core import Artifact
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.schema import RUN_COLUMNS
from pillar_cli.errors import ArtifactError, param
from pillar_cli.privacy.events import Event, headline

UNCOUNTED = RUN_COLUMNS["steps_run"][1]  # runs/steps_run of a run whose method does not count its steps


@dataclass(frozen=True, kw_only=True)
class RunKey:
    """What identifies a run for selection: its cell (method, k, ε) and its hyper-parameters; k None =
    full."""

    method: str
    k: int | None
    epsilon: float
    lr: float
    steps: int
    batch_size: int
    seed: int
    # closed-form heads' λ as asked for (0: the method's default rule; and for DP-SGD runs)
    ridge: float = 0.0

    @classmethod
    def of(cls, method: str, k: int | None, epsilon: float, config: Any) -> RunKey:
        """The key of a run of a cell trained with `config` (its lr, steps, batch size, seed and λ, as
        linear.engine.RunConfig holds them)."""
        return cls(
            method=method,
            k=k,
            epsilon=epsilon,
            lr=config.lr,
            steps=config.steps,
            batch_size=config.batch_size,
            seed=config.seed,
            ridge=config.ridge or 0.0,
        )

    @property
    def cell(self) -> tuple[str, int | None, float]:
        return self.method, self.k, self.epsilon

    @property
    def hyper_parameters(self) -> tuple[float, int, int, float]:
        return self.lr, self.steps, self.batch_size, self.ridge


class Headline(TypedDict):
    """A run table's columns of a head's own event (NaN unless it is one Poisson-subsampled Gaussian
    segment)."""

    noise_multiplier: float
    sample_rate: float


@dataclass(frozen=True, kw_only=True)
class RunRecord:
    """One run, as trained and as a model artifact stores it: its key, what it spent, how it did on val, its
    head (in its own k-dimensional space; None for a network's run) and, once read back, the file it came
    from."""

    key: RunKey
    event: dict  # the run's DP event tree (privacy/events.py), as `Event.to_dict` wrote it
    epsilon_spent: float
    val_accuracy: float
    # for tables: of a head that is one Poisson-subsampled Gaussian segment
    noise_multiplier: float = math.nan
    sample_rate: float = math.nan
    row_normalised: bool = False  # the head reads its k-dimensional rows scaled to unit norm
    steps_run: int | None = None  # the steps (releases) the method counted as it ran them; None: not counted
    # (k, C), or (D, C) for an unprojected run
    weights: np.ndarray | None = field(default=None, compare=False)
    bias: np.ndarray | None = field(default=None, compare=False)  # (C,)
    model: Artifact | None = field(default=None, compare=False, repr=False)  # the file it was read from
    local_id: int | None = field(default=None, compare=False)  # its index in that file's run table

    @staticmethod
    def headline_of(event: Event) -> Headline:
        """The table columns of a head's own event: its noise multiplier and sample rate (NaN unless it is one
        Poisson-subsampled Gaussian segment)."""
        noise_multiplier, sample_rate = headline(event)
        return {"noise_multiplier": noise_multiplier, "sample_rate": sample_rate}

    @property
    def basis(self) -> np.ndarray | None:
        """The basis its head's k dimensions live in (None: the standardised features themselves)."""
        return None if self.model is None else self.model.arrays.get(f"bases/{self.key.method}/{self.key.k}")

    def logits(self, standardised: np.ndarray) -> np.ndarray:
        """The head on standardised features: a linear head as its full-space weights; a head on unit-norm
        rows through its basis, rows scaled to unit norm."""
        if not self.row_normalised:
            weights, bias = self.full_weights()
            return standardised @ weights + bias
        rows = standardised if self.basis is None else standardised @ self.basis
        rows = rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
        weights, bias = self.head
        return rows @ weights + bias

    @property
    def head(self) -> tuple[np.ndarray, np.ndarray]:
        """(weights, bias) of a linear head, in its own k dimensions (a network's run has none)."""
        if self.weights is None or self.bias is None:
            raise ArtifactError(f"run {self.local_id} of {self.source} is a network's: it has no linear head")
        return self.weights, self.bias

    @property
    def source(self) -> str:
        """The file the run was read from, in words."""
        return "a model not yet written" if self.model is None else str(self.model.path)

    def released_head(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(weights, bias, basis) as a release of this run holds them: a head on unit-norm rows with its
        basis, else mapped back to the standardised features (basis None); linear heads only."""
        return (*self.head, self.basis) if self.row_normalised else (*self.full_weights(), None)

    def full_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """The head mapped back to the standardised feature space: (A_k · w, b); linear heads only."""
        if self.row_normalised:
            raise ArtifactError(
                f"run {self.local_id} of {self.source} reads unit-norm rows: it has no weights "
                "on the standardised features (a closed-form head cannot warm-start DP-SGD)"
            )
        return self._mapped_back

    @functools.cached_property
    def _mapped_back(self) -> tuple[np.ndarray, np.ndarray]:
        """(A_k · w, b), made once a run: evaluation applies it to every block of rows."""
        weights, bias = self.head
        return (weights if self.basis is None else self.basis @ weights), bias


def _run_columns(rows: list[RunRecord], dim: int) -> dict[str, np.ndarray]:
    """The run table, every column of schema.RUN_COLUMNS."""
    keys = [row.key for row in rows]
    return {
        "method": np.array([k.method for k in keys], dtype=str),
        "k": np.array([dim if k.k is None else k.k for k in keys], dtype=np.int64),
        "projected": np.array([k.k is not None for k in keys], dtype=bool),
        "epsilon_target": np.array([k.epsilon for k in keys], dtype=np.float64),
        "epsilon_spent": np.array([r.epsilon_spent for r in rows], dtype=np.float64),
        "event": np.array([json.dumps(r.event) for r in rows], dtype=str),
        "noise_multiplier": np.array([r.noise_multiplier for r in rows], dtype=np.float64),
        "sample_rate": np.array([r.sample_rate for r in rows], dtype=np.float64),
        "steps": np.array([k.steps for k in keys], dtype=np.int64),
        "batch_size": np.array([k.batch_size for k in keys], dtype=np.int64),
        "lr": np.array([k.lr for k in keys], dtype=np.float64),
        "seed": np.array([k.seed for k in keys], dtype=np.int64),
        "val_accuracy": np.array([r.val_accuracy for r in rows], dtype=np.float64),
        "ridge": np.array([k.ridge for k in keys], dtype=np.float64),
        "row_normalised": np.array([r.row_normalised for r in rows], dtype=bool),
        "steps_run": np.array(
            [UNCOUNTED if r.steps_run is None else r.steps_run for r in rows], dtype=np.int64
        ),
    }


def run_rows(model: Artifact) -> list[RunRecord]:
    """The runs of a model artifact, row by row with their heads (columns an older model lacks take their
    schema defaults)."""
    count = len(model.array("runs/k"))
    table = {
        name: model.array(f"runs/{name}") if f"runs/{name}" in model.arrays else np.full(count, default)
        for name, (_, default) in RUN_COLUMNS.items()
    }
    rows = []
    for i in range(count):
        key = RunKey(
            method=str(table["method"][i]),
            k=int(table["k"][i]) if table["projected"][i] else None,
            epsilon=float(table["epsilon_target"][i]),
            lr=float(table["lr"][i]),
            steps=int(table["steps"][i]),
            batch_size=int(table["batch_size"][i]),
            seed=int(table["seed"][i]),
            ridge=float(table["ridge"][i]),
        )
        steps_run = int(table["steps_run"][i])
        rows.append(
            RunRecord(
                key=key,
                event=json.loads(str(table["event"][i])),
                epsilon_spent=float(table["epsilon_spent"][i]),
                val_accuracy=float(table["val_accuracy"][i]),
                noise_multiplier=float(table["noise_multiplier"][i]),
                sample_rate=float(table["sample_rate"][i]),
                row_normalised=bool(table["row_normalised"][i]),
                steps_run=None if steps_run == UNCOUNTED else steps_run,
                weights=model.arrays.get(f"runs/{i}/weights"),
                bias=model.arrays.get(f"runs/{i}/bias"),
                model=model,
                local_id=i,
            )
        )
    return rows


def model_artifact(
    runs: list[RunRecord],
    bases: dict[tuple[str, int], np.ndarray],
    mean: np.ndarray,
    scale: np.ndarray,
    record: ModelRecord,
) -> Artifact:
    arrays: dict[str, np.ndarray] = {"mean": mean.astype(np.float32), "scale": scale.astype(np.float32)}
    arrays |= {f"runs/{name}": column for name, column in _run_columns(runs, len(mean)).items()}
    for run_id, run in enumerate(runs):
        if run.weights is not None:  # a network's run has no linear head (artifacts/network.py)
            weights, bias = run.head
            arrays[f"runs/{run_id}/weights"] = weights.astype(np.float32)
            arrays[f"runs/{run_id}/bias"] = bias.astype(np.float32)
    for (method, k), basis in bases.items():
        arrays[f"bases/{method}/{k}"] = basis.astype(np.float32)
    return Artifact("model", arrays, record.to_attrs())


def stored_runs(models: list[Artifact]) -> list[RunRecord]:
    """All runs of one or more model artifacts (sweep shards), checked to come from one compatible sweep."""
    first = models[0]
    for other in models[1:]:
        if _accounted_as(other) != _accounted_as(first):
            raise ArtifactError(
                f"{other.path} and {first.path} use different privacy settings; they are not shards "
                "of one sweep"
            )
        if not np.array_equal(other.array("mean"), first.array("mean")) or not np.array_equal(
            other.array("scale"), first.array("scale")
        ):
            raise ArtifactError(f"{other.path} and {first.path} were trained on different projections")
    runs = [run for model in models for run in run_rows(model)]
    where: dict[RunKey, str] = {}
    for run in runs:  # a file given twice (or a copy) would count its runs as more seeds
        if run.key in where:
            problem = (
                f"{run.source} is given twice (its run {_describe(run.key)} would count twice)"
                if where[run.key] == run.source
                else f"{run.source} and {where[run.key]} both hold the run {_describe(run.key)}: the "
                "shards of one sweep hold each run once"
            )
            raise ArtifactError(
                problem, hint=f"give each model file once; repetitions need different {param('seed')} values"
            )
        where[run.key] = run.source
    return runs


def _accounted_as(model: Artifact) -> tuple:
    """What runs evaluated together must share: the clip, the accountant and the δ their ε is stated at."""
    guarantee = model.attrs["guarantee"]
    return model.attrs["ledger"], guarantee["accountant"], guarantee["delta_total"]


def _describe(key: RunKey) -> str:
    return (
        f"{key.method} k={'full' if key.k is None else key.k} ε={key.epsilon:g} lr={key.lr:g} "
        f"steps={key.steps} batch={key.batch_size} seed={key.seed}"
    )
