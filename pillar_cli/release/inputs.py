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
from pillar_cli.data.dicom_window import STORED, Window
from pillar_cli.data.pixels import pixel_depth
from pillar_cli.embedding.extraction import embedded_batches
from pillar_cli.embedding.features import Embedder
from pillar_cli.embedding.recipe import embedder_for
from pillar_cli.errors import DataError, UsageError, param

Probabilities = Callable[[np.ndarray], np.ndarray]
FILE_SOURCES = ("image-folder", "manifest", "dicom")  # the sources that read image files as asked


def decoded_as_recorded(classifier: Classifier, source: str, options: SourceOptions) -> SourceOptions:
    """Image files decoded the way the classifier's rows were embedded: with the channels its training images
    had (greyscale for digits, MNIST, any N×H×W array), at the bit depth they had (8 when not recorded),
    unless the caller names the channels or the depth; DICOM through the window they were read through (the
    stored bit range where none is recorded), which the caller cannot change."""
    recipe, params = classifier.features, dict(options.params)
    shape = recipe.shape or ()
    if source in FILE_SOURCES and len(shape) == 3 and shape[2] in (1, 3):
        params.setdefault("channels", str(shape[2]))
    if source in FILE_SOURCES and recipe.depth is not None:
        params.setdefault("depth", str(recipe.depth))
    if source in FILE_SOURCES and recipe.reads_images:
        recorded = Window.parse(recipe.pixel_window or STORED)
        if "window" in params and Window.parse(params["window"]).spelled != recorded.spelled:
            raise UsageError(
                f"{param('param')} window={params['window']}: the classifier's rows were read from DICOM "
                f"through {recorded.in_words}; new scans must be read so",
                hint=f"leave {param('param')} window out",
            )
        params["window"] = recorded.spelled
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
