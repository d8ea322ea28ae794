"""One embedding run as a value: the source and how its rows are read (class set, --limit/--fraction, bad
files), the split, and the backbone. `pillar embed` builds it from its options; the neighbours check rebuilds
it from the options an embeddings file recorded, to embed the same source again with one record deleted, as
its holder would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pillar_cli.data import Dataset, SourceOptions, SplitPlan, load_source
from pillar_cli.data.labels import parse_class_names
from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.embedding.features import Embedder
from pillar_cli.errors import DataError, UsageError, param


@dataclass(frozen=True, kw_only=True)
class EmbedRequest:
    source: str = "mnist5k"
    path: Path | None = None
    params: dict[str, str] = field(default_factory=dict)
    classes: list[str] | None = None  # declared by the user; None: the source's own declaration
    classes_from_labels: bool = False
    limit: int | None = None
    fraction: float | None = None
    skip_bad: bool = False
    plan: SplitPlan = SplitPlan()
    backbone: str = "pixels"
    weights: Path | None = None
    trust_checkpoint: bool = False
    pretrained: bool = True
    resize: int | None = None
    crop: int | None = None
    precision: str = "auto"
    runtime: str = "auto"

    @classmethod
    def from_options(cls, options: dict[str, Any], params: dict[str, str]) -> EmbedRequest:
        """The request of `pillar embed`'s resolved options (as an embeddings file records them in its config)
        and its parsed --param items."""
        plan = SplitPlan(
            options.get("public_fraction"),
            options.get("val_fraction", 0.1),
            options.get("test_fraction", 0.2),
            options.get("seed", 0),
            bool(options.get("no_public_split", False)),
            _path(options.get("split_from")),
        )
        classes = options.get("classes")
        return cls(
            source=options.get("source", "mnist5k"),
            path=_path(options.get("path")),
            params=params,
            classes=None if classes is None else parse_class_names(classes),
            classes_from_labels=bool(options.get("classes_from_labels", False)),
            limit=options.get("limit"),
            fraction=options.get("fraction"),
            skip_bad=bool(options.get("skip_bad", False)),
            plan=plan,
            backbone=options.get("backbone", "pixels"),
            weights=_path(options.get("weights")),
            trust_checkpoint=bool(options.get("trust_checkpoint", False)),
            pretrained=bool(options.get("pretrained", True)),
            resize=options.get("resize"),
            crop=options.get("crop"),
            precision=options.get("precision", "auto"),
            runtime=options.get("runtime", "auto"),
        )

    def dataset(self, without: np.ndarray | None = None) -> Dataset:
        """The source's labelled rows over a declared class set, the rows --limit or --fraction keep, and with
        --skip-bad undecodable files read as zeros (dropped later). `without`: rows of that dataset (source
        row ids, as an embeddings file records them) whose records are deleted from the source first, as their
        holder would delete them — found by their keys, so whatever --limit or --fraction kept."""
        loaded = load_source(self.source, SourceOptions(self.path, self.params, self.plan.seed))
        loaded = loaded.with_given_splits(self.plan.split_from)
        if without is None or not len(without):
            return self._read(loaded)
        keys = self._read(loaded).row_keys()
        gone = {keys[int(row)] for row in without}
        return self._read(loaded.without(np.flatnonzero([key in gone for key in loaded.row_keys()])))

    def _read(self, dataset: Dataset) -> Dataset:
        if not dataset.labelled:
            raise DataError(
                f"source '{self.source}' read {len(dataset.inputs)} rows without labels: embed needs "
                "labelled rows for the private, val and test splits",
                hint=f"to classify unlabelled inputs: pillar predict CLASSIFIER {param('source')} ... "
                f"{param('path')} ...",
            )
        dataset = dataset.with_declared_classes(self.classes, self.classes_from_labels)
        dataset = dataset.subsample(self.limit, self.fraction, self.plan.seed)
        return dataset.skipping_bad() if self.skip_bad else dataset

    def embedder(self, input_shape: tuple[int, ...], device: str = "auto") -> Embedder:
        """The backbone for inputs of `input_shape` (one row's), on `device`. A resize below the centre crop
        is refused: the short side would be resized to the crop instead, not to the size asked for."""
        embedder = build_embedder(
            self.backbone,
            input_shape,
            weights=self.weights,
            pretrained=self.pretrained,
            resize=self.resize,
            crop=self.crop,
            device=device,
            trust_checkpoint=self.trust_checkpoint,
            precision=self.precision,
            seed=self.plan.seed,
            runtime=self.runtime,
        )
        crop = (embedder.info().get("transform") or {}).get("crop")
        if self.resize is not None and crop is not None and self.resize < crop:
            whose = "" if self.crop is not None else f" ({self.backbone}'s input size)"
            raise UsageError(
                f"{param('resize')} {self.resize} is below the centre crop {crop}{whose}: the images "
                f"would be resized to {crop} px, not {self.resize}",
                hint=f"pass {param('crop')} {self.resize} (or less) for {self.resize} px inputs, or "
                f"{param('resize')} {crop} or more",
            )
        return embedder


def _path(value: object) -> Path | None:
    if value is not None and not isinstance(value, (str, Path)):
        raise UsageError(f"a recorded path is not a path: {value!r}")
    return None if value is None else Path(value)
