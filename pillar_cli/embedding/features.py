"""What an embedder is and what it hands back: features ready now (CPU) or still being computed on a GPU."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from pillar_cli.lazy import torch


class PendingFeatures(Protocol):
    def result(self) -> np.ndarray: ...


class Embedder(Protocol):
    feature_dim: int

    def info(self) -> dict[str, Any]: ...

    def __call__(self, batch: np.ndarray | torch.Tensor) -> np.ndarray: ...

    def submit(self, batch: np.ndarray | torch.Tensor) -> PendingFeatures: ...


@dataclass(frozen=True)
class ReadyFeatures:
    """Features computed synchronously."""

    features: np.ndarray

    def result(self) -> np.ndarray:
        return self.features


class InFlightFeatures:
    """Features still being computed on a GPU, copied into pinned host memory when done; `result` waits for
    this batch alone, so the GPU can already run the next one."""

    def __init__(self, features: torch.Tensor):
        self.host = torch.empty(features.shape, dtype=features.dtype, pin_memory=True)
        self.host.copy_(features, non_blocking=True)
        self.done = torch.cuda.Event()
        self.done.record()

    def result(self) -> np.ndarray:
        self.done.synchronize()
        return self.host.numpy()
