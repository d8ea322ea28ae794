"""Raw inputs (images or vectors of a dataset source, labelled or not) classified by a release: embedded with the
embedder its training rows were made by, rebuilt from the recorded recipe, and streamed batch by batch through the
same loader as `pillar embed` (decoding workers, one batch on the GPU while the last is classified)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.data import Dataset, SourceOptions
from pillar_cli.data.pixels import pixel_depth
from pillar_cli.embedding.extraction import stream_split
from pillar_cli.embedding.features import Embedder
from pillar_cli.embedding.recipe import embedder_for
from pillar_cli.errors import DataError, param

Probabilities = Callable[[np.ndarray], np.ndarray]
GREYSCALE_SOURCES = ("image-folder", "manifest")  # the sources whose image files can be read as greyscale
FILE_SOURCES = (*GREYSCALE_SOURCES, "dicom")  # the sources that read image files at a chosen bit depth


def decoded_as_recorded(classifier: Classifier, source: str, options: SourceOptions) -> SourceOptions:
    """Image files decoded the way the classifier's rows were embedded: as greyscale when its training images had one
    channel (digits, MNIST, any N×H×W array), at the bit depth they had (8 when not recorded), unless the caller
    names the channels or the depth."""
    recipe, params = classifier.features, dict(options.params)
    shape = recipe.shape or ()
    if source in GREYSCALE_SOURCES and len(shape) == 3 and shape[2] == 1:
        params.setdefault("channels", "1")
    if source in FILE_SOURCES and recipe.depth is not None:
        params.setdefault("depth", str(recipe.depth))
    return replace(options, params=params)


def input_embedder(classifier: Classifier, dataset: Dataset, *, weights: Path | None, device: str,
                   trust_checkpoint: bool) -> Embedder:
    """The classifier's embedder, for inputs of the shape its training rows were embedded from."""
    recipe = classifier.features
    recorded, shape, depth = recipe.shape, tuple(dataset.inputs.shape[1:]), recipe.depth
    if len(shape) == 3 and depth is not None and pixel_depth(dataset.inputs) != depth:
        raise DataError(f"the inputs are {pixel_depth(dataset.inputs)}-bit images; the classifier's rows were embedded "
                        f"from {depth}-bit images")
    if recipe.backbone == "pixels" and recorded is not None and shape != recorded:
        hint = f"pass {param('param')} size=N to resize image files as they are decoded" if len(shape) == 3 else None
        raise DataError(f"the inputs have shape {shape}; the classifier's rows were embedded from {recorded}",
                        hint=hint)
    return embedder_for(recipe, weights=weights, device=device, trust_checkpoint=trust_checkpoint)


def classify_inputs(dataset: Dataset, embedder: Embedder, probabilities_of: Probabilities, *, batch_size: int,
                    workers: int, on_batch: Callable[[int], None]) -> np.ndarray:
    """Class probabilities of every row of `dataset`: its train part, then its test part."""
    sink = _ProbabilitySink(probabilities_of, sum(dataset.part_sizes))
    start = 0
    for size in dataset.part_sizes:
        sink.offset = start
        stream_split(embedder, dataset, np.arange(start, start + size), batch_size, sink, "inputs", on_batch, workers)
        start += size
    return sink.probabilities


class _ProbabilitySink:
    """Where stream_split puts each embedded batch: classified at once, the features then dropped."""

    def __init__(self, probabilities_of: Probabilities, rows: int):
        self.probabilities_of, self.rows, self.offset = probabilities_of, rows, 0
        self.probabilities: np.ndarray | None = None

    def done(self, split: str) -> int:
        return 0

    def add_skipped(self, files: list[str]) -> None:
        raise DataError(f"cannot decode {files[0]}")

    def write(self, split: str, begin: int, features: np.ndarray) -> None:
        batch = self.probabilities_of(features)
        if self.probabilities is None:
            self.probabilities = np.empty((self.rows, batch.shape[1]), dtype=batch.dtype)
        self.probabilities[self.offset + begin:self.offset + begin + len(batch)] = batch
