"""Readers of named benchmark datasets laid out as their distributors (and torchvision) keep them: Oxford
Flowers-102 and GTSRB. Both declare their classes (102 numbered classes; the training folders of GTSRB)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from pillar_cli.data.dataset import Dataset
from pillar_cli.data.image_files import ImageFiles, file_keys
from pillar_cli.data.labels import ClassSource, encode_declared
from pillar_cli.data.readers import class_folders, existing_files, index_class_folders
from pillar_cli.errors import DataError


def read_flowers102(root: Path, size: int) -> Dataset:
    """Oxford Flowers-102 as distributed and as `torchvision.datasets.Flowers102` keeps it (ROOT/flowers-102
    or ROOT): jpg/image_NNNNN.jpg, imagelabels.mat (the class 1..102 of every image) and setid.mat (trnid,
    valid and tstid: 1-based image numbers). The train part is trnid and valid (2,040 images), the test part
    tstid (6,149); classes are named by their numbers. The images have many sizes: each is resized to size ×
    size."""
    from scipy.io import loadmat

    folder = root / "flowers-102" if (root / "flowers-102").is_dir() else root
    try:
        labels = loadmat(folder / "imagelabels.mat")["labels"].ravel().astype(np.int64)
        sets = loadmat(folder / "setid.mat")
        train = np.concatenate([sets["trnid"].ravel(), sets["valid"].ravel()])
        numbers = [np.sort(train).astype(np.int64), np.sort(sets["tstid"].ravel()).astype(np.int64)]
    except (OSError, KeyError, ValueError) as err:
        raise DataError(f"cannot read the Flowers-102 labels and splits in {folder}: {err}") from err
    if any(part.min() < 1 or part.max() > len(labels) for part in numbers):
        raise DataError(f"{folder / 'setid.mat'} names images beyond the {len(labels)} of imagelabels.mat")
    images = [
        ImageFiles(existing_files([folder / "jpg" / f"image_{n:05d}.jpg" for n in part.tolist()]), size)
        for part in numbers
    ]
    # the dataset's 102 classes, numbered as it numbers them
    names = [str(number) for number in range(1, 103)]
    train_labels, test_labels = encode_declared(
        str(folder / "imagelabels.mat"), names, *(labels[part - 1] for part in numbers)
    )
    fingerprint = "|".join(
        part.fingerprint(folder, part_labels)
        for part, part_labels in zip(images, (train_labels, test_labels))
    )
    return Dataset(
        "flowers102",
        images[0],
        train_labels,
        names,
        images[1],
        test_labels,
        fingerprint_hint=fingerprint,
        keys=file_keys(images[0].files + images[1].files, folder),
        class_source=ClassSource.SOURCE,
    )


def read_gtsrb(root: Path, size: int) -> Dataset:
    """GTSRB as distributed (Final_Training/Images/<class>, Final_Test/Images + GT-final_test.csv) or as
    `torchvision.datasets.GTSRB` lays it out (ROOT/gtsrb/GTSRB/Training, .../Final_Test/Images,
    gtsrb/GT-final_test.csv; indexed through torchvision, download=False). Classes are the training folders
    (00000, 00001, …); the files are indexed, not decoded."""
    if (root / "gtsrb" / "GTSRB").is_dir():
        return _gtsrb_torchvision(root, size)
    training = root / "Final_Training" / "Images"
    names = class_folders(training)
    train, train_labels = index_class_folders(training, names, size)
    test_dir = root / "Final_Test" / "Images"
    ground_truth = next(iter(sorted(test_dir.glob("GT-final_test*.csv"))), None) or root / "GT-final_test.csv"
    if not ground_truth.exists():
        raise DataError(f"GTSRB test labels missing: {ground_truth}")
    with open(ground_truth, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter=";"))
    test = [(test_dir / row["Filename"], int(row["ClassId"])) for row in rows]
    return _gtsrb(root, names, train, train_labels, test, size)


def _gtsrb_torchvision(root: Path, size: int) -> Dataset:
    from torchvision.datasets import GTSRB

    names = class_folders(root / "gtsrb" / "GTSRB" / "Training")
    try:  # (path, class id) pairs; nothing is decoded
        train, test = (GTSRB(root, split=split, download=False)._samples for split in ("train", "test"))
    except (RuntimeError, OSError) as err:
        raise DataError(f"cannot read the torchvision GTSRB layout in {root}: {err}") from err
    files, labels = zip(*train)
    return _gtsrb(
        root,
        names,
        ImageFiles(existing_files([Path(f) for f in files]), size),
        np.asarray(labels, dtype=np.int64),
        [(Path(f), c) for f, c in test],
        size,
    )


def _gtsrb(
    root: Path,
    names: list[str],
    train: ImageFiles,
    train_labels: np.ndarray,
    test_rows: list[tuple[Path, int]],
    size: int,
) -> Dataset:
    """The test rows' class ids mapped to the training folders' names (a test class without a folder is an
    error)."""
    unknown = sorted({f"{class_id:05d}" for _, class_id in test_rows} - set(names))
    if unknown:
        raise DataError(f"GTSRB test rows of classes without a training folder: {', '.join(unknown)}")
    test = ImageFiles(existing_files([file for file, _ in test_rows]), size)
    test_labels = np.array([names.index(f"{class_id:05d}") for _, class_id in test_rows], dtype=np.int64)
    return Dataset(
        "gtsrb",
        train,
        train_labels,
        names,
        test,
        test_labels,
        fingerprint_hint=f"{train.fingerprint(root, train_labels)}|{test.fingerprint(root, test_labels)}",
        keys=file_keys(train.files + test.files, root),
        class_source=ClassSource.SOURCE,
    )
