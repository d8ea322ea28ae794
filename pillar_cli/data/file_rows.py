"""The feature rows (or images) of an array source left in its file — an HDF5 dataset, or an uncompressed npz
member read in place — read a block at a time where `embed` embeds them, hashes them and draws their splits,
so a source of 1.28 M × 2,048 features is never held whole. Vectors read as float32, as the in-memory reader
makes them."""

from __future__ import annotations

import struct
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h5py
import numpy as np

BLOCK_BYTES = 16 << 20  # rows read at a time where all of them are walked (hashing, fingerprinting)
CONVERT_BYTES = 4 << 20  # bytes of stored rows read at a time while they are converted to float32


class FileRows:
    """Rows of an HDF5 dataset or of an array stored in a file, read on demand: `len`, `shape`, `dtype`,
    slices and sorted index arrays (what data/dataset.py `read_rows` asks), `blocks()` to walk them all."""

    def __init__(self, dataset: h5py.Dataset | StoredArray):
        self.dataset = dataset
        self.shape: tuple[int, ...] = tuple(dataset.shape)
        self.ndim = len(self.shape)
        self.dtype = np.dtype(np.float32) if self.ndim == 2 else np.dtype(dataset.dtype)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: Any) -> np.ndarray:
        if self.dtype == self.dataset.dtype:
            return np.array(self.dataset[key])  # a copy: nothing keeps the file's pages or handle alive
        if isinstance(self.dataset, h5py.Dataset):  # converted by HDF5 as read: no float64 copy
            return np.asarray(self.dataset.astype(self.dtype)[key])
        if not isinstance(key, slice) or key.step not in (None, 1):
            return np.asarray(self.dataset[key], dtype=self.dtype)
        start, stop, _ = key.indices(len(self))
        rows = np.empty((max(stop - start, 0), *self.shape[1:]), dtype=self.dtype)
        chunk = max(CONVERT_BYTES // max(self.dataset.row_bytes, 1), 1)  # converted a piece at a time
        for first in range(start, stop, chunk):
            last = min(first + chunk, stop)
            rows[first - start : last - start] = self.dataset[first:last]
        return rows

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """All rows at once, for a caller that needs them whole (a small file)."""
        return np.asarray(self[:], dtype=dtype)

    def blocks(self) -> Iterator[np.ndarray]:
        """Every row, in order, a block of about BLOCK_BYTES at a time."""
        row_bytes = max(int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize, 1)
        step = max(BLOCK_BYTES // row_bytes, 1)
        for start in range(0, len(self), step):
            yield self[start : start + step]


def streamed(node: h5py.Dataset | StoredArray) -> bool:
    """Whether an x (or x_test) array is read by blocks: vectors, or uint8/uint16 images (N, H, W, C)."""
    return node.ndim == 2 or (node.ndim == 4 and np.dtype(node.dtype) in (np.uint8, np.uint16))


class StoredArray:
    """A C-ordered array stored raw in a file at an offset (an uncompressed npz member), its rows read with
    pread where asked: not memory-mapped, since a mapping's pages count in the process's RSS once touched."""

    def __init__(self, path: Path, offset: int, shape: tuple[int, ...], dtype: np.dtype):
        self.path, self.offset, self.shape, self.dtype = path, offset, tuple(shape), np.dtype(dtype)
        self.ndim = len(self.shape)
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: Any) -> np.ndarray:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            rows = self._read(start, max(start, stop))
            return rows if step == 1 else rows[::step]
        if isinstance(key, (int, np.integer)):
            row = int(key) + (len(self) if key < 0 else 0)
            return self._read(row, row + 1)[0]
        return np.stack([self[int(i)] for i in np.asarray(key)]) if len(key) else self._read(0, 0)

    def _read(self, start: int, stop: int) -> np.ndarray:
        stop = min(stop, len(self))
        count = max(stop - start, 0) * self.row_bytes // self.dtype.itemsize
        with open(self.path, "rb") as handle:  # read straight into the array: no bytes copy
            rows = np.fromfile(handle, self.dtype, count, offset=self.offset + start * self.row_bytes)
        return rows.reshape(max(stop - start, 0), *self.shape[1:])


def npz_members(path: Path, names: set[str]) -> dict[str, StoredArray]:
    """The members `names` of an npz archive that are stored uncompressed (np.savez) in C order, read in place
    (a compressed member cannot be)."""
    found = {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if name not in names or info.compress_type != zipfile.ZIP_STORED:
                continue
            raw.seek(info.header_offset)
            local = raw.read(30)  # the local file header: its name and extra field lengths end it
            name_length, extra_length = struct.unpack("<HH", local[26:30])
            raw.seek(info.header_offset + 30 + name_length + extra_length)
            version = np.lib.format.read_magic(raw)
            headers = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }
            if version not in headers:  # a format numpy writes only for names it cannot encode otherwise
                continue
            shape, fortran, dtype = headers[version](raw)
            if not (dtype.hasobject or fortran) and len(shape) >= 1:
                found[name] = StoredArray(path, raw.tell(), shape, dtype)
    return found
