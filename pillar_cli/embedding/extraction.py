"""Embedding a split source into an embeddings artifact: batched extraction, streamed to disk, resumable.

Features stream into `OUT.partial` (an HDF5 scratch file, chunked by rows) with the number of rows done per
split; an interrupted run leaves it behind and `--resume` continues from there. Only when every split is done
is the artifact itself written, atomically, by the same code path as an uninterrupted run — so both give the
same file.
"""

from __future__ import annotations

import gc
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import h5py
import numpy as np

from pillar_cli.artifacts import Artifact, embeddings_artifact
from pillar_cli.artifacts.files import require_space
from pillar_cli.artifacts.layout import row_blocks, stored_in_chunks
from pillar_cli.artifacts.names import sibling
from pillar_cli.data import Dataset, SplitPlan
from pillar_cli.data.pixels import pixel_depth
from pillar_cli.data.splits import SPLIT_ROLES
from pillar_cli.embedding.backbones import TimmEmbedder
from pillar_cli.embedding.features import Embedder
from pillar_cli.embedding.recipe import at_depth
from pillar_cli.errors import ArtifactError, DataError, Interrupted, UsageError, param
from pillar_cli.lazy import torch
from pillar_cli.memory import return_large_buffers
from pillar_cli.privacy.premises import DECLARED, KEYED, Premises


def options_digest(options: dict[str, Any]) -> str:
    """A stable id of a command's resolved options (what a resumed run or a shard must agree on)."""
    return hashlib.sha256(json.dumps(options, sort_keys=True, default=str).encode()).hexdigest()


def _being_written(path: Path) -> bool:
    """Whether another process holds `path` open for writing (HDF5's file lock refuses a second open)."""
    try:
        h5py.File(path, "r").close()
    except OSError as err:
        return "unable to lock file" in str(err)
    return False


class FeatureStore:
    """Per-split feature matrices in a scratch HDF5 file, with the rows done so far."""

    def __init__(self, path: Path, options: dict[str, Any], sizes: dict[str, int], dim: int, resume: bool):
        self.path = path
        key = options_digest(options)
        if resume and not path.exists():
            raise UsageError(f"nothing to resume: {path} does not exist")
        try:  # without resume, created only where absent: of two runs started together, one gets it
            self.h5 = h5py.File(path, "a" if resume else "w-")
        except OSError as err:
            if not resume and path.exists():
                if _being_written(path):
                    raise UsageError(
                        f"{path} is being written by another embed run right now",
                        hint="wait for it to finish, or write another output",
                    ) from None
                raise UsageError(
                    f"an interrupted run left {path}",
                    hint=f"pass {param('resume', True)} to continue it, or delete it",
                ) from None
            raise ArtifactError(f"cannot open {path}: {err}") from err
        if resume and self.h5.attrs.get("resume_key") != key:
            self.h5.close()
            raise UsageError(
                f"{path} was started with other options; it cannot be resumed with these",
                hint="rerun with the original options, or delete the partial file",
            )
        self.h5.attrs["resume_key"] = key
        for split, size in sizes.items():
            if split not in self.h5:
                self.h5.create_dataset(
                    split, shape=(size, dim), dtype=np.float32, **stored_in_chunks((size, dim))
                )
                self.h5[split].attrs["done"] = 0
        to_come = sum(size - self.done(split) for split, size in sizes.items())
        try:  # the rows still to embed go into this file, then all of them into the artifact beside it
            require_space(path.parent, 4 * dim * (to_come + sum(sizes.values())), "embed")
        except ArtifactError:
            self.close()
            if not resume:  # nothing was embedded: leave nothing behind
                path.unlink(missing_ok=True)
            raise

    def done(self, split: str) -> int:
        return int(self.h5[split].attrs["done"])

    def write(self, split: str, start: int, rows: np.ndarray) -> None:
        # the disk filled meanwhile
        require_space(self.path.parent, rows.nbytes, f"the scratch file {self.path}")
        self.h5[split][start : start + len(rows)] = rows
        self.h5[split].attrs["done"] = start + len(rows)
        self.h5.flush()

    def write_at(self, split: str, positions: np.ndarray, rows: np.ndarray) -> None:
        """Rows at their positions of the split (increasing), in whatever order batches arrive (no resume)."""
        # the disk filled meanwhile
        require_space(self.path.parent, rows.nbytes, f"the scratch file {self.path}")
        if len(positions) and positions[-1] - positions[0] == len(positions) - 1:
            self.h5[split][positions[0] : positions[-1] + 1] = rows
        else:
            self.h5[split][positions] = rows

    def features(self, split: str, keep: np.ndarray | None = None) -> h5py.Dataset:
        """The split's features (only the rows `keep` marks, when given), left on disk: writing the artifact
        copies them by blocks of rows."""
        if keep is None or keep.all():
            return self.h5[split]
        kept = self.h5.require_dataset(
            f"{split}.kept", shape=(int(keep.sum()), self.h5[split].shape[1]), dtype=np.float32
        )
        done = 0
        for start, block in row_blocks(self.h5[split]):
            rows = block[keep[start : start + len(block)]]
            kept[done : done + len(rows)] = rows
            done += len(rows)
        return kept

    def add_skipped(self, files: list[str]) -> None:
        """Image files that could not be decoded (embed --skip-bad), kept across a resumed run."""
        self.h5.attrs["skipped"] = json.dumps(sorted(set(self.skipped()) | set(files)))
        self.h5.flush()

    def skipped(self) -> list[str]:
        return json.loads(self.h5.attrs.get("skipped", "[]"))

    def finish(self) -> None:
        self.h5.close()
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        self.h5.close()


class _Read(NamedTuple):
    """What a worker hands back for one batch: the images and the files it skipped, or the error that stopped
    it."""

    images: torch.Tensor | None
    skipped: list[str]
    error: tuple[str, str | None] | None


class _Batches:
    """Batches of source rows for a DataLoader: each worker reads (decodes) its own batches and reopens lazy
    files. A failure to read is handed back as its (message, hint), which the main process raises as one clean
    error: raised in a worker it would arrive wrapped in the worker's traceback."""

    def __init__(self, dataset: Dataset, chunks: list[np.ndarray]):
        self.dataset, self.chunks = dataset, chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i: int) -> _Read:
        try:
            images = torch.from_numpy(np.ascontiguousarray(self.dataset.rows(self.chunks[i])[0]))
        except DataError as err:
            return _Read(None, [], (err.message, err.hint))
        return _Read(images, self.dataset.take_skipped(), None)


def _reopen_in_worker(_: int) -> None:
    """Never use a file handle inherited across fork: each worker opens lazy sources anew."""
    batches = torch.utils.data.get_worker_info().dataset
    batches.dataset = batches.dataset.reopened()


def embedded_batches(
    embedder: Embedder,
    dataset: Dataset,
    ids: np.ndarray,
    batch_size: int,
    workers: int = 0,
    on_skipped: Callable[[list[str]], None] = lambda files: None,
) -> Iterator[tuple[int, np.ndarray]]:
    """(offset into `ids`, features) of each batch of the rows `ids`, in order; `workers` processes read
    ahead, and the files they skip (`--skip-bad`) are handed to `on_skipped`.

    One batch is in flight while the previous one is handed on: on a GPU the next batch is queued before
    waiting for the last, so the device does not idle while the caller stores features and the loader fetches
    images."""
    chunks = [ids[begin : begin + batch_size] for begin in range(0, len(ids), batch_size)]
    loader = torch.utils.data.DataLoader(
        _Batches(dataset, chunks),
        batch_size=None,
        num_workers=workers,
        pin_memory=isinstance(embedder, TimmEmbedder) and embedder.device.type == "cuda",
        worker_init_fn=_reopen_in_worker if workers else None,
    )
    begin, previous = 0, None
    for read in _started(loader):
        if read.error is not None:
            raise DataError(*read.error)
        if read.skipped:
            on_skipped(read.skipped)
        current = (begin, embedder.submit(read.images))
        begin += len(read.images)
        if previous is not None:
            yield previous[0], previous[1].result()
        previous = current
    if previous is not None:
        yield previous[0], previous[1].result()


def _started(loader: torch.utils.data.DataLoader) -> Iterator[_Read]:
    """The loader's iterator, its workers forked with this process's objects frozen out of their garbage
    collection. An object left in a reference cycle (an ONNX Runtime session of earlier work in a notebook)
    would otherwise be destroyed by a worker's collector, in a process where the threads its destructor waits
    for do not exist: the worker hung for good. Frozen, it is left to this process's collector, which runs
    again once they have forked (collecting first took 0.4-0.5 s a loader in a process as large as the test
    suite's)."""
    if not loader.num_workers:
        return iter(loader)
    gc.freeze()
    try:
        return iter(loader)
    finally:
        gc.unfreeze()


def stream_split(
    embedder: Embedder,
    dataset: Dataset,
    ids: np.ndarray,
    batch_size: int,
    store: FeatureStore,
    split: str,
    on_batch: Callable[[int], None] = lambda n: None,
    workers: int = 0,
) -> None:
    """Features of one split into the store, from where a previous run stopped."""
    start = store.done(split)
    on_batch(start)
    for begin, rows in embedded_batches(
        embedder, dataset, ids[start:], batch_size, workers, store.add_skipped
    ):
        store.write(split, start + begin, rows)
        on_batch(len(rows))


def embed_splits(
    dataset: Dataset,
    splits: dict[str, np.ndarray],
    embedder: Embedder,
    plan: SplitPlan,
    batch_size: int,
    store: FeatureStore,
    on_batch: Callable[[int], None] = lambda n: None,
    workers: int = 0,
) -> Artifact:
    """Features per split; the public split is stored without labels (it is the unlabelled public set). The
    rows of image files skipped as undecodable (embed --skip-bad) are dropped from their splits and listed."""
    for name, ids in splits.items():
        stream_split(embedder, dataset, ids, batch_size, store, name, on_batch, workers)
    return assembled(dataset, splits, embedder.info(), embedder.feature_dim, plan, store)


def assembled(
    dataset: Dataset,
    splits: dict[str, np.ndarray],
    recipe: dict[str, Any],
    feature_dim: int,
    plan: SplitPlan,
    store: FeatureStore,
) -> Artifact:
    """The embeddings artifact of the features in `store`, made by an embedder described by `recipe` (its
    info); the rows of files skipped as undecodable are dropped from their splits and listed."""
    skipped = store.skipped()
    bad = dataset.ids_of_files(set(skipped)) if skipped else np.empty(0, np.int64)
    parts, persons = {}, None if dataset.groups is None else dataset.groups.persons
    for name, ids in splits.items():
        keep = ~np.isin(ids, bad)
        parts[name] = (
            store.features(name, keep),
            ids[keep],
            None if name == "public" else dataset.labels_of(ids[keep]),
            None if persons is None else persons[ids[keep]],
        )
    images = len(dataset.inputs.shape) == 4
    window = getattr(dataset.inputs, "dicom_window", None)
    attrs = {
        **at_depth(recipe, pixel_depth(dataset.inputs) if images else None),
        **({} if window is None else {"pixel_window": window.spelled}),
        "source": dataset.name,
        "source_fingerprint": dataset.fingerprint,
        "class_names": dataset.class_names,
        "premises": Premises(
            classes=dataset.class_source.value,
            splits=KEYED if plan.split_from is None else DECLARED,
            kept=dataset.rows_kept,
        ).to_attrs(),
        "splits": list(splits),
        "split_roles": {name: SPLIT_ROLES[name] for name in splits},
        **_split_recipe(plan, dataset.test_inputs is not None),
        "feature_dim": feature_dim,
        **({"image_shape": list(dataset.inputs.shape[1:])} if images else {}),
        **({"skipped_files": skipped} if skipped else {}),
        **(
            {}
            if dataset.groups is None
            else {"persons": {"source": dataset.groups.source, "fingerprint": dataset.groups.fingerprint}}
        ),
    }
    return embeddings_artifact(parts, attrs)


def _split_recipe(plan: SplitPlan, own_test_part: bool) -> dict[str, Any]:
    """How the splits were made: the keyed draw's seed and fractions, or the holder's file, by its name (not
    its hash, which would tell whose records it lists)."""
    if plan.split_from is not None:
        return {"splits_given_by": plan.split_from.name}
    return {
        "split_seed": plan.seed,
        "public_fraction": plan.public_fraction,
        "val_fraction": plan.val_fraction,
        "test_from": "source test part" if own_test_part else f"keyed fraction {plan.test_fraction}",
    }


def embed_resumably(
    target: Path,
    options: dict[str, Any],
    dataset: Dataset,
    splits: dict[str, np.ndarray],
    embedder: Embedder,
    plan: SplitPlan,
    batch_size: int,
    workers: int,
    resume: bool,
    save: Callable[[Artifact], Artifact],
    on_batch: Callable[[int], None] = lambda n: None,
) -> Artifact:
    """Features streamed to TARGET.partial, kept on Ctrl-C for a resumed run with the same `options`; `save`
    writes the artifact while its features still lie in the scratch file (so they are never all in memory),
    which is removed once it is written."""
    return_large_buffers()
    store = FeatureStore(
        sibling(target, ".partial"),
        options,
        {k: len(v) for k, v in splits.items()},
        embedder.feature_dim,
        resume,
    )
    try:
        artifact = save(embed_splits(dataset, splits, embedder, plan, batch_size, store, on_batch, workers))
    except KeyboardInterrupt:
        store.close()
        raise Interrupted(
            f"interrupted; the rows done so far are kept in {store.path}",
            hint=f"rerun the same command with {param('resume', True)} to continue",
        ) from None
    except UsageError as err:  # the output appeared meanwhile (another run's): every row is kept
        store.close()
        raise UsageError(
            err.message,
            hint=f"the rows embedded are kept in {store.path}: rerun with {param('resume', True)} and "
            f"{param('force', True)} to replace {target}",
        ) from None
    except DataError as err:  # e.g. an undecodable image: the rows done are kept for a resumed run
        store.close()
        kept = f"the rows done so far are kept in {store.path} for {param('resume', True)}"
        raise DataError(
            err.message,
            hint=f"{err.hint}; {kept}"
            if err.hint
            else f"fix or remove the file and resume ({kept}), or pass {param('skip_bad', True)}",
        ) from None
    except BaseException:
        store.close()
        raise
    store.finish()
    return artifact
