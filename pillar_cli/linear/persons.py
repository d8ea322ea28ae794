"""The person as the privacy unit of DP-SGD: a person's rows are sampled together, and the sum of their rows'
clipped gradients is clipped again to C, so that adding or removing one person — all their rows — moves a
step's gradient sum by at most C, whatever their number of rows.

Why a sum clipped again rather than a cap on rows per person: it keeps every row (a cap drops rows of the
persons with most, and needs a public cap), a person with one row is treated exactly as row-level DP-SGD
treats a row, and the bound is C per person by construction, which the accountant then reads with the persons'
sampling rate.

Rows are laid out person by person (`PersonLayout.order`); a Poisson batch draws persons, and `expand` turns
the drawn persons into their rows, each row's person among them, and the pairs of rows of one person. For a
linear softmax head a person's gradient is Σ_i r_i ⊗ x̃_i (r_i the row's clipped residual, x̃_i = [x_i, 1]),
whose squared norm Σ_i ‖r_i‖²‖x̃_i‖² + 2 Σ_{i<j} (r_i·r_j)(x̃_i·x̃_j) needs only those pairs: no per-person
gradient is formed, and the features' products x̃_i·x̃_j, fixed while training, are computed once (`attach`),
so a step adds only the residuals' products over the pairs it drew.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pillar_cli.lazy import torch
from pillar_cli.privacy.unit import Units

ROWS_A_BLOCK = 16_384  # rows whose products are formed at once (a copy of that many feature rows)


@dataclass(frozen=True)
class PersonBatch:
    """The rows of a batch of persons: `rows` (B,) row positions in the person-ordered layout, `person` (B,)
    the position of each row's person in the batch, `first`/`second` the batch positions of the pairs i < j of
    rows of one person, `products` (pairs,) their features' x̃_i·x̃_j."""

    rows: torch.Tensor
    person: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    products: torch.Tensor
    persons: int

    @classmethod
    def joined(cls, batches: list[PersonBatch]) -> PersonBatch:
        """Batches side by side (streams stepped together): positions and persons offset, so no two streams'
        persons meet."""
        if len(batches) == 1:
            return batches[0]
        row_offsets = np.cumsum([0] + [len(b.rows) for b in batches[:-1]]).tolist()
        person_offsets = np.cumsum([0] + [b.persons for b in batches[:-1]]).tolist()
        return cls(
            torch.cat([b.rows for b in batches]),
            torch.cat([b.person + offset for b, offset in zip(batches, person_offsets)]),
            torch.cat([b.first + offset for b, offset in zip(batches, row_offsets)]),
            torch.cat([b.second + offset for b, offset in zip(batches, row_offsets)]),
            torch.cat([b.products for b in batches]),
            sum(b.persons for b in batches),
        )


class PersonLayout:
    """The training rows grouped by person: `order` puts each person's rows next to each other; person p's
    rows are then positions starts[p] .. starts[p] + counts[p] − 1, and its pairs of rows (i < j, in
    `np.triu_indices` order) are entries pair_starts[p] .. of the products `attach` computes."""

    def __init__(self, person_of_row: np.ndarray):
        self.order = np.argsort(person_of_row, kind="stable")
        _, self.starts, self.counts = np.unique(
            person_of_row[self.order], return_index=True, return_counts=True
        )
        pairs = self.counts * (self.counts - 1) // 2
        self.pair_starts = np.concatenate([[0], np.cumsum(pairs)[:-1]]).astype(np.int64)
        self._pairs = {int(c): np.triu_indices(int(c), 1) for c in np.unique(self.counts) if c > 1}
        self.products: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.counts)

    def attach(self, x: torch.Tensor) -> None:
        """Compute x̃_i·x̃_j = x_i·x_j + 1 for every pair of rows of one person, from the person-ordered rows
        `x`."""
        total = (
            int(self.pair_starts[-1] + self.counts[-1] * (self.counts[-1] - 1) // 2)
            if len(self.counts)
            else 0
        )
        self.products = torch.zeros(total, device=x.device)
        for count, (a, b) in self._pairs.items():
            upper = torch.from_numpy(a).to(x.device), torch.from_numpy(b).to(x.device)
            same = np.flatnonzero(self.counts == count)
            for persons in np.array_split(
                same, max(1, len(same) * count // ROWS_A_BLOCK)
            ):  # a block of rows at once
                blocks = x[torch.from_numpy(self.starts[persons][:, None] + np.arange(count)).to(x.device)]
                grams = torch.bmm(blocks, blocks.transpose(1, 2))[:, upper[0], upper[1]] + 1.0  # (P, pairs)
                slots = torch.from_numpy(self.pair_starts[persons][:, None] + np.arange(len(a))).to(x.device)
                self.products[slots.reshape(-1)] = grams.reshape(-1)

    def drawn_rows(self, persons: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows, person, offsets) of the drawn persons (indices into this layout's persons): their rows'
        positions in the layout, each row's person among the drawn, and where each drawn person's rows
        start."""
        counts = self.counts[persons]
        person = np.repeat(np.arange(len(persons)), counts)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        return self.starts[persons][person] + np.arange(len(person)) - offsets[person], person, offsets

    def expand(self, persons: np.ndarray, device: torch.device) -> PersonBatch:
        """The rows of the drawn persons (indices into this layout's persons) and their pairs (after
        `attach`)."""
        counts = self.counts[persons]
        rows, person, offsets = self.drawn_rows(persons)
        first, second, slots = [np.empty(0, np.int64)], [np.empty(0, np.int64)], [np.empty(0, np.int64)]
        for count, (a, b) in self._pairs.items():
            drawn = counts == count
            if drawn.any():
                first.append((offsets[drawn][:, None] + a).ravel())
                second.append((offsets[drawn][:, None] + b).ravel())
                slots.append((self.pair_starts[persons[drawn]][:, None] + np.arange(len(a))).ravel())

        def tensor(values: list[np.ndarray] | np.ndarray) -> torch.Tensor:
            joined = np.concatenate(values) if isinstance(values, list) else values
            return torch.from_numpy(np.ascontiguousarray(joined, dtype=np.int64)).to(device)

        return PersonBatch(
            tensor(rows),
            tensor(person),
            tensor(first),
            tensor(second),
            self.products[tensor(slots)],
            len(persons),
        )


def person_ordered(
    features: np.ndarray, labels: np.ndarray, units: Units | None
) -> tuple[torch.Tensor, torch.Tensor, PersonLayout | None]:
    """Rows (float32) and labels (int64) as tensors for a training loop of its own (AdaDPS, GEP): laid out
    person by person, with the layout that draws them, where the units are persons; as given otherwise (and
    where left out)."""
    layout = PersonLayout(units.ids) if units and units.grouped else None
    order = slice(None) if layout is None else layout.order
    return (
        torch.as_tensor(features[order], dtype=torch.float32),
        torch.as_tensor(labels[order], dtype=torch.int64),
        layout,
    )


def clip_persons(residuals: torch.Tensor, row_norms: torch.Tensor, batch: PersonBatch, clip: float) -> None:
    """Scale the (row-clipped) residuals (C, G, B) in place so that every person's gradient Σ_i r_i ⊗ x̃_i has
    norm at most `clip` for each of the G heads; `row_norms` (B,) are the batch's ‖x̃_i‖²."""
    by_row = residuals.permute(2, 1, 0).contiguous()  # (B, G, C): a pair's residuals are two contiguous rows
    squared = torch.zeros(batch.persons, by_row.shape[1], device=residuals.device)
    squared.index_add_(0, batch.person, by_row.square().sum(2).mul_(row_norms[:, None]))
    if len(batch.first):
        cross = (by_row[batch.first] * by_row[batch.second]).sum(2)  # (pairs, G): r_i·r_j
        squared.index_add_(0, batch.person[batch.first], cross.mul_(batch.products[:, None]).mul_(2.0))
    factor = squared.div_(clip * clip).clamp_min_(1.0).rsqrt_()  # (persons, G)
    residuals.mul_(factor[batch.person].T)
