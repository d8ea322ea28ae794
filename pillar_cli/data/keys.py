"""Each row's key, and the keyed draws that decide its split and whether --fraction or --limit keep it: a
function of the row itself and the public seed alone.

A source names its rows where it can (an image file's path under the source's root, a WebDataset sample's key,
a column of ids); other rows are named by the sha256 of their input bytes. A draw is blake2b of the key, keyed
by the seed and what the draw decides, read as a number in [0, 1). Where the source names each row's person,
the person's id is the key and all their rows share its draw. So deleting one record (or one person) from a
source and embedding again moves no other row between splits: the public rows, and everything fitted on them,
stay the same.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from pillar_cli.randomness import keyed_draws

__all__ = ["SPLIT", "SUBSAMPLE", "content_keys", "generated_keys", "keyed_draws", "named_keys"]

SPLIT, SUBSAMPLE = "split", "subsample"  # what a draw decides: each has draws of its own
_BLOCK_BYTES = 32 * 2**20  # rows of array data hashed per read


def named_keys(names: Sequence[str]) -> list[bytes]:
    """Keys of rows the source names (file paths under its root, sample keys, ids), as bytes."""
    return [str(name).encode() for name in names]


def generated_keys(n: int) -> np.ndarray:
    """Keys of rows a generator draws from its seed: their place in the draw (many may be equal in
    content)."""
    return np.asarray([f"row {i}" for i in range(n)], dtype=object)


def content_keys(inputs: Sequence) -> list[bytes]:
    """Keys of rows the source does not name: the sha256 of each row's input bytes, read in blocks (an h5py
    dataset is read once, a block at a time; encoded rows are hashed as they are stored, not decoded)."""
    if hasattr(inputs, "encoded"):
        return [hashlib.sha256(inputs.encoded(i)).digest() for i in range(len(inputs))]
    row_bytes = max(int(np.prod(inputs.shape[1:], dtype=np.int64)) * np.dtype(inputs.dtype).itemsize, 1)
    block = max(_BLOCK_BYTES // row_bytes, 1)
    keys = []
    for start in range(0, len(inputs), block):
        rows = np.ascontiguousarray(inputs[start : start + block])
        keys += [hashlib.sha256(row.tobytes()).digest() for row in rows]
    return keys
