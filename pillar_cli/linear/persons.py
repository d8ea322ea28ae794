"""The person as the privacy unit of DP-SGD: a person's rows are sampled together, and the sum of their rows'
clipped gradients is clipped again to C, so that adding or removing one person — all their rows — moves a step's
gradient sum by at most C, whatever their number of rows.

Why a sum clipped again rather than a cap on rows per person: it keeps every row (a cap drops rows of the persons
with most, and needs a public cap), a person with one row is treated exactly as row-level DP-SGD treats a row, and
the bound is C per person by construction, which the accountant then reads with the persons' sampling rate.

Rows are laid out person by person (`PersonLayout.order`); a Poisson batch draws persons, and `expand` turns the
drawn persons into their rows, each row's person among them, and the pairs of rows of one person. For a linear
softmax head a person's gradient is Σ_i r_i ⊗ x̃_i (r_i the row's clipped residual, x̃_i = [x_i, 1]), whose squared
norm Σ_i ‖r_i‖²‖x̃_i‖² + 2 Σ_{i<j} (r_i·r_j)(x̃_i·x̃_j) needs only those pairs: no per-person gradient is formed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pillar_cli.lazy import torch


@dataclass(frozen=True)
class PersonBatch:
    """The rows of a batch of persons: `rows` (B,) row positions in the person-ordered layout, `person` (B,) the
    position of each row's person in the batch, `first`/`second` the pairs i < j of rows of one person."""

    rows: torch.Tensor
    person: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    persons: int

    @classmethod
    def joined(cls, batches: list[PersonBatch]) -> PersonBatch:
        """Batches side by side (streams stepped together): positions and persons offset, so no two streams' persons
        meet."""
        if len(batches) == 1:
            return batches[0]
        row_offsets = np.cumsum([0] + [len(b.rows) for b in batches[:-1]]).tolist()
        person_offsets = np.cumsum([0] + [b.persons for b in batches[:-1]]).tolist()
        return cls(torch.cat([b.rows for b in batches]),
                   torch.cat([b.person + offset for b, offset in zip(batches, person_offsets)]),
                   torch.cat([b.first + offset for b, offset in zip(batches, row_offsets)]),
                   torch.cat([b.second + offset for b, offset in zip(batches, row_offsets)]),
                   sum(b.persons for b in batches))


class PersonLayout:
    """The training rows grouped by person: `order` puts each person's rows next to each other; person p's rows are
    then positions starts[p] .. starts[p] + counts[p] - 1."""

    def __init__(self, person_of_row: np.ndarray):
        self.order = np.argsort(person_of_row, kind="stable")
        _, self.starts, self.counts = np.unique(person_of_row[self.order], return_index=True, return_counts=True)
        self._pairs = {int(c): np.triu_indices(int(c), 1) for c in np.unique(self.counts) if c > 1}

    def __len__(self) -> int:
        return len(self.counts)

    def expand(self, persons: np.ndarray, device: torch.device) -> PersonBatch:
        """The rows of the drawn persons (indices into this layout's persons)."""
        counts = self.counts[persons]
        person = np.repeat(np.arange(len(persons)), counts)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        rows = self.starts[persons][person] + np.arange(len(person)) - offsets[person]
        first, second = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
        for count, (a, b) in self._pairs.items():
            at = offsets[counts == count]
            if len(at):
                first.append((at[:, None] + a).ravel())
                second.append((at[:, None] + b).ravel())

        def tensor(values: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(np.ascontiguousarray(values, dtype=np.int64)).to(device)

        return PersonBatch(tensor(rows), tensor(person), tensor(np.concatenate(first)), tensor(np.concatenate(second)),
                           len(persons))


def clip_persons(residuals: torch.Tensor, rows: torch.Tensor, batch: PersonBatch, clip: float) -> None:
    """Scale the (row-clipped) residuals (C, G, B) in place so that every person's gradient Σ_i r_i ⊗ x̃_i has norm at
    most `clip` for each of the G heads; `rows` (B, d + 1) are the batch's x̃ (features and a column of ones)."""
    classes, heads, _ = residuals.shape
    squared = torch.zeros(heads, batch.persons, device=residuals.device)
    own = torch.linalg.vecdot(residuals, residuals, dim=0) * torch.linalg.vecdot(rows, rows, dim=1)  # (G, B)
    squared.index_add_(1, batch.person, own)
    if len(batch.first):
        cross = torch.linalg.vecdot(residuals[:, :, batch.first], residuals[:, :, batch.second], dim=0) \
            * torch.linalg.vecdot(rows[batch.first], rows[batch.second], dim=1)
        squared.index_add_(1, batch.person[batch.first], cross.mul_(2.0))
    factor = squared.div_(clip * clip).clamp_min_(1.0).rsqrt_()  # (G, persons)
    residuals.mul_(factor[:, batch.person])
