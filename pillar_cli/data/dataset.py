"""The in-memory form of a source's raw data."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Dataset:
    """Raw data of one source. `inputs` are uint8 images (N, H, W, C) or float32 vectors (N, D)."""

    name: str
    inputs: np.ndarray
    labels: np.ndarray
    class_names: list[str]
    test_inputs: np.ndarray | None = None
    test_labels: np.ndarray | None = None

    @property
    def modality(self) -> str:
        return "image" if self.inputs.ndim == 4 else "vector"

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for part in (self.inputs, self.labels, self.test_inputs, self.test_labels):
            if part is not None:
                digest.update(np.ascontiguousarray(part).tobytes())
        return digest.hexdigest()

    def rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs and labels for source row ids (train positions, then test positions offset by n_train)."""
        n_train = len(self.inputs)
        if self.test_inputs is None or (ids < n_train).all():
            return self.inputs[ids], self.labels[ids]
        if (ids >= n_train).all():
            return self.test_inputs[ids - n_train], self.test_labels[ids - n_train]
        raise ValueError("a split mixes train and test rows")
