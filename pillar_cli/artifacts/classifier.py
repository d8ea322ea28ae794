"""The classifier artifact: ONE released head, what its rows are made of, and its privacy statement; nothing
else.

A model artifact is a working file (every head of a grid, val accuracies, private row ids and counts). A
classifier holds only what applying the head needs and what its guarantee is:

Arrays: `mean`, `scale` (the public scaler), `weights` and `bias` of the head; `basis` (D, k) for a head that
reads its k projected rows scaled to unit norm (a linear head's weights are stored mapped back to the D
standardised features, as `evaluate` applies them; a unit-norm head at k = full has no basis). A fine-tuned
network instead holds `network/<weight name>` (one array per weight; `head["network"]` rebuilds it) and reads
the pixel rows (flattened HWC / 255; its scaler is the identity). Attributes: `class_names`; `head` (method,
family, k, `row_l2_normalised`: rows are L2-normalised before the scaler, `unit_rows`: projected rows are
scaled to unit norm); `features` (how the rows were embedded: artifacts.FeatureRecipe); `privacy` (the
statement: ε, δ, accountant, neighbouring relation, the DP event tree, what ε covers and does not).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from pillar_cli.artifacts.artifact import Artifact
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.statement import Statement
from pillar_cli.artifacts.stored import stored, stored_fields_of, to_attrs

NETWORK_PREFIX = "network/"


@dataclass(frozen=True)
class Classifier:
    """A released classifier as stored: arrays, and its attributes (`stored` fields, the schema's table)."""

    mean: np.ndarray  # (D,)
    scale: np.ndarray  # (D,)
    weights: np.ndarray | None  # (D, C), or (k, C) with a basis; None for a network
    bias: np.ndarray | None  # (C,)
    # (D, k) for a head on unit-norm projected rows; None: the head reads all D features
    basis: np.ndarray | None
    class_names: list[str] = stored(list, decode=lambda names: [str(name) for name in names])
    # method, k, row_l2_normalised, unit_rows; a network's: `network` (its NetworkSpec)
    head: dict = stored(dict)
    # how the rows it reads were embedded
    features: FeatureRecipe = stored(dict, encode=FeatureRecipe.to_attrs, decode=FeatureRecipe.from_attrs)
    privacy: Statement = stored(dict, encode=Statement.to_attrs, decode=Statement.from_attrs)
    network: dict[str, np.ndarray] | None = None  # a fine-tuned network's weights by name
    content_hash: str | None = None  # of the artifact it was read from (None before it is written)

    @property
    def is_network(self) -> bool:
        return self.network is not None

    @property
    def head_arrays(self) -> dict[str, np.ndarray]:
        """The head as a release stores it: a network's weights by name, else weights, bias (and basis) in
        float32."""
        return self.network if self.network is not None else self._linear_head()

    @property
    def linear(self) -> tuple[np.ndarray, np.ndarray]:
        """(weights, bias) of its linear head (a released network has none)."""
        if self.weights is None or self.bias is None:  # a classifier holds a network or a linear head
            raise ValueError("a classifier without a network holds a linear head's weights and bias")
        return self.weights, self.bias

    def _linear_head(self) -> dict[str, np.ndarray]:
        return linear_head(*self.linear, self.basis)

    def to_artifact(self) -> Artifact:
        arrays = {"mean": self.mean.astype(np.float32), "scale": self.scale.astype(np.float32)}
        if self.network is not None:
            arrays |= {NETWORK_PREFIX + name: array for name, array in self.network.items()}
        else:
            arrays |= self._linear_head()
        return Artifact("classifier", arrays, to_attrs(self))


def linear_head(weights: np.ndarray, bias: np.ndarray, basis: np.ndarray | None) -> dict[str, np.ndarray]:
    """A linear head's arrays as a release stores them (float32)."""
    arrays = {"weights": weights.astype(np.float32), "bias": bias.astype(np.float32)}
    return arrays if basis is None else arrays | {"basis": basis.astype(np.float32)}


def head_digest(arrays: dict[str, np.ndarray]) -> str:
    """sha256 over a head's arrays (name, dtype, shape, bytes; by name): what ties an evaluation's row to the
    release of one of the runs it evaluated. A DP output's digest discloses nothing the head does not."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{array.dtype}|{list(array.shape)}\n".encode() + array.tobytes())
    return digest.hexdigest()


def classifier_of(artifact: Artifact) -> Classifier:
    """The classifier a classifier artifact holds (read and checked)."""
    arrays, attrs = artifact.arrays, artifact.attrs
    network = {
        name[len(NETWORK_PREFIX) :]: array
        for name, array in arrays.items()
        if name.startswith(NETWORK_PREFIX)
    }
    return Classifier(
        arrays["mean"],
        arrays["scale"],
        arrays.get("weights"),
        arrays.get("bias"),
        arrays.get("basis"),
        **stored_fields_of(Classifier, attrs),
        network=network or None,
        content_hash=None if artifact.provenance is None else artifact.provenance.content_hash,
    )
