"""Hugging Face `datasets` on disk, read with pyarrow alone: a directory that `save_to_disk` wrote (Arrow
stream files per split, memory-mapped) or Parquet shards (`<split>-*.parquet` or `<split>/*.parquet` under a
directory, as the Hub serves them). Images stay encoded (the PNG or JPEG bytes of an `Image` column) until
rows are read: `EncodedImages` behaves like a uint8 (N, H, W, 3) array, as `ImageFiles` does for image files,
so that the DataLoader workers of `embed --workers N` decode them; a Parquet file is read one row group at a
time. Labels come from a `ClassLabel` column with its class names, or any column of integers or strings
(labels.py); a column named by param group= names each row's person (groups.py).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from pillar_cli.data.dataset import Dataset, no_labels
from pillar_cli.data.groups import Groups
from pillar_cli.data.image_files import EncodedRows, decode_image, require_shape
from pillar_cli.data.labels import ClassSource, encode_labels
from pillar_cli.errors import DataError, UsageError, param

SPLIT_PREFIXES = ("train", "test", "validation", "valid", "val")


def hf_splits(root: Path) -> dict[str, list[Path]]:
    """Split name → its data files, in order: `save_to_disk` layouts first, else Parquet shards by name."""
    if (root / "dataset_dict.json").is_file():
        names = json.loads((root / "dataset_dict.json").read_text())["splits"]
        return {name: _arrow_files(root / name) for name in names}
    if (root / "state.json").is_file():  # one Dataset saved alone
        return {"train": _arrow_files(root)}
    splits: dict[str, list[Path]] = {}
    for file in sorted(root.rglob("*.parquet")):
        name = (
            file.parent.name
            if file.parent != root and file.parent.name in SPLIT_PREFIXES
            else file.name.split("-")[0].split(".")[0]
        )
        splits.setdefault(name, []).append(file)
    if not splits:
        raise DataError(
            f"{root} holds neither a save_to_disk dataset (dataset_dict.json, state.json) nor Parquet files"
        )
    return splits


def _arrow_files(split_dir: Path) -> list[Path]:
    state = json.loads((split_dir / "state.json").read_text())
    return [split_dir / entry["filename"] for entry in state["_data_files"]]


def features_of(files: list[Path]) -> dict:
    """The `datasets` feature types of a split (what is an Image, what a ClassLabel and its names)."""
    first = files[0]
    if first.suffix == ".arrow":
        return json.loads((first.parent / "dataset_info.json").read_text()).get("features", {})
    import pyarrow.parquet as pq

    schema = pq.read_schema(first)
    described = (
        json.loads((schema.metadata or {}).get(b"huggingface", b"{}")).get("info", {}).get("features", {})
    )
    return {name: described.get(name, {}) for name in schema.names}  # Parquet from other tools: no types


def column_of(features: dict, kind: str, given: str | None, what: str) -> str | None:
    """The column named by a param, else the only column of a feature type (`Image`, `ClassLabel`)."""
    if given is not None:
        if given not in features:
            raise UsageError(f"no column '{given}' for the {what} (columns: {', '.join(features)})")
        return given
    found = [
        name
        for name, feature in features.items()
        if isinstance(feature, dict) and feature.get("_type") == kind
    ]
    if len(found) > 1:
        raise UsageError(
            f"several {kind} columns ({', '.join(found)}): name the {what} with {param('params')} "
            f"{'image' if kind == 'Image' else 'label'}=COLUMN"
        )
    return found[0] if found else None


class EncodedImages(EncodedRows):
    """An (N, H, W, 3) uint8 array-like over the encoded images of an `Image` column, decoded when rows are
    read. Pickles without its open tables (a worker reopens them)."""

    def __init__(
        self,
        files: list[Path],
        column: str,
        size: int | None,
        rows: np.ndarray | None = None,
        image_shape: tuple[int, ...] | None = None,
    ):
        self.data_files, self.column, self.size = [str(f) for f in files], column, size
        self.starts = np.cumsum([0, *(_row_count(Path(f)) for f in self.data_files)])
        self.rows = np.arange(self.starts[-1]) if rows is None else rows
        if len(self.rows) == 0:
            raise DataError(f"{files[0].parent} holds no rows")
        self._open: dict[int, tuple[int, list]] = {}  # file → (row group, its encoded images)
        self._row_groups: dict[int, np.ndarray] = {}  # Parquet file → first row of each row group
        if image_shape is None:
            image_shape = (size, size, 3) if size else self._decode(int(self.rows[0])).shape
        self.shape = (len(self.rows), *image_shape)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_open": {}, "_row_groups": {}}

    def subset(self, ids: np.ndarray) -> EncodedImages:
        files = [Path(f) for f in self.data_files]
        return EncodedImages(files, self.column, self.size, self.rows[ids], self.shape[1:])

    def _raw(self, row: int) -> bytes:
        file = int(np.searchsorted(self.starts, row, side="right") - 1)
        with arrow_errors(f"cannot read row {row} of {self.data_files[file]}"):
            return self._encoded(file, row - int(self.starts[file]))

    def _decode(self, row: int) -> np.ndarray:
        name = f"row {row} of {self.data_files[int(np.searchsorted(self.starts, row, side='right') - 1)]}"
        decoded = decode_image(io.BytesIO(self._raw(row)), self.size, f"the image of {name}")
        return require_shape(decoded, self.shape[1:], name) if hasattr(self, "shape") else decoded

    def _encoded(self, file: int, local: int) -> bytes:
        """The bytes of one image: Arrow files are memory-mapped whole, Parquet read a row group at a time."""
        path = Path(self.data_files[file])
        if path.suffix == ".arrow":
            if file not in self._open:
                self._open[file] = (0, _arrow_table(path).column(self.column))
            return self._open[file][1][local]["bytes"].as_py()
        if file not in self._row_groups:  # the file's footer, read once
            self._row_groups[file] = _row_group_starts(path)
        starts = self._row_groups[file]
        group = int(np.searchsorted(starts, local, side="right") - 1)
        if self._open.get(file, (None,))[0] != group:
            import pyarrow.parquet as pq

            self._open[file] = (
                group,
                pq.ParquetFile(path).read_row_group(group, columns=[self.column]).column(0),
            )
        return self._open[file][1][local - int(starts[group])]["bytes"].as_py()

    def fingerprint(self, labels: np.ndarray) -> str:
        """A content id from file names, sizes and labels (no image is decoded)."""
        digest = hashlib.sha256()
        for file in self.data_files:
            digest.update(f"{os.path.basename(file)}|{os.path.getsize(file)}\n".encode())
        digest.update(np.ascontiguousarray(self.rows, dtype=np.int64).tobytes())
        digest.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
        return digest.hexdigest()


def _arrow_table(path: Path):
    import pyarrow as pa

    return pa.ipc.open_stream(pa.memory_map(str(path))).read_all()


def _row_group_starts(path: Path) -> np.ndarray:
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).metadata
    return np.cumsum([0, *(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))])[:-1]


def _row_count(path: Path) -> int:
    if path.suffix == ".arrow":
        return _arrow_table(path).num_rows
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def column_values(files: list[Path], column: str) -> np.ndarray:
    """A split's column as written (a label's class indices of a ClassLabel, integers or strings; group
    ids)."""
    import pyarrow.parquet as pq

    values = []
    for file in files:
        table = _arrow_table(file) if file.suffix == ".arrow" else pq.read_table(file, columns=[column])
        values.extend(table.column(column).to_pylist())
    return np.asarray(values)


@contextmanager
def arrow_errors(what: str) -> Iterator[None]:
    """pyarrow's errors on a damaged file (a Parquet shard cut short, a corrupt Arrow file) as one line."""
    import pyarrow

    try:
        yield
    except pyarrow.ArrowException as err:
        raise DataError(f"{what}: {str(err).splitlines()[0]}") from None


def read_hf(
    root: Path,
    size: int | None,
    image: str | None = None,
    label: str | None = None,
    train: str = "train",
    test: str = "test",
    group: str | None = None,
    id: str | None = None,
) -> Dataset:
    """The `train` split (and `test`, when there is one) of a Hugging Face dataset on disk; without a label
    column (none of type ClassLabel, none named `label` or given) its rows are unlabelled, to classify.
    `group`: the column naming each row's person; `id`: a column naming each row (else rows are named by their
    encoded image's bytes)."""
    with arrow_errors(f"cannot read the dataset in {root}"):
        return _read_hf(root, size, image, label, train, test, group, id)


def _read_hf(
    root: Path,
    size: int | None,
    image: str | None,
    label: str | None,
    train: str,
    test: str,
    group: str | None,
    id: str | None,
) -> Dataset:
    splits = hf_splits(root)
    if train not in splits:
        raise DataError(
            f"{root} has no split '{train}' (its splits: {', '.join(splits)})",
            hint=f"name the training split with {param('params')} train=SPLIT",
        )
    parts = [splits[train], *([splits[test]] if test in splits else [])]
    features = features_of(parts[0])
    image_column = column_of(features, "Image", image, "images")
    if image_column is None:
        raise UsageError(f"{root} has no column of type Image: name it with {param('params')} image=COLUMN")
    label_column = column_of(features, "ClassLabel", label, "labels") or (
        "label" if "label" in features else None
    )
    inputs = [EncodedImages(files, image_column, size) for files in parts]
    if label_column is None:
        labels, names = [no_labels(len(part)) for part in inputs], []
    elif (features.get(label_column) or {}).get("names"):
        labels, names = (
            [column_values(files, label_column).astype(np.int64) for files in parts],
            list(features[label_column]["names"]),
        )
    else:
        labels, names = encode_labels(
            f"{root}:{label_column}", *(column_values(f, label_column) for f in parts)
        )
    groups = (
        None
        if group is None
        else Groups.of(
            np.concatenate(
                [column_values(files, column_of(features, "", group, "persons")) for files in parts]
            ),
            f"column {group}",
            str(root),
        )
    )
    fingerprint = "|".join(part.fingerprint(part_labels) for part, part_labels in zip(inputs, labels))
    test_inputs, test_labels = (inputs[1], labels[1]) if len(inputs) > 1 else (None, None)
    keys = (
        None
        if id is None
        else np.concatenate([column_values(files, column_of(features, "", id, "row ids")) for files in parts])
        .astype(str)
        .astype(object)
    )
    declared = label_column is not None and bool((features.get(label_column) or {}).get("names"))
    return Dataset(
        "hf",
        inputs[0],
        labels[0],
        names,
        test_inputs,
        test_labels,
        fingerprint_hint=fingerprint,
        groups=groups,
        keys=keys,
        class_source=ClassSource.SOURCE if declared else ClassSource.LABELS,
    )
