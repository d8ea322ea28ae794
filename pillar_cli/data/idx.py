"""The IDX format that MNIST, Fashion-MNIST, KMNIST and EMNIST are distributed in (plain or gzip-compressed).

A file is two zero bytes, a type code (0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E
float64), the number of dimensions, each dimension as a big-endian uint32, then the values, big-endian. A
folder holds the four files of a dataset under the MNIST names: train-images-idx3-ubyte,
train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte (each with or without .gz).
"""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np

from pillar_cli.data.dataset import Dataset
from pillar_cli.data.labels import ClassSource
from pillar_cli.errors import DataError

IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
PARTS = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
FASHION_MNIST_CLASSES = [
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
]


def read_idx(path: Path) -> np.ndarray:
    """The array an IDX file holds (native byte order)."""
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        raise DataError(f"cannot read {path}: {err}") from None
    if len(raw) < 4 or raw[:2] != b"\0\0" or raw[2] not in IDX_TYPES:
        raise DataError(f"{path} is not an IDX file (its header is {raw[:4].hex() or 'empty'})")
    ndim = raw[3]
    header = 4 + 4 * ndim
    shape = tuple(int(d) for d in np.frombuffer(raw[4:header], dtype=">u4")) if len(raw) >= header else None
    dtype = np.dtype(IDX_TYPES[raw[2]])
    if (
        shape is None or len(raw) - header != math.prod(shape) * dtype.itemsize
    ):  # exact: header dims may overflow
        raise DataError(
            f"{path} is cut short or padded: its header promises {shape or '?'} values of "
            f"{dtype.itemsize} byte(s) and it holds {max(len(raw) - header, 0)} bytes of data"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def read_idx_folder(root: Path, name: str, class_names: list[str] | None = None) -> Dataset:
    """The train part (and the test part, when its files are there) of an IDX dataset in `root`; images become
    (N, H, W, 1) uint8, labels int64; classes are named `class_names` or by their numbers."""
    parts = {}
    for part, stems in PARTS.items():
        files = [_find(root, stem) for stem in stems]
        if all(files):
            parts[part] = _images_and_labels(*files)
        elif part == "train" or any(files):
            missing = [stem for stem, file in zip(stems, files) if file is None]
            raise DataError(
                f"{root} has no {missing[0]}[.gz]: an IDX folder holds the files "
                f"{', '.join(s for pair in PARTS.values() for s in pair)} (.gz or not)"
            )
    images, labels = parts["train"]
    names = class_names or [str(c) for c in range(int(labels.max()) + 1)]
    test = parts.get("test", (None, None))
    if test[0] is not None and test[0].shape[1:] != images.shape[1:]:
        raise DataError(
            f"{root}: the test images are {test[0].shape[2]} × {test[0].shape[1]}, the train images "
            f"{images.shape[2]} × {images.shape[1]}"
        )
    for part_labels in (labels, test[1]):
        if part_labels is not None and part_labels.size and int(part_labels.max()) >= len(names):
            raise DataError(f"{root}: label {int(part_labels.max())} names no class of {len(names)}")
    return Dataset(
        name,
        images,
        labels,
        names,
        *test,
        class_source=ClassSource.LABELS if class_names is None else ClassSource.SOURCE,
    )


def _find(root: Path, stem: str) -> Path | None:
    for candidate in (root / stem, root / f"{stem}.gz"):
        if candidate.is_file():
            return candidate
    return None


def _images_and_labels(images_path: Path, labels_path: Path) -> tuple[np.ndarray, np.ndarray]:
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.dtype != np.uint8:
        raise DataError(
            f"{images_path} holds {images.dtype} values of shape {images.shape}; images are N×H×W uint8"
        )
    if not len(images) or not images.shape[1] or not images.shape[2]:
        raise DataError(f"{images_path} holds no images (its header says {images.shape})")
    if labels.ndim != 1 or len(labels) != len(images):
        raise DataError(
            f"{labels_path} holds {labels.shape} labels for the {len(images)} images of {images_path}"
        )
    if labels.dtype.kind not in "iu":
        raise DataError(f"{labels_path} holds {labels.dtype} labels; IDX labels are whole numbers of a class")
    if (negative := np.flatnonzero(labels < 0)).size:
        raise DataError(
            f"{labels_path}: label {int(labels[negative[0]])} of row {negative[0]} names no class"
        )
    return images[..., None], labels.astype(np.int64)
