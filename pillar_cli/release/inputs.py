"""Raw inputs (images or vectors of a dataset source, labelled or not) classified by a release: embedded with
the embedder its training rows were made by, rebuilt from the recorded recipe, and streamed batch by batch
through the same loader as `pillar embed` (decoding workers, one batch on the GPU while the last is
classified), each batch's predictions written before the next is read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.data import Dataset, SourceOptions
from pillar_cli.data.pixels import pixel_depth
from pillar_cli.embedding.extraction import embedded_batches
from pillar_cli.embedding.features import Embedder
from pillar_cli.embedding.recipe import embedder_for
from pillar_cli.errors import DataError, param

Probabilities = Callable[[np.ndarray], np.ndarray]
GREYSCALE_SOURCES = ("image-folder", "manifest")  # the sources whose image files can be read as greyscale
FILE_SOURCES = (*GREYSCALE_SOURCES, "dicom")  # the sources that read image files at a chosen bit depth


def decoded_as_recorded(classifier: Classifier, source: str, options: SourceOptions) -> SourceOptions:
    """Image files decoded the way the classifier's rows were embedded: as greyscale when its training images
    had one channel (digits, MNIST, any N×H×W array), at the bit depth they had (8 when not recorded), unless
    the caller names the channels or the depth."""
    recipe, params = classifier.features, dict(options.params)
    shape = recipe.shape or ()
    if source in GREYSCALE_SOURCES and len(shape) == 3 and shape[2] == 1:
        params.setdefault("channels", "1")
    if source in FILE_SOURCES and recipe.depth is not None:
        params.setdefault("depth", str(recipe.depth))
    return replace(options, params=params)


def input_embedder(
    classifier: Classifier, dataset: Dataset, *, weights: Path | None, device: str, trust_checkpoint: bool
) -> Embedder:
    """The classifier's embedder, for inputs of the shape its training rows were embedded from."""
    recipe = classifier.features
    recorded, shape, depth = recipe.shape, tuple(dataset.inputs.shape[1:]), recipe.depth
    if len(shape) == 3 and depth is not None and pixel_depth(dataset.inputs) != depth:
        raise DataError(
            f"the inputs are {pixel_depth(dataset.inputs)}-bit images; the classifier's rows were embedded "
            f"from {depth}-bit images"
        )
    if recipe.backbone == "pixels" and recorded is not None and shape != recorded:
        hint = (
            f"pass {param('param')} size=N to resize image files as they are decoded"
            if len(shape) == 3
            else None
        )
        raise DataError(
            f"the inputs have shape {shape}; the classifier's rows were embedded from {recorded}", hint=hint
        )
    return embedder_for(recipe, weights=weights, device=device, trust_checkpoint=trust_checkpoint)


def classify_inputs(
    dataset: Dataset,
    embedder: Embedder,
    probabilities_of: Probabilities,
    *,
    batch_size: int,
    workers: int,
    on_batch: Callable[[int], None],
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(row names, class probabilities) of each batch of `dataset`'s rows, its train part, then its test part:
    each batch is classified as it is embedded, and its features dropped."""
    names, start = dataset.row_names(), 0
    for size in dataset.part_sizes:
        ids = np.arange(start, start + size)
        for begin, features in embedded_batches(embedder, dataset, ids, batch_size, workers, _refuse_skipped):
            yield names[ids[begin : begin + len(features)]], probabilities_of(features)
            on_batch(len(features))
        start += size


def _refuse_skipped(files: list[str]) -> None:
    raise DataError(f"cannot decode {files[0]}")
