"""The form of a source's raw data: arrays in memory, or array-likes read lazily (an h5py dataset)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from pillar_cli.data.groups import Groups
from pillar_cli.errors import UsageError, param


def no_labels(n: int) -> np.ndarray:
    """The labels of n unlabelled rows (-1; a Dataset without class names holds them)."""
    return np.full(n, -1, dtype=np.int64)


@dataclass(frozen=True)
class Dataset:
    """Raw data of one source. `inputs` are uint8 images (N, H, W, C) or float32 vectors (N, D), as numpy arrays or
    lazily read array-likes indexed with sorted row ids (an h5py dataset, image files decoded when read);
    `fingerprint` is set by readers of lazy data. Inputs to classify may come without labels (no class names).
    `groups`: the person of every row (train part, then test part), where the source names them; None: each row
    is its own person."""

    name: str
    inputs: np.ndarray
    labels: np.ndarray
    class_names: list[str]
    test_inputs: np.ndarray | None = None
    test_labels: np.ndarray | None = None
    fingerprint_hint: str | None = None
    reopen: Callable[[], Dataset] | None = None  # lazy sources: a fresh handle for a worker process
    groups: Groups | None = None

    @property
    def labelled(self) -> bool:
        """False for inputs without labels (a folder of images to classify): they have no class names."""
        return bool(self.class_names)

    @property
    def part_sizes(self) -> list[int]:
        """Rows of the train part, then of the test part when the source has one (source row ids run over both)."""
        return [len(part) for part in (self.inputs, self.test_inputs) if part is not None]

    def row_names(self) -> np.ndarray:
        """What names each row in predictions: its file for image files, else its source row id."""
        parts = [part for part in (self.inputs, self.test_inputs) if part is not None]
        if all(hasattr(part, "files") for part in parts):
            return np.array([file for part in parts for file in part.files])
        return np.arange(sum(self.part_sizes))

    def reopened(self) -> Dataset:
        """This dataset with freshly opened files (lazy sources); in-memory data is returned as is."""
        return self if self.reopen is None else self.reopen()

    @property
    def fingerprint(self) -> str:
        if self.fingerprint_hint is not None:
            return self.fingerprint_hint
        digest = hashlib.sha256()
        for part in (self.inputs, self.labels, self.test_inputs, self.test_labels):
            if part is not None:
                digest.update(np.ascontiguousarray(part).tobytes())
        return digest.hexdigest()

    def rows(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inputs and labels for sorted source row ids (train positions, then test positions offset by n_train)."""
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

    def skipping_bad(self) -> Dataset:
        """This dataset with undecodable image files read as zeros and listed (embed --skip-bad)."""
        if not hasattr(self.inputs, "skipping_bad"):
            raise UsageError(f"{param('skip_bad', True)} applies to sources of image files; '{self.name}' holds arrays")
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
        """Source row ids of the given image files (train positions, then test positions offset by n_train)."""
        ids = self.inputs.positions_of(files)
        if self.test_inputs is not None:
            ids += [len(self.inputs) + i for i in self.test_inputs.positions_of(files)]
        return np.asarray(ids, dtype=np.int64)

    def subsample(self, limit: int | None, fraction: float | None, seed: int) -> Dataset:
        """A seeded subset of rows (each part separately): at most `limit` rows, or a `fraction` of them."""
        if limit is None and fraction is None:
            return self
        if fraction is not None and not 0 < fraction <= 1:
            raise UsageError(f"{param('fraction')} must be in (0, 1]; got {fraction}")
        rng = np.random.default_rng(seed)

        def keep(n: int) -> np.ndarray:
            count = n if fraction is None else max(1, int(round(fraction * n)))
            count = count if limit is None else min(count, limit)
            return np.sort(rng.choice(n, count, replace=False))

        train = keep(len(self.inputs))
        subset = replace(self, inputs=_take(self.inputs, train), labels=self.labels[train], reopen=None,
                         fingerprint_hint=None if self.fingerprint_hint is None else
                         f"{self.fingerprint_hint}|subset:{limit}:{fraction}:{seed}")
        kept = train
        if self.test_inputs is not None:
            test = keep(len(self.test_inputs))
            subset = replace(subset, test_inputs=_take(self.test_inputs, test), test_labels=self.test_labels[test])
            kept = np.concatenate([train, len(self.inputs) + test])
        return subset if self.groups is None else replace(subset, groups=self.groups.take(kept))


def _take(inputs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The rows at sorted ids: files still undecoded for image files (they have `subset`), read otherwise."""
    return inputs.subset(ids) if hasattr(inputs, "subset") else np.asarray(inputs[ids])


def read_rows(inputs: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """inputs[ids] for sorted ids. A lazily read array (h5py) is read one contiguous run of ids at a time: h5py's
    selection by a list of scattered rows costs milliseconds per row (100 rows/s measured at 224 px), a slice
    per run costs one read."""
    if isinstance(inputs, np.ndarray) or len(ids) == 0:
        return np.asarray(inputs[ids])
    runs = np.split(ids, np.flatnonzero(np.diff(ids) != 1) + 1)
    return np.concatenate([inputs[int(run[0]):int(run[-1]) + 1] for run in runs])
