"""The form of a source's raw data: arrays in memory, or array-likes read lazily (an h5py dataset)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pillar_cli.data.given_splits import each_rows_split
from pillar_cli.data.groups import Groups
from pillar_cli.data.keys import SUBSAMPLE, content_keys, keyed_draws, named_keys
from pillar_cli.data.labels import ClassSource, encode_declared
from pillar_cli.errors import DataError, UsageError, param


def no_labels(n: int) -> np.ndarray:
    """The labels of n unlabelled rows (-1; a Dataset without class names holds them)."""
    return np.full(n, -1, dtype=np.int64)


@dataclass(frozen=True)
class Dataset:
    """Raw data of one source. `inputs` are uint8 images (N, H, W, C) or float32 vectors (N, D), as numpy
    arrays or lazily read array-likes indexed with sorted row ids (an h5py dataset, image files decoded when
    read); `fingerprint` is set by readers of lazy data. Inputs to classify may come without labels (no class
    names). `groups`: the person of every row (train part, then test part), where the source names them; None:
    each row is its own person. `keys`: each row's name where the source gives one (an image file's path under
    its root, a sample's key), train part then test part; None: rows are named by their content
    (data/keys.py)."""

    name: str
    inputs: np.ndarray
    labels: np.ndarray
    class_names: list[str]
    test_inputs: np.ndarray | None = None
    test_labels: np.ndarray | None = None
    fingerprint_hint: str | None = None
    reopen: Callable[[], Dataset] | None = None  # lazy sources: a fresh handle for a worker process
    groups: Groups | None = None
    keys: np.ndarray | None = None
    class_source: ClassSource = ClassSource.LABELS  # where class_names came from (data/labels.py)
    rows_kept: str = "all"  # "all", or which of --fraction ("fraction") and --limit ("limit") chose the rows
    given_splits: np.ndarray | None = None  # each row's split as the holder names it (data/given_splits.py)

    @property
    def labelled(self) -> bool:
        """False for inputs without labels (a folder of images to classify): they have no class names."""
        return bool(self.class_names)

    @property
    def part_sizes(self) -> list[int]:
        """Rows of the train part, then of the test part when the source has one (source row ids run over
        both)."""
        return [len(part) for part in (self.inputs, self.test_inputs) if part is not None]

    def row_names(self) -> np.ndarray:
        """What names each row in predictions: its file for image files, else its source row id."""
        parts = [part for part in (self.inputs, self.test_inputs) if part is not None]
        if all(hasattr(part, "files") for part in parts):
            return np.array([file for part in parts for file in part.files])
        return np.arange(sum(self.part_sizes))

    def with_declared_classes(self, names: list[str] | None, from_labels: bool = False) -> Dataset:
        """This dataset over a class set that does not depend on its rows: `names` (declared by the user; each
        label must name one), else the source's own declaration; reading the classes off the labels must be
        asked for (`from_labels`) and is recorded as such."""
        if names is not None and from_labels:
            raise UsageError(
                f"{param('classes')} declares the classes; {param('classes_from_labels', True)} would "
                "read them from the labels: pass one"
            )
        if names is not None:
            known = np.asarray(self.class_names, dtype=object)
            parts = [known[part] for part in (self.labels, self.test_labels) if part is not None]
            labels, *test = encode_declared(f"source '{self.name}'", names, *parts)
            return replace(
                self,
                labels=labels,
                test_labels=test[0] if test else None,
                class_names=list(names),
                class_source=ClassSource.USER,
            )
        if self.class_source == ClassSource.SOURCE or from_labels:
            return self
        raise DataError(
            f"source '{self.name}' does not declare its classes, and classes read from the labels would "
            "follow the private rows: a label only they hold would add a class to every head",
            hint=f"declare them with {param('classes')} A,B,… (or a file of one a line), give the file a "
            f"class_names array, or pass {param('classes_from_labels', True)} to read them from the "
            "labels (the statement then lists it as not covered)",
        )

    def reopened(self) -> Dataset:
        """This dataset with freshly opened files (lazy sources); in-memory data is returned as is."""
        return self if self.reopen is None else self.reopen()

    @property
    def fingerprint(self) -> str:
        if self.fingerprint_hint is not None:
            return self.fingerprint_hint
        digest = hashlib.sha256()
        for part in (self.inputs, self.labels, self.test_inputs, self.test_labels):
            for block in part.blocks() if hasattr(part, "blocks") else () if part is None else (part,):
                digest.update(
                    np.ascontiguousarray(block)
                )  # in place: no bytes copy; rows left in a file by blocks
        return digest.hexdigest()

    def rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs and labels for sorted source row ids (train positions, then test positions offset by
        n_train)."""
        inputs, labels, local = self._part(ids)
        return read_rows(inputs, local), labels[local]

    def labels_of(self, ids: np.ndarray) -> np.ndarray:
        _, labels, local = self._part(ids)
        return labels[local]

    def _part(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n_train = len(self.inputs)
        if self.test_inputs is None or (ids < n_train).all():
            return self.inputs, self.labels, ids
        if (ids >= n_train).all():
            return self.test_inputs, self.test_labels, ids - n_train
        raise ValueError("a split mixes train and test rows")

    def read_as(self, row: int) -> Dataset:
        """This dataset with its lazily read images read at the size (where none is given) and bit depth
        (where none is declared) of source row `row` — a public row, so that no private file sets how every
        row is read; a test part is read as its train part."""
        if not hasattr(self.inputs, "read_as"):
            return self
        inputs = self.inputs.read_as(row)
        test = (
            None if self.test_inputs is None else self.test_inputs.read_like(inputs.shape[1:], inputs.depth)
        )
        return replace(self, inputs=inputs, test_inputs=test)

    def skipping_bad(self) -> Dataset:
        """This dataset with undecodable image files read as zeros and listed (embed --skip-bad)."""
        if not hasattr(self.inputs, "skipping_bad"):
            raise UsageError(
                f"{param('skip_bad', True)} applies to sources of image files; '{self.name}' holds arrays"
            )
        test = None if self.test_inputs is None else self.test_inputs.skipping_bad()
        return replace(self, inputs=self.inputs.skipping_bad(), test_inputs=test)

    def take_skipped(self) -> list[str]:
        """The files skipped since the last call (in this process)."""
        parts = [part for part in (self.inputs, self.test_inputs) if hasattr(part, "skipped")]
        skipped = [file for part in parts for file in part.skipped]
        for part in parts:
            part.skipped.clear()
        return skipped

    def ids_of_files(self, files: set[str]) -> np.ndarray:
        """Source row ids of the given image files (train positions, then test positions offset by
        n_train)."""
        ids = self.inputs.positions_of(files)
        if self.test_inputs is not None:
            ids += [len(self.inputs) + i for i in self.test_inputs.positions_of(files)]
        return np.asarray(ids, dtype=np.int64)

    def row_keys(self) -> list[bytes]:
        """Each row's key (train part, then test part): its name, else the hash of its input bytes."""
        if self.keys is not None:
            return named_keys(self.keys)
        return [
            key for part in (self.inputs, self.test_inputs) if part is not None for key in content_keys(part)
        ]

    def subsample(self, limit: int | None, fraction: float | None, seed: int) -> Dataset:
        """A subset of each part, decided by each row's keyed draw (data/keys.py): with `fraction`, the rows
        whose draw is below it — deleting one record keeps or drops no other; with `limit`, at most that many
        rows, those of the smallest draws."""
        if limit is None and fraction is None:
            return self
        if fraction is not None and not 0 < fraction <= 1:
            raise UsageError(f"{param('fraction')} must be in (0, 1]; got {fraction}")
        draws = keyed_draws(self.row_keys(), seed, SUBSAMPLE)

        def keep(part: np.ndarray) -> np.ndarray:
            kept = part if fraction is None else part[draws[part] < fraction]
            if limit is not None and len(kept) > limit:
                kept = np.sort(kept[np.argsort(draws[kept], kind="stable")[:limit]])
            if not len(kept):
                raise DataError(f"{param('fraction')} {fraction} keeps no row of a part of {len(part)} rows")
            return kept

        sizes = self.part_sizes
        train = keep(np.arange(sizes[0]))
        subset = replace(
            self,
            inputs=_take(self.inputs, train),
            labels=self.labels[train],
            reopen=None,
            fingerprint_hint=None
            if self.fingerprint_hint is None
            else f"{self.fingerprint_hint}|subset:{limit}:{fraction}:{seed}",
            rows_kept="fraction" if limit is None else "limit",
        )
        kept = train
        if self.test_inputs is not None:
            test = keep(np.arange(sizes[0], sizes[0] + sizes[1])) - sizes[0]
            subset = replace(
                subset, test_inputs=_take(self.test_inputs, test), test_labels=self.test_labels[test]
            )
            kept = np.concatenate([train, sizes[0] + test])
        return subset.taking(kept)

    def without(self, ids: np.ndarray) -> Dataset:
        """This dataset with the rows at source row ids `ids` deleted, as their holder would delete them from
        the source (the neighbours check's other side): where the classes were read off the labels, off the
        labels that remain."""
        sizes, gone = self.part_sizes, np.asarray(ids, dtype=np.int64)
        train = np.setdiff1d(np.arange(sizes[0]), gone)
        subset = replace(
            self,
            inputs=_take(self.inputs, train),
            labels=self.labels[train],
            reopen=None,
            fingerprint_hint=None
            if self.fingerprint_hint is None
            else f"{self.fingerprint_hint}|without:{hashlib.sha256(gone.tobytes()).hexdigest()[:16]}",
        )
        kept = train
        if self.test_inputs is not None:
            test = np.setdiff1d(np.arange(sizes[0], sizes[0] + sizes[1]), gone) - sizes[0]
            subset = replace(
                subset, test_inputs=_take(self.test_inputs, test), test_labels=self.test_labels[test]
            )
            kept = np.concatenate([train, sizes[0] + test])
        return (
            subset.taking(kept)._classes_left()
            if self.class_source == ClassSource.LABELS
            else subset.taking(kept)
        )

    def _classes_left(self) -> Dataset:
        """The classes some row still holds, in their order (a class read off the labels goes with its last
        row)."""
        parts = [part for part in (self.labels, self.test_labels) if part is not None]
        used = np.unique(np.concatenate(parts))
        relabel = [np.searchsorted(used, part).astype(np.int64) for part in parts]
        return replace(
            self,
            labels=relabel[0],
            test_labels=relabel[1] if len(relabel) > 1 else None,
            class_names=[self.class_names[i] for i in used],
        )

    def taking(self, kept: np.ndarray) -> Dataset:
        """The row-wise records (persons, keys, given splits) of the rows kept, by their old source row
        ids."""
        return replace(
            self,
            groups=None if self.groups is None else self.groups.take(kept),
            keys=None if self.keys is None else self.keys[kept],
            given_splits=None if self.given_splits is None else self.given_splits[kept],
        )

    def with_given_splits(self, file: Path | None) -> Dataset:
        """This dataset with each row's split as `file` names it (None: the splits are drawn)."""
        if file is None:
            return self
        rows = sum(self.part_sizes)
        return replace(self, given_splits=each_rows_split(file, self.keys, rows, self.name))


def _take(inputs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The rows at sorted ids: files still undecoded for image files (they have `subset`), read otherwise."""
    return inputs.subset(ids) if hasattr(inputs, "subset") else np.asarray(inputs[ids])


def read_rows(inputs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """inputs[ids] for sorted ids. A lazily read array (h5py) is read one contiguous run of ids at a time:
    h5py's selection by a list of scattered rows costs milliseconds per row (100 rows/s measured at 224 px), a
    slice per run costs one read."""
    if isinstance(inputs, np.ndarray) or len(ids) == 0:
        return np.asarray(inputs[ids])
    runs = np.split(ids, np.flatnonzero(np.diff(ids) != 1) + 1)
    return np.concatenate([inputs[int(run[0]) : int(run[-1]) + 1] for run in runs])
