"""The embedder that made a classifier's training rows, built again from its recorded feature recipe, so that new
raw inputs are embedded exactly as those rows were (same backbone, weights, preprocessing and precision)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.embedding.features import Embedder
from pillar_cli.errors import DataError, UsageError, param

_COMPARED = ("backbone", "timm_id", "weights", "network", "input_shape", "precision", "transform", "preprocessing",
             "feature_dim", "pixel_depth")


def recorded_depth(recipe: dict[str, Any]) -> int | None:
    """The bit depth of the images a recipe's rows were embedded from (8 where an older file records none); None for
    vector data."""
    return int(recipe.get("pixel_depth", 8)) if "image_shape" in recipe else None


def at_depth(info: dict[str, Any], depth: int | None) -> dict[str, Any]:
    """An embedder's record for images of `depth` bits a channel (None: vector data, nothing added): the depth, and
    the preprocessing's scaling to [0, 1] as it is done (/65535 at 16 bits)."""
    if depth is None:
        return info
    steps = info.get("preprocessing", "")
    return info | {"pixel_depth": depth, "preprocessing": steps.replace("/255", "/65535") if depth == 16 else steps}


def embedder_for(recipe: dict[str, Any], *, weights: Path | None = None, device: str = "auto",
                 trust_checkpoint: bool = False) -> Embedder:
    """Rebuild the recipe's embedder; refused (one line naming the difference) when the rebuilt embedder would make
    other features: another weights file, another timm version's preprocessing, another feature dimension."""
    if "transform" not in recipe and recipe.get("backbone") != "network":
        raise DataError("the classifier's feature recipe records no transform, so its embedder cannot be rebuilt",
                        hint="embed the new inputs as its training rows were and pass FILE:SPLIT")
    recorded = str(recipe.get("weights", "none"))
    if recorded.startswith(("file:", "artifact:")) and weights is None:
        raise UsageError(f"the classifier's backbone weights came from a file ({recorded}): pass {param('weights')} "
                         "FILE, the same file")
    transform = recipe.get("transform") or {}
    embedder = build_embedder(
        recipe["backbone"], tuple(recipe.get("image_shape") or recipe["input_shape"]), weights=weights,
        pretrained=not recorded.startswith("random-init:"), resize=transform.get("resize"), crop=transform.get("crop"),
        device=device, trust_checkpoint=trust_checkpoint, seed=_random_init_seed(recorded),
        precision="bf16" if recipe.get("precision") == "bf16 autocast" else "fp32")
    built = _plain(at_depth(embedder.info(), recorded_depth(recipe)) | {"feature_dim": embedder.feature_dim})
    for key in _COMPARED:
        if key in recipe and _plain(recipe[key]) != built.get(key):
            raise DataError(f"{weights if key == 'weights' and weights else 'the rebuilt backbone'} gives {key} "
                            f"{built.get(key)!r}; the classifier's rows were embedded with {_plain(recipe[key])!r}")
    return embedder


def _random_init_seed(weights: str) -> int:
    """The seed of randomly initialised weights ('random-init:seed=S'; public randomness, recorded as such)."""
    return int(weights.rpartition("=")[2]) if weights.startswith("random-init:seed=") else 0


def _plain(value: Any) -> Any:
    """The value as an artifact's attributes store it (tuples as lists)."""
    return json.loads(json.dumps(value))
