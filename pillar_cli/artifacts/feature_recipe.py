"""How a split's features were made — backbone, weights, preprocessing, the shape and bit depth of the images,
the feature dimension — as one typed record: what an embeddings file records, what a model and a classifier
trained on its rows carry, and what new rows must have been made by for that classifier to read them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from pillar_cli.errors import ArtifactError

SHAPES = ("input_shape", "image_shape")
TEXTS = ("backbone", "timm_id", "weights", "precision", "preprocessing", "pixel_window")


def _well_formed(name: str, value: Any) -> bool:
    """A recipe field of the type its readers compute with (shapes of positive whole numbers, depth 8 or 16,
    …)."""
    if name in SHAPES:
        return isinstance(value, list) and all(
            isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in value
        )
    if name == "pixel_depth":
        return value in (8, 16) and not isinstance(value, bool)
    if name == "feature_dim":
        return isinstance(value, int) and not isinstance(value, bool) and value > 0
    if name in TEXTS:
        return isinstance(value, str)
    return isinstance(value, dict)  # transform, network


@dataclass(frozen=True, kw_only=True)
class FeatureRecipe:
    """Every field is optional: a file records what its embedder knew (vector data has no transform or depth,
    an older file no depth). Stored as the dict `to_attrs` gives, inside an artifact's attributes."""

    backbone: str | None = None
    timm_id: str | None = None
    weights: str | None = None  # an id, a file's hash ('file:…') or 'random-init:seed=S'
    network: dict | None = None  # a fine-tuned network's architecture (embedding/networks.py NetworkSpec)
    input_shape: tuple[int, ...] | None = None  # what the embedder reads: (H, W, C) images or (D,) vectors
    image_shape: tuple[int, ...] | None = None  # (H, W, C) of the source images, where they were images
    precision: str | None = None
    preprocessing: str | None = None  # in words
    transform: dict | None = None  # what rebuilds the preprocessing (resize, crop, mean, std, …)
    pixel_depth: int | None = None  # bits a channel of the source images (8 or 16)
    pixel_window: str | None = None  # how DICOM values became grey levels (data/dicom_window.py Window)
    feature_dim: int | None = None

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> FeatureRecipe:
        """The recipe among an artifact's attributes (other keys, e.g. class names, are not the recipe's); a
        field of the wrong type (an edited or foreign file) is one line."""
        values = json.loads(
            json.dumps({f.name: attrs[f.name] for f in fields(cls) if attrs.get(f.name) is not None})
        )
        for name, value in values.items():
            if not _well_formed(name, value):
                raise ArtifactError(
                    f"the file's feature recipe has a malformed {name} ({json.dumps(value)[:60]})",
                    hint="the file may come from another tool or be damaged; recreate it",
                )
        for name in SHAPES:
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)

    def to_attrs(self) -> dict[str, Any]:
        """The recorded fields as an artifact stores them (shapes as lists)."""
        return {
            f.name: list(value) if f.name in SHAPES else value
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None
        }

    def with_dim(self, feature_dim: int) -> FeatureRecipe:
        """The recipe with its feature dimension (a file that recorded none: the dimension of its rows)."""
        return self if self.feature_dim is not None else replace(self, feature_dim=feature_dim)

    @property
    def reads_images(self) -> bool:
        return self.image_shape is not None

    @property
    def shape(self) -> tuple[int, ...] | None:
        """The shape of one source input: the images', else what the embedder reads."""
        return self.image_shape or self.input_shape

    @property
    def depth(self) -> int | None:
        """The bit depth of the images the rows were embedded from (8 where an older file records none); None
        for vector data."""
        return (self.pixel_depth or 8) if self.reads_images else None

    def first_difference(
        self, other: FeatureRecipe, ignore: tuple[str, ...] = (), *, unrecorded_differs: bool = False
    ) -> str | None:
        """The first field this recipe records that `other` records otherwise — or, with `unrecorded_differs`,
        does not record at all (None: they agree)."""
        mine, theirs = self.to_attrs(), other.to_attrs()
        return next(
            (
                name
                for name in mine
                if name not in ignore
                and (name in theirs or unrecorded_differs)
                and mine[name] != theirs.get(name)
            ),
            None,
        )
