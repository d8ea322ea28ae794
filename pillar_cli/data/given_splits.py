"""Each row's split named by the data holder (`embed --split-from FILE`): an official test set, a paper's
split, a `split` column written out. The holder states that a record's split is a function of that record
alone, as a keyed draw is; pillar checks what it can see of the file — that it names every row once, keeps a
person's rows and the source's own test part together, and does not follow the labels (a class whose rows all
lie outside the private split: the split of such a row would be read off its label) — and every statement
made from the file says whose choice the splits were.

FILE is a CSV of `name,split` rows (header optional; a name is what the source names a row by: an image
file's path under its root, a sample's key, an id column), or one split a line in the source's row order
(train part, then test part), or a .npy array of them. A split is `train` (or `private`), `public`, `val` or
`test`.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from pillar_cli.errors import DataError, UsageError, param

NAMED = {"train": "private", "private": "private", "public": "public", "val": "val", "test": "test"}
HEADERS = ({"name", "split"}, {"path", "split"}, {"id", "split"}, {"key", "split"}, {"split"})


def read_split_file(path: Path) -> tuple[np.ndarray | None, np.ndarray]:
    """(row names or None for a file in row order, each listed row's split)."""
    if not path.is_file():
        raise DataError(f"{param('split_from')} {path} does not exist")
    if path.suffix.lower() == ".npy":
        try:
            values = np.load(path, allow_pickle=False)
        except ValueError as err:
            raise DataError(f"{path} is not a .npy array of split names: {err}") from None
        if values.ndim != 1 or values.dtype.kind not in "US":
            raise DataError(
                f"{path} holds a {values.dtype} array of shape {values.shape}; one split name a row"
            )
        return None, _splits(path, [str(value) for value in values], 0)
    with open(path, newline="", encoding="utf-8-sig") as handle:
        rows = [
            [cell.strip() for cell in row] for row in csv.reader(handle) if any(cell.strip() for cell in row)
        ]
    header = bool(rows) and {cell.lower() for cell in rows[0]} in HEADERS
    rows = rows[header:]
    if not rows:
        raise DataError(f"{path} names no split")
    widths = {len(row) for row in rows}
    if widths == {1}:
        return None, _splits(path, [row[0] for row in rows], header)
    if widths != {2}:
        raise DataError(f"{path} must hold 'name,split' rows, or one split a line")
    names = np.array([row[0] for row in rows], dtype=object)
    _, first, counts = np.unique(names, return_index=True, return_counts=True)
    if (counts > 1).any():
        twice = names[np.sort(first[counts > 1])[0]]
        raise DataError(f"{path} names the row {twice} more than once")
    return names, _splits(path, [row[1] for row in rows], header)


def _splits(path: Path, values: list[str], offset: int) -> np.ndarray:
    for line, value in enumerate(values, start=1 + offset):
        if value.lower() not in NAMED:
            raise DataError(
                f"{path}, row {line}: split '{value}' is none of {', '.join(NAMED)}",
                hint="train (or private) rows are the protected ones",
            )
    return np.array([NAMED[value.lower()] for value in values], dtype=object)


def each_rows_split(path: Path, keys: np.ndarray | None, n_rows: int, source: str) -> np.ndarray:
    """The split of each of the source's `n_rows` rows (train part, then test part), named by `keys` (None:
    the source names no rows)."""
    names, splits = read_split_file(path)
    if names is None:
        if len(splits) != n_rows:
            raise DataError(
                f"{path} lists {len(splits):,} splits; source '{source}' has {n_rows:,} rows (its train "
                "part, then its test part): one a row, in order"
            )
        return splits
    if keys is None:
        raise UsageError(
            f"source '{source}' does not name its rows: {param('split_from')} {path} must list one split a "
            "row, in the source's order"
        )
    by_name = dict(zip(names.tolist(), splits.tolist()))
    unknown = sorted(set(by_name) - set(keys.tolist()))
    if unknown:
        raise DataError(
            f"{path} names {len(unknown):,} rows source '{source}' does not hold (first: {unknown[0]})"
        )
    missing = [key for key in keys.tolist() if key not in by_name]
    if missing:
        raise DataError(
            f"{path} names no split for {len(missing):,} of the source's {n_rows:,} rows (first: "
            f"{missing[0]})"
        )
    return np.array([by_name[key] for key in keys.tolist()], dtype=object)


def declared_splits(
    given: np.ndarray,
    labels: np.ndarray,
    class_names: list[str],
    *,
    n_train: int,
    persons: np.ndarray | None,
    file: str,
    public_wanted: bool,
) -> dict[str, np.ndarray]:
    """Source row ids per split as `given` names them (`labels` of every row, train part then test part),
    refused where the file lets a private row's label, or another record, decide a split."""
    if n_train < len(given) and (wrong := given[n_train:] != "test").any():
        raise DataError(
            f"{file} names {int(wrong.sum()):,} rows of the source's own test part otherwise than test: they "
            "are its held-out rows"
        )
    if persons is not None:
        person_ids, row_person = np.unique(persons, return_inverse=True)
        splits_of = [set(given[row_person == i].tolist()) for i in range(len(person_ids))]
        if split_persons := [person_ids[i] for i, seen in enumerate(splits_of) if len(seen) > 1]:
            raise DataError(
                f"{file} puts the rows of {len(split_persons):,} persons in more than one split (first: "
                f"{split_persons[0]}): a person's rows must all be in one"
            )
    used = set(given.tolist())
    for label in np.unique(labels):
        where = set(given[labels == label].tolist())
        if len(used) > 1 and len(where) == 1 and (split := where.pop()) != "private":
            raise DataError(
                f"{file} names every row of class '{class_names[int(label)]}' {split}: a private row's label "
                "would decide its split",
                hint="name some of its rows train, or leave the class out of the declared set",
            )
    if "private" not in used:
        raise DataError(f"{file} names no train (private) row: there would be nothing to protect or train on")
    if public_wanted and "public" not in used:
        raise UsageError(
            f"{file} names no public row: nothing could be fitted without private data",
            hint=f"name some public rows, or pass {param('no_public_split', True)} for an evaluation-only "
            "set",
        )
    rows = np.arange(len(given), dtype=np.int64)
    return {
        name: rows[given == name] for name in ("private", "public", "val", "test") if (given == name).any()
    }
