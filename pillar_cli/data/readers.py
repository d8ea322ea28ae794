"""Readers for data as it sits on disk: array files, image folders, CIFAR pickle batches."""

from __future__ import annotations

import csv
import hashlib
import pickle
import zipfile
from pathlib import Path

import h5py
import numpy as np

from pillar_cli.data.dataset import Dataset, no_labels
from pillar_cli.data.dicom_window import Window
from pillar_cli.data.file_rows import FileRows, npz_members, streamed
from pillar_cli.data.groups import array_groups, file_groups, manifest_groups
from pillar_cli.data.image_files import (
    IMAGE_SUFFIXES,
    ImageFiles,
    default_channels,
    file_keys,
    image_files_in,
)
from pillar_cli.data.labels import ClassSource, declared_names, encode_declared, encode_labels
from pillar_cli.errors import DataError

CHUNK_CACHE_BYTES = 64 * 2**20  # per open image file of a lazy source
CHUNK_CACHE_SLOTS = 100_003  # a prime, well above the number of chunks the cache holds (HDF5's advice)
_ARRAY_NAMES = {
    "x": ("x", "X", "features", "images"),
    "y": ("y", "Y", "labels", "targets"),
    "x_test": ("x_test", "X_test"),
    "y_test": ("y_test", "Y_test"),
}


COMPRESSED_LIMIT = (
    1 << 30
)  # bytes of a compressed x member read whole; above it, refused with how to store it


def load_npz(path: Path) -> dict[str, np.ndarray | FileRows]:
    """The archive's arrays: x and x_test stored uncompressed (np.savez) memory-mapped and read a block at a
    time where they are used (data/file_rows.py), every other one read whole; a compressed x is read whole,
    up to COMPRESSED_LIMIT bytes."""
    lazy = {name for role in ("x", "x_test") for name in _ARRAY_NAMES[role]}
    try:
        mapped = {name: FileRows(array) for name, array in npz_members(path, lazy).items() if streamed(array)}
        with np.load(path, allow_pickle=False) as archive:
            for name in set(archive.files) & lazy - set(mapped):
                info = archive.zip.getinfo(f"{name}.npy")
                if info.compress_type != zipfile.ZIP_STORED and info.file_size > COMPRESSED_LIMIT:
                    raise DataError(
                        f"{path}: '{name}' is stored compressed ({info.file_size / 2**20:,.1f} MiB once "
                        "inflated), which is read whole",
                        hint="save it with np.savez (uncompressed: read a block at a time) or as HDF5 "
                        "(the h5 source)",
                    )
            return {name: mapped[name] if name in mapped else archive[name] for name in archive.files}
    except DataError:
        raise
    except (OSError, ValueError, zipfile.BadZipFile) as err:
        raise DataError(f"cannot read {path} as .npz: {err}") from err


def load_h5(path: Path) -> dict[str, np.ndarray | FileRows]:
    """The file's datasets: x and x_test (vectors, or uint8/uint16 images) left in the file and read a block
    at a time where they are used (data/file_rows.py), every other one read whole. The file stays open for
    the life of the process (a DataLoader worker reopens it: Dataset.reopen)."""
    lazy = {name for role in ("x", "x_test") for name in _ARRAY_NAMES[role]}
    try:
        h5 = h5py.File(path, "r")
        arrays: dict[str, np.ndarray | FileRows] = {}
        for name in h5:
            node = h5[name]
            if not isinstance(node, h5py.Dataset):
                continue
            arrays[name] = FileRows(node) if name in lazy and streamed(node) else node[()]
        return arrays
    except OSError as err:
        raise DataError(f"cannot read {path} as HDF5: {err}") from err


def read_array_file(path: Path, arrays: dict[str, np.ndarray]) -> Dataset:
    """Arrays named x/y (aliases allowed), optional x_test/y_test. 2-D x is vectors; 3/4-D uint8 is images.
    Without any labels the rows (x, then x_test) are unlabelled inputs. `groups` (`groups_test`) name persons
    (data/groups.py)."""
    found = {
        role: next((arrays[n] for n in names if n in arrays), None) for role, names in _ARRAY_NAMES.items()
    }
    if found["x"] is None:
        raise DataError(f"{path} needs arrays 'x' and 'y' (found: {', '.join(sorted(arrays)) or 'none'})")
    if found["y"] is None and found["y_test"] is None:  # inputs to classify (pillar predict)
        test = [] if found["x_test"] is None else [found["x_test"]]
        inputs = _as_inputs(path, np.concatenate([found["x"], *test]))
        return Dataset(path.stem, inputs, no_labels(len(inputs)), [])
    if found["y"] is None:
        raise DataError(f"{path} has 'y_test' but no 'y'")
    if (found["x_test"] is None) != (found["y_test"] is None):
        raise DataError(f"{path} has only one of 'x_test' and 'y_test'")
    inputs, test_inputs = _as_inputs(path, found["x"]), None
    if found["x_test"] is not None:
        test_inputs = _as_inputs(path, found["x_test"])
        if test_inputs.shape[1:] != inputs.shape[1:]:
            raise DataError(
                f"{path}: x_test rows have shape {test_inputs.shape[1:]}, x rows {inputs.shape[1:]}"
            )
    label_parts = [found["y"]] if found["y_test"] is None else [found["y"], found["y_test"]]
    declared = declared_names(path, arrays)
    if declared is None:
        (labels, *test_labels), names = encode_labels(str(path), *label_parts)
    else:
        (labels, *test_labels), names = encode_declared(str(path), declared, *label_parts), declared
    return Dataset(
        path.stem,
        inputs,
        labels,
        names,
        test_inputs,
        test_labels[0] if test_labels else None,
        groups=array_groups(path, arrays, len(inputs), 0 if test_inputs is None else len(test_inputs)),
        class_source=ClassSource.LABELS if declared is None else ClassSource.SOURCE,
    )


def _as_inputs(path: Path, x: np.ndarray | FileRows) -> np.ndarray:
    if isinstance(x, FileRows):  # left in the file: vectors read as float32, images as stored
        return x  # type: ignore[return-value]  # an array-like the embedding reads as it reads h5py's
    if x.ndim == 2:
        return x.astype(np.float32, copy=False)  # float32 vectors as read: no second copy of a large file
    if x.ndim in (3, 4) and x.dtype in (np.uint8, np.uint16):
        return x[..., None] if x.ndim == 3 else x
    raise DataError(
        f"{path}: x must be 2-D vectors or uint8/uint16 images (N,H,W[,C]); got {x.dtype} {x.shape}"
    )


def read_image_folder(
    root: Path,
    size: int | None,
    channels: int = 3,
    depth: int | None = None,
    groups: Path | None = None,
    window: Window = Window(),
) -> Dataset:
    """One sub-folder per class, the `torchvision.datasets.ImageFolder` layout (read by torchvision's own
    indexer, files in nested folders included); `root/train` + `root/test` of that layout give an own test
    split. The files are indexed, not decoded (the first, for its size and bit depth, aside); `depth` None:
    the first file's; `groups` maps files to persons (data/groups.py)."""
    if (root / "train").is_dir() and (root / "test").is_dir():
        class_names = class_folders(root / "train")
        train, train_labels = index_class_folders(
            root / "train", class_names, size, None, channels, depth, window
        )
        test, test_labels = index_class_folders(
            root / "test", class_names, size, train.shape[1:], channels, train.depth, window
        )
        return Dataset(
            root.name,
            train,
            train_labels,
            class_names,
            test,
            test_labels,
            fingerprint_hint=f"{train.fingerprint(root, train_labels)}|{test.fingerprint(root, test_labels)}",
            groups=file_groups(train.files + test.files, root, groups),
            keys=file_keys(train.files + test.files, root),
            class_source=ClassSource.SOURCE,
        )
    if root.is_dir() and image_files_in(root) and not class_folders(root, required=False):
        # inputs to classify
        images = ImageFiles(image_files_in(root), size, channels=channels, depth=depth, window=window)
        labels = no_labels(len(images))
        return Dataset(
            root.name,
            images,
            labels,
            [],
            fingerprint_hint=images.fingerprint(root, labels),
            keys=file_keys(images.files, root),
        )
    class_names = class_folders(root)
    images, labels = index_class_folders(root, class_names, size, None, channels, depth, window)
    return Dataset(
        root.name,
        images,
        labels,
        class_names,
        fingerprint_hint=images.fingerprint(root, labels),
        groups=file_groups(images.files, root, groups),
        keys=file_keys(images.files, root),
        class_source=ClassSource.SOURCE,
    )


def class_folders(root: Path, required: bool = True) -> list[str]:
    if not root.is_dir():
        raise DataError(f"{root} is not a folder")
    names = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not names and required:
        raise DataError(f"{root} has no class sub-folders", hint="expected ROOT/<class>/<image files>")
    return names


def index_class_folders(
    root: Path,
    class_names: list[str],
    size: int | None,
    image_shape: tuple[int, ...] | None = None,
    channels: int = 3,
    depth: int | None = None,
    window: Window = Window(),
) -> tuple[ImageFiles, np.ndarray]:
    from torchvision.datasets.folder import make_dataset

    samples = make_dataset(
        root, {name: i for i, name in enumerate(class_names)}, tuple(IMAGE_SUFFIXES), allow_empty=True
    )
    if not samples:
        raise DataError(f"{root} holds no images ({', '.join(sorted(IMAGE_SUFFIXES))})")
    files, labels = zip(*samples)
    images = ImageFiles(list(files), size, image_shape, channels=channels, depth=depth, window=window)
    return images, np.asarray(labels, np.int64)


def read_cifar(root: Path) -> Dataset:
    """CIFAR-10 (data_batch_1..5, test_batch, batches.meta) or CIFAR-100 (train, test, meta); ROOT may also be
    the folder `torchvision.datasets.CIFAR10/100` downloads into (holding cifar-10-batches-py or
    cifar-100-python)."""
    for folder in ("cifar-10-batches-py", "cifar-100-python"):
        if (root / folder).is_dir():
            root = root / folder
    if (root / "data_batch_1").exists():
        train_files, test_file, label_key = (
            [root / f"data_batch_{i}" for i in range(1, 6)],
            root / "test_batch",
            b"labels",
        )
        names = _unpickle(root / "batches.meta")[b"label_names"]
    elif (root / "train").exists():
        train_files, test_file, label_key = [root / "train"], root / "test", b"fine_labels"
        names = _unpickle(root / "meta")[b"fine_label_names"]
    else:
        raise DataError(f"{root} is not a CIFAR python folder (no data_batch_1 or train file)")
    train = [_unpickle(f) for f in train_files]
    test = _unpickle(test_file)
    return Dataset(
        root.name,
        np.concatenate([_cifar_images(b) for b in train]),
        np.concatenate([np.asarray(b[label_key], dtype=np.int64) for b in train]),
        [n.decode() for n in names],
        _cifar_images(test),
        np.asarray(test[label_key], dtype=np.int64),
        class_source=ClassSource.SOURCE,
    )


def _unpickle(path: Path) -> dict:
    if not path.exists():
        raise DataError(f"CIFAR file missing: {path}")
    try:
        with open(path, "rb") as handle:
            return pickle.load(handle, encoding="bytes")
    except (pickle.UnpicklingError, EOFError, OSError) as err:
        raise DataError(f"cannot read CIFAR batch {path}: {err}") from err


def _cifar_images(batch: dict) -> np.ndarray:
    return np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)


def read_cifar101(root: Path) -> Dataset:
    """CIFAR-10.1: a `*_data.npy` (N, 32, 32, 3) uint8 and `*_labels.npy` pair (all rows are one part)."""
    data_files = sorted(root.glob("*_data.npy")) if root.is_dir() else [root]
    if not data_files:
        raise DataError(f"{root} holds no *_data.npy file (CIFAR-10.1 ships cifar10.1_v6_data.npy)")
    data_file = data_files[-1]
    label_file = data_file.with_name(data_file.name.replace("_data.npy", "_labels.npy"))
    if not label_file.exists():
        raise DataError(f"CIFAR-10.1 labels missing: {label_file}")
    images, labels = np.load(data_file, allow_pickle=False), np.load(label_file, allow_pickle=False)
    if images.dtype != np.uint8 or images.ndim != 4:
        raise DataError(f"{data_file}: expected uint8 images (N, H, W, 3); got {images.dtype} {images.shape}")
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    return Dataset("cifar10.1", images, labels.astype(np.int64), names, class_source=ClassSource.SOURCE)


def read_pcam(root: Path) -> Dataset:
    """PatchCamelyon HDF5 pairs (camelyonpatch_level_2_split_{train,test}_{x,y}.h5, in ROOT or, as
    `torchvision.datasets.PCAM` keeps them, in ROOT/pcam), read lazily per batch.

    The h5py files stay open for the life of the process; nothing here forks workers, so no handle is shared
    across processes. A split's rows are sorted but scattered over the file: the chunk cache holds whole
    chunks (HDF5's default of 1 MiB is smaller than one chunk of 64 images at 96 px), so each chunk is read
    once per batch rather than once per row.
    """
    parts, folder = {}, root / "pcam" if (root / "pcam").is_dir() else root
    for part in ("train", "test"):
        x_file = folder / f"camelyonpatch_level_2_split_{part}_x.h5"
        y_file = folder / f"camelyonpatch_level_2_split_{part}_y.h5"
        if not x_file.exists() or not y_file.exists():
            raise DataError(f"PCAM file missing: {x_file if not x_file.exists() else y_file}")
        try:
            images = h5py.File(x_file, "r", rdcc_nbytes=CHUNK_CACHE_BYTES, rdcc_nslots=CHUNK_CACHE_SLOTS)["x"]
            with h5py.File(y_file, "r") as labels:
                parts[part] = (images, labels["y"][()].reshape(-1).astype(np.int64))
        except (OSError, KeyError) as err:
            raise DataError(f"cannot read PCAM part '{part}' in {root}: {err}") from err
    fingerprint = "|".join(f"{p}:{parts[p][0].shape}:{hash_head(parts[p][1])}" for p in parts)
    (train, train_y), (test, test_y) = parts["train"], parts["test"]
    return Dataset(
        "pcam",
        train,
        train_y,
        ["normal", "tumour"],
        test,
        test_y,
        fingerprint_hint=fingerprint,
        reopen=lambda: read_pcam(root),
        class_source=ClassSource.SOURCE,
    )


def hash_head(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()[:16]


def read_manifest(
    path: Path,
    size: int | None,
    channels: int | None = None,
    depth: int | None = None,
    groups: Path | None = None,
    window: Window = Window(),
) -> Dataset:
    """A CSV manifest of `path,label` rows (header optional; paths relative to the manifest); labels by name;
    a third column, or `groups`, names persons (data/groups.py). The files are indexed, not decoded. A
    manifest of paths alone lists unlabelled inputs. `channels` None: 1 for a manifest of DICOM files (as
    the dicom source reads them), 3 otherwise."""
    with open(path, newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
    header = rows[0] if rows and rows[0][:2] in (["path", "label"], ["path"]) else None
    rows = rows[1:] if header else rows
    if rows and all(len(row) == 1 for row in rows):  # inputs to classify (pillar predict)
        files = existing_files([path.parent / row[0] for row in rows])
        images = ImageFiles(
            files, size, channels=channels or default_channels(files), depth=depth, window=window
        )
        labels = no_labels(len(rows))
        return Dataset(
            path.stem,
            images,
            labels,
            [],
            fingerprint_hint=images.fingerprint(path.parent, labels),
            keys=file_keys(images.files, path.parent),
        )
    if not rows or any(len(row) < 2 for row in rows):
        raise DataError(f"{path} must hold 'path,label' rows (or 'path' rows of inputs to classify)")
    class_names = sorted({row[1] for row in rows})
    files = existing_files([path.parent / row[0] for row in rows])
    _refuse_listed_twice(path, files, [row[1] for row in rows], 1 + (header is not None))
    labels = np.array([class_names.index(row[1]) for row in rows], dtype=np.int64)
    images = ImageFiles(files, size, channels=channels or default_channels(files), depth=depth, window=window)
    return Dataset(
        path.stem,
        images,
        labels,
        class_names,
        fingerprint_hint=images.fingerprint(path.parent, labels),
        groups=manifest_groups(path, rows, header, files, groups),
        keys=file_keys(files, path.parent),
    )


def _refuse_listed_twice(manifest: Path, files: list[str], labels: list[str], first_line: int) -> None:
    """One image file is one record: listed twice, it would count twice (with two labels, it would also
    train on a contradiction)."""
    seen: dict[str, int] = {}
    for line, (file, label) in enumerate(zip(files, labels), start=first_line):
        resolved = str(Path(file).resolve())
        if resolved in seen:
            earlier = seen[resolved]
            again = (
                f"with the labels '{labels[earlier - first_line]}' and '{label}'"
                if labels[earlier - first_line] != label
                else "with one label"
            )
            raise DataError(
                f"{manifest} lists {file} twice, {again} (lines {earlier} and {line}): one image file is "
                "one record",
                hint="keep one line a file",
            )
        seen[resolved] = line


def existing_files(files: list[Path]) -> list[str]:
    missing = next((file for file in files if not file.is_file()), None)
    if missing is not None:
        raise DataError(f"image file missing: {missing}")
    return [str(file) for file in files]
