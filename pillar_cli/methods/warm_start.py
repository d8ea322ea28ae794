"""Initialising private heads from a head trained on PUBLIC labelled data (second-phase style).

The warm-start head must have been trained on public data: its own privacy is not part of this run's ledger. A
model whose provenance shows the private or val split of the embeddings being trained on is refused.
"""

from __future__ import annotations

import numpy as np

from pillar_cli.artifacts import Artifact, InputRef
from pillar_cli.artifacts.model import stored_runs
from pillar_cli.artifacts.network import is_network
from pillar_cli.errors import ArtifactError
from pillar_cli.privacy import require_public_start
from pillar_cli.projection import PublicPCA


def warm_start_weights(model: Artifact, pca: PublicPCA, private: InputRef) -> tuple[np.ndarray, np.ndarray]:
    """(W (D, C), b) in the standardised space: the run of `model` with the best val accuracy."""
    for ref in model.written.inputs:
        if ref.content_hash == private.content_hash and ref.split in ("private", "val"):
            require_public_start(
                f"warm-start model {model.path}", f"was trained on the {ref.split} split of {private.path}"
            )
    if is_network(model):
        raise ArtifactError(f"warm-start model {model.path} holds networks, not a linear head on features")
    mean, scale = model.array("mean"), model.array("scale")
    if mean.shape != pca.mean_.shape or not (np.allclose(mean, pca.mean_) and np.allclose(scale, pca.scale_)):
        raise ArtifactError(
            f"warm-start model {model.path} uses another feature standardisation than the projection",
            hint="train the warm-start head on features standardised by the same fit-pca artifact",
        )
    best = max(stored_runs([model]), key=lambda run: run.val_accuracy)
    return best.full_weights()
