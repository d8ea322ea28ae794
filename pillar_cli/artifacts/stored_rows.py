"""The rows of an artifact's dataset left on disk: a stage that reads them a block at a time (standardising
and projecting them, checking that they are finite) never holds all n × d of them. Each read opens the file
afresh and refuses one that changed after it was read and hashed, and a damaged block is one line naming the
rows it holds. Anything that needs every row at once (`np.asarray(rows)`) still gets them, read whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Union

import h5py
import numpy as np

from pillar_cli.artifacts.crash_guard import identity
from pillar_cli.artifacts.layout import CORRUPT_HINT, row_blocks
from pillar_cli.errors import ArtifactError, first_line


class StoredRows:
    """2-d datasets of one artifact file, one after another (a split, or the private and val splits trained on
    together), as rows read on demand: `len`, `shape`, `dtype`, slices and blocks."""

    def __init__(
        self,
        path: str | Path,
        segments: tuple[tuple[str, int], ...],
        width: tuple[int, ...],
        dtype: np.dtype,
        file_identity: tuple[int, ...] | None = None,
    ):
        self.path, self.segments, self.dtype = str(path), tuple(segments), np.dtype(dtype)
        self.shape = (sum(rows for _, rows in self.segments), *width)
        self.identity = file_identity or identity(path)  # the file as it was when read and hashed

    @classmethod
    def of(cls, path: str | Path, node: h5py.Dataset, file_identity: tuple[int, ...]) -> StoredRows:
        """A dataset of the file `path` as it was when read and hashed (`file_identity`,
        crash_guard.identity)."""
        return cls(path, ((node.name.lstrip("/"), node.shape[0]),), node.shape[1:], node.dtype, file_identity)

    ndim = property(lambda self: len(self.shape))

    def joined(self, other: StoredRows) -> StoredRows | None:
        """These rows followed by `other`'s, still on disk; None where they are not rows of one file alike."""
        if (other.path, other.identity, other.shape[1:], other.dtype) != (
            self.path,
            self.identity,
            self.shape[1:],
            self.dtype,
        ):
            return None
        return StoredRows(
            self.path, self.segments + other.segments, self.shape[1:], self.dtype, self.identity
        )

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, slice) and key.step in (None, 1):
            start, stop, _ = key.indices(len(self))
            return self._read(np.arange(start, max(start, stop)))
        if isinstance(key, (list, np.ndarray)) and np.asarray(key).dtype.kind in "iu":
            return self._take(np.asarray(key, dtype=np.int64))
        return np.asarray(self)[key]

    def __iter__(self) -> Iterator[np.ndarray]:
        for _, block in row_blocks(self):
            yield from block

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        rows = self._read(np.arange(len(self)))
        return rows if dtype is None else rows.astype(dtype, copy=False)

    def _take(self, index: np.ndarray) -> np.ndarray:
        """The rows at integer positions (any order, repeats and negative positions allowed), only those read:
        a sample of a split never reads all of it."""
        index = np.where(index < 0, index + len(self), index)
        if index.size and (index.min() < 0 or index.max() >= len(self)):
            raise IndexError(f"row index out of range for {len(self)} rows")
        wanted, back = np.unique(index, return_inverse=True)
        return self._read(wanted)[back.reshape(index.shape)]

    def _read(self, rows: np.ndarray) -> np.ndarray:
        """Rows at increasing positions: a run of consecutive rows as one slice of each dataset, others
        picked."""
        if identity(self.path) != self.identity:
            raise ArtifactError(
                f"{self.path} changed while it was read", hint="read it again once nothing writes it"
            )
        parts, offset = [], 0
        try:
            with h5py.File(self.path, "r") as h5:
                for name, count in self.segments:  # the rows each dataset holds
                    local = rows[(rows >= offset) & (rows < offset + count)] - offset
                    if len(local) and local[-1] - local[0] + 1 == len(local):
                        parts.append(h5[name][local[0] : local[-1] + 1])
                    elif len(local):
                        parts.append(h5[name][local])
                    offset += count
        except (OSError, KeyError, ValueError) as err:
            first, last = (int(rows[0]), int(rows[-1])) if len(rows) else (0, -1)
            raise ArtifactError(
                f"{self.path}: cannot read rows {first}–{last} of "
                f"{' + '.join(f'/{name}' for name, _ in self.segments)} ({first_line(err)})",
                hint=CORRUPT_HINT,
            ) from err
        if not parts:
            return np.empty((0, *self.shape[1:]), dtype=self.dtype)
        return np.ascontiguousarray(parts[0] if len(parts) == 1 else np.concatenate(parts))


Rows = Union[np.ndarray, "StoredRows"]  # rows in memory, or left in their file and read a block at a time


def all_finite(rows: np.ndarray | StoredRows) -> bool:
    """Whether every value is finite, summed a block at a time in float64 (NaN and Inf carry through a sum):
    no n × d mask, and rows on disk stay there."""
    return all(np.isfinite(np.sum(block, dtype=np.float64)) for _, block in row_blocks(rows))


def data_digest(rows: np.ndarray | StoredRows, *columns: np.ndarray) -> str:
    """A sha256 naming rows (a block at a time) and per-row columns (labels, persons): what names a dataset's
    content where no file does."""
    digest = hashlib.sha256()
    for _, block in row_blocks(rows):
        digest.update(np.ascontiguousarray(block, dtype=np.float32).data)
    for column in columns:
        digest.update(np.ascontiguousarray(column, dtype=np.int64).data)
    return digest.hexdigest()


def non_finite_rows(rows: np.ndarray | StoredRows) -> int:
    """How many rows hold a NaN or Inf (counted a block at a time)."""
    return sum(int((~np.isfinite(block)).any(axis=1).sum()) for _, block in row_blocks(rows))
