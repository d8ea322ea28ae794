"""Networks in a model artifact: a fine-tuned, trained-from-scratch or pre-trained network per run, stored as
one array per weight (`runs/<i>/network/<weight name>`) next to the run table every model has, so that
selection, evaluation, `audit ledger` and reports read it as they read a linear head's run.

Attributes: the caller's `ModelRecord`, whose `network` (architecture, input_shape, num_classes) rebuilds it.
A network reads the pixels themselves: the model's scaler is the identity on the flattened pixels (mean 0,
scale 1).
"""

from __future__ import annotations

import numpy as np

from pillar_cli.artifacts.core import Artifact
from pillar_cli.artifacts.model import RunRecord, model_artifact
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.errors import ArtifactError

PREFIX = "runs/{}/network/"


def network_artifact(
    runs: list[RunRecord], states: list[dict[str, np.ndarray]], feature_dim: int, record: ModelRecord
) -> Artifact:
    """`runs` carry no head (weights None); `states[i]` is run i's network, `record.network` its
    architecture."""
    artifact = model_artifact(runs, {}, np.zeros(feature_dim), np.ones(feature_dim), record)
    for run_id, state in enumerate(states):
        artifact.arrays.update({PREFIX.format(run_id) + name: array for name, array in state.items()})
    return artifact


def is_network(model: Artifact) -> bool:
    return "network" in model.attrs


def stored_state(model: Artifact, run_id: int) -> dict[str, np.ndarray]:
    """Run `run_id`'s network weights by name."""
    prefix = PREFIX.format(run_id)
    state = {name[len(prefix) :]: array for name, array in model.arrays.items() if name.startswith(prefix)}
    if not state:
        raise ArtifactError(
            f"{model.path}: run {run_id} stores no network", hint="recreate it with pillar finetune"
        )
    return state
