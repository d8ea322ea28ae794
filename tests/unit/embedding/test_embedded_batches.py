"""Embedding streams: each batch is handed on as soon as the next one is in flight, so a consumer (the store
of `pillar embed`, the predictions file of `pillar predict --source`) holds one batch at a time, never all
rows; and the loader's workers fork from a heap without garbage."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import numpy as np

from pillar_cli.data import Dataset, SourceOptions, load_source
from pillar_cli.embedding.extraction import embedded_batches
from pillar_cli.embedding.features import ReadyFeatures
from pillar_cli.release.inputs import classify_inputs


class CountingEmbedder:
    """The first two pixels of each image as its features, counting the batches it was given."""

    feature_dim = 2

    def __init__(self):
        self.batches = 0

    def submit(self, images):
        self.batches += 1
        return ReadyFeatures(np.asarray(images).reshape(len(images), -1)[:, :2].astype(np.float32))


def test_raw_inputs_are_classified_a_batch_at_a_time_in_row_order():
    dataset = load_source("digits", SourceOptions())
    embedder, heard = CountingEmbedder(), []
    blocks = classify_inputs(
        dataset, embedder, lambda features: features / 16.0, batch_size=100, workers=0, on_batch=heard.append
    )
    rows, probabilities = next(blocks)
    assert embedder.batches == 2 and heard == []  # the second batch in flight, the first handed on
    np.testing.assert_array_equal(rows, np.arange(100))
    np.testing.assert_array_equal(
        probabilities, dataset.inputs.reshape(len(dataset.inputs), -1)[:100, :2] / 16.0
    )
    rest = list(blocks)
    assert embedder.batches == 18 and heard == [100] * 17 + [97] and len(rest) == 17
    np.testing.assert_array_equal(
        np.concatenate([rows, *(r for r, _ in rest)]), np.arange(len(dataset.inputs))
    )


class LeftInACycle:
    """Garbage whose destructor must run where it was made (as an ONNX Runtime session's, which waits for its
    threads): it writes the id of the process it ran in to `notes`, a file every process can append to."""

    def __init__(self, notes: Path):
        self.notes, self.cycle = notes, self

    def __del__(self):
        with open(self.notes, "a") as file:
            file.write(f"{os.getpid()}\n")


def test_no_loader_worker_runs_the_destructor_of_garbage_left_here(tmp_path, monkeypatch):
    """Garbage left in a cycle as the workers fork (automatic collection off, as if none had come due), and a
    full collection in each worker before every batch it reads: the destructor runs once, here, in no
    worker."""
    dataset, notes, read = load_source("digits", SourceOptions()), tmp_path / "destroyed", Dataset.rows
    monkeypatch.setattr(Dataset, "rows", lambda self, ids: (gc.collect(), read(self, ids))[1])
    gc.collect()
    gc.disable()
    try:
        LeftInACycle(notes)
        batches = embedded_batches(CountingEmbedder(), dataset, np.arange(300), 100, workers=2)
        assert [begin for begin, _ in batches] == [0, 100, 200]
    finally:
        gc.enable()
    gc.collect()
    assert notes.read_text().split() == [str(os.getpid())]
