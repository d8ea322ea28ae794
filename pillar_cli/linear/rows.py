"""The private training rows as DP-SGD's steps read them (linear/engine.py): on the training device, with each
row's clipping scale precomputed, and — where the person is the unit — laid out person by person
(linear/persons.py)."""

from __future__ import annotations

import numpy as np

from pillar_cli.lazy import torch
from pillar_cli.linear.persons import PersonLayout


class PrivateRows:
    """The private training rows as every step reads them: a batch comes back next to a column of ones (the
    bias input), gathered into a reused buffer rather than from an augmented copy of the whole training set.
    With a `layout` (linear/persons.py) the rows are ordered person by person and a batch draws persons: its
    length is then the number of persons."""

    def __init__(
        self,
        features: np.ndarray | torch.Tensor,
        labels: np.ndarray | torch.Tensor,
        clip: float | None,
        device: torch.device,
        layout: PersonLayout | None = None,
    ):
        if layout is not None:
            features, labels = features[layout.order], labels[layout.order]
        self.x = torch.as_tensor(features, dtype=torch.float32).to(device)  # no copy for float32 on the CPU
        self.y = torch.as_tensor(labels, dtype=torch.int64).to(device)
        self.clip, self.layout = clip, layout
        if layout is not None:
            layout.attach(self.x)
        # (‖x‖² + 1) / C²: row i's gradient norm² over C² is ‖p_i − e_{y_i}‖² times this
        self.clip_scale = (
            None
            if clip is None
            else torch.linalg.vector_norm(self.x, dim=1).square_().add_(1.0).div_(clip * clip)
        )
        self._buffer = torch.ones(0, self.x.shape[1] + 1, device=device)

    def __len__(self) -> int:
        return len(self.y) if self.layout is None else len(self.layout)

    def gather(self, batch: torch.Tensor, size: int) -> torch.Tensor:
        """(size, d + 1): the features of the `size` row indices `batch` and a final column of ones."""
        if size > len(self._buffer):
            self._buffer = torch.ones(
                max(size, 2 * len(self._buffer)), self.x.shape[1] + 1, device=self.x.device
            )
        rows = self._buffer[:size]
        # index_select: ~4x faster than advanced indexing
        torch.index_select(self.x, 0, batch, out=rows[:, :-1])
        return rows
