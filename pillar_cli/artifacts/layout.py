"""How an artifact sits in an HDF5 file: arrays as datasets (strings as variable-length UTF-8), attributes as
HDF5 attributes (anything else as JSON, listed in `json_attrs`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from pillar_cli.errors import ArtifactError, MissingSplitError, first_line

BLOCK_BYTES = 64 * 2**20  # rows of a dataset copied or hashed at a time
CHUNK_VALUES = 2**20  # values in one stored chunk of a large array (4 MiB of float32)
CORRUPT_HINT = "the file may be truncated or corrupt; recreate it"
RESERVED_ATTRS = (
    "pillar_kind",
    "schema_version",
    "pillar_version",
    "created_at",
    "command",
    "config",
    "inputs",
    "content_hash",
    "array_digests",
    "record_hash",
    "json_attrs",
)


def json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} as an artifact attribute")


def stored_in_chunks(shape: tuple[int, ...]) -> dict[str, Any]:
    """How an array of `shape` is stored: a large one in chunks of whole rows, about CHUNK_VALUES values each,
    each with a Fletcher-32 checksum that the HDF5 library checks on reading — damaged bytes in the middle of
    a file are then refused as the block of rows that holds them, not only as a content hash that no longer
    matches; a small one contiguous."""
    size = int(np.prod(shape, dtype=np.int64))
    if not shape or size <= 65536:
        return {}
    row = size // shape[0]
    return {"chunks": (max(1, min(shape[0], CHUNK_VALUES // row)), *shape[1:]), "fletcher32": True}


def write_array(h5: h5py.File, name: str, array: np.ndarray) -> None:
    if isinstance(array, h5py.Dataset):
        return _copy_rows(h5, name, array)
    if array.dtype.kind == "U":
        h5.create_dataset(name, data=array.astype(object), dtype=h5py.string_dtype())
    else:
        h5.create_dataset(name, data=array, **stored_in_chunks(array.shape))


def _copy_rows(h5: h5py.File, name: str, source: h5py.Dataset) -> None:
    """A dataset of another open file copied a block of rows at a time (memory bounded by the block)."""
    target = h5.create_dataset(name, shape=source.shape, dtype=source.dtype, **stored_in_chunks(source.shape))
    for start, block in row_blocks(source):
        target[start : start + len(block)] = block


def _nothing() -> None:
    pass


# called after every block row_blocks reads: crash_guard's forked child reports its progress through it
on_block_read: Callable[[], None] = _nothing


def row_blocks(node: h5py.Dataset | np.ndarray | Any):
    """(start row, C-contiguous rows) of a dataset, BLOCK_BYTES at a time (of any rows that slice: an array,
    or rows left on disk). A dataset's block that cannot be read (a damaged chunk, a failing disk) is one line
    naming the file, the dataset and the rows."""
    row_bytes = max(1, node.dtype.itemsize * int(np.prod(node.shape[1:], dtype=np.int64)))
    step = max(1, BLOCK_BYTES // row_bytes)
    for start in range(0, node.shape[0], step):
        try:
            block = np.ascontiguousarray(node[start : start + step])
        except (OSError, ValueError) as err:
            if not isinstance(node, h5py.Dataset):
                raise
            raise ArtifactError(
                f"{node.file.filename}: cannot read rows {start}–{min(start + step, len(node)) - 1} "
                f"of {node.name} ({first_line(err)})",
                hint=CORRUPT_HINT,
            ) from err
        on_block_read()
        yield start, block


def read_attr(h5: h5py.File, key: str) -> Any:
    """An attribute as a Python value; text that is not valid UTF-8 (h5py hands it over surrogate-escaped)
    raises UnicodeError, so that a damaged file is refused rather than printed."""
    if key not in h5.attrs:
        return None
    value = h5.attrs[key]
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, str):
        value.encode("utf-8")
    return value.item() if isinstance(value, np.generic) else value


def read_kind_attrs(h5: h5py.File) -> dict[str, Any]:
    json_keys = set(json.loads(read_attr(h5, "json_attrs") or "[]"))
    attrs = {}
    for key in h5.attrs:
        if key in RESERVED_ATTRS:
            continue
        value = read_attr(h5, key)
        attrs[key] = json.loads(value) if key in json_keys else value
    return attrs


def read_arrays(
    h5: h5py.File, path: Path, under: str | None, skip: frozenset[str] = frozenset()
) -> dict[str, np.ndarray]:
    """The datasets of the file (under one group), read whole; those named in `skip` are left out."""
    root = h5
    if under is not None:
        if under not in h5:
            parent, _, child = under.rpartition("/")
            available = ", ".join(h5[parent]) if parent in h5 else "none"
            error = MissingSplitError if parent == "splits" else ArtifactError
            raise error(f"{path} has no {parent.rstrip('s') or 'group'} '{child}' (available: {available})")
        root = h5[under]
    arrays: dict[str, np.ndarray] = {}

    def visit(name: str, node: Any) -> None:
        if isinstance(node, h5py.Dataset):
            full = f"{under}/{name}" if under else name
            if full in skip:
                return
            data = node[()]
            if node.dtype.kind == "O":
                data = np.array([v.decode() if isinstance(v, bytes) else v for v in data], dtype=str)
            arrays[full] = data

    root.visititems(visit)
    return arrays
