"""Who each row belongs to: the person (a patient, a lesion, a slide) whose rows are protected, and split,
together.

A source names a row's person by a group id: an npz/h5 array `groups` (with `groups_test` for its test part),
a manifest's third column, a CSV mapping image files to group ids (param groups=FILE.csv), a DICOM file's
PatientID, a Hugging Face dataset's column or a WebDataset sample's member (param group=COLUMN or group=EXT).
Without one, each row is its own person. Persons are numbered by their position among the source's sorted
group ids, so every split of one file, and every file of one source, numbers them alike.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pillar_cli.data.dicom import is_dicom, patient_ids
from pillar_cli.errors import DataError, UsageError, param


@dataclass(frozen=True)
class Groups:
    """The group id of every source row (train part, then test part) and where the ids came from, in words."""

    ids: np.ndarray  # (n,) str
    source: str

    @classmethod
    def of(cls, ids: list | np.ndarray, source: str, where: str) -> Groups:
        if np.asarray(ids).dtype.kind == "O" and (
            missing := [i for i, value in enumerate(ids) if value is None]
        ):
            # a null
            raise DataError(f"{where}: row {missing[0]} has no group id; every row needs its person")
        values = np.asarray(
            [value.decode() if isinstance(value, bytes) else value for value in ids]
            if np.asarray(ids).dtype.kind in "OS"
            else ids
        )
        if values.ndim != 1:
            raise DataError(f"{where}: the group ids must be one per row (got shape {values.shape})")
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            raise DataError(f"{where}: a group id is NaN or infinite; every row needs its person")
        text = values.astype(str)
        if (np.char.strip(text) == "").any():
            raise DataError(
                f"{where}: row {int(np.flatnonzero(np.char.strip(text) == '')[0])} has an empty group "
                "id; every row needs its person"
            )
        return cls(text, source)

    def __len__(self) -> int:
        return len(self.ids)

    @functools.cached_property
    def persons(self) -> np.ndarray:
        """(n,) int64: each row's person, numbered by its group id's position among the sorted ids."""
        return np.unique(self.ids, return_inverse=True)[1].astype(np.int64)

    @property
    def fingerprint(self) -> str:
        """What names the grouping: two files whose fingerprints match number their persons alike."""
        digest = hashlib.sha256(self.source.encode())
        for value in self.ids.tolist():
            digest.update(f"{value}\n".encode())
        return digest.hexdigest()

    def take(self, rows: np.ndarray) -> Groups:
        return Groups(self.ids[rows], self.source)


def groups_of_files(mapping: Path, files: list[str], root: Path) -> Groups:
    """The group of each image file from a CSV of `file,group` rows (header optional; files relative to
    `root`, the folder or manifest they were listed from, or by their name alone when that is unique)."""
    if not mapping.is_file():
        raise DataError(f"{param('params')} groups={mapping}: no such file")
    with open(mapping, newline="") as handle:
        rows = [row for row in csv.reader(handle) if row]
    if rows and [cell.strip().lower() for cell in rows[0][:2]] == ["file", "group"]:
        rows = rows[1:]
    if not rows or any(len(row) < 2 for row in rows):
        raise DataError(f"{mapping} must hold 'file,group' rows (an image file and its person's group id)")
    by_path: dict[str, str] = {}
    for row in rows:
        path, group = os.path.normpath(row[0].strip()), row[1].strip()
        if by_path.setdefault(path, group) != group:  # one file, two persons: which is it?
            raise DataError(
                f"{mapping} names {path} twice, as {by_path[path]} and as {group}: a file is one person's",
                hint="keep one row a file",
            )
    by_name = {}
    for path, group in by_path.items():
        by_name.setdefault(os.path.basename(path), []).append(group)
    ids = []
    for file in files:
        relative = os.path.normpath(os.path.relpath(file, root))
        found = by_path.get(relative, by_path.get(os.path.normpath(file)))
        if found is None and len(by_name.get(os.path.basename(file), [])) == 1:
            found = by_name[os.path.basename(file)][0]
        if found is None:
            raise DataError(
                f"{mapping} names no group for {relative}", hint="every image file needs its person"
            )
        ids.append(found)
    return Groups.of(ids, f"file {mapping.name}", str(mapping))


def groups_param(params: dict[str, str]) -> Path | None:
    """The CSV that param groups= names, if any."""
    value = params.get("groups")
    if value is not None and not value.strip():
        raise UsageError(f"{param('params')} groups= needs a CSV file of 'file,group' rows")
    return None if value is None else Path(value)


def array_groups(path: Path, arrays: dict[str, np.ndarray], n_train: int, n_test: int) -> Groups | None:
    """The `groups` array (and `groups_test` for a test part), one group id per row; None without one."""
    if "groups" not in arrays:
        if "groups_test" in arrays:
            raise DataError(f"{path} has 'groups_test' but no 'groups'")
        return None
    parts = [("groups", arrays["groups"], n_train)]
    if n_test:
        if "groups_test" not in arrays:
            raise DataError(f"{path} has 'groups' but no 'groups_test' for its x_test rows")
        parts.append(("groups_test", arrays["groups_test"], n_test))
    for name, ids, rows in parts:
        if np.ndim(ids) != 1 or len(ids) != rows:
            raise DataError(
                f"{path}: '{name}' holds {np.shape(ids)} ids for {rows} rows; one group id per row"
            )
    return Groups.of(np.concatenate([ids for _, ids, _ in parts]), "array groups", str(path))


def file_groups(files: list[str], root: Path, mapping: Path | None) -> Groups | None:
    """The persons of image files: from a CSV mapping, else DICOM files' PatientID; None: a person a file."""
    if mapping is not None:
        return groups_of_files(mapping, files, root)
    if files and all(is_dicom(file) for file in files) and (ids := patient_ids(files)) is not None:
        return Groups.of(ids, "DICOM PatientID", str(root))
    return None


def manifest_groups(
    path: Path, rows: list[list[str]], header: list[str] | None, files: list[str], mapping: Path | None
) -> Groups | None:
    """A manifest's persons: its third column (its header names it: path,label,PatientID), else a CSV mapping
    or DICOM files' PatientID."""
    if not any(len(row) > 2 for row in rows):
        return file_groups(files, path.parent, mapping)
    if mapping is not None:
        raise UsageError(
            f"{path} names each row's person in a column; {param('params')} groups= would name them twice"
        )
    if any(len(row) < 3 for row in rows):
        raise DataError(f"{path}: every row needs its person when one row names one (path,label,group)")
    column = f"column {header[2]}" if header and len(header) > 2 else "column 3"
    return Groups.of([row[2] for row in rows], column, str(path))
