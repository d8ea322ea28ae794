"""The embedder that made a classifier's training rows, built again from its recorded feature recipe, so that
new raw inputs are embedded exactly as those rows were (same backbone, weights, preprocessing and
precision)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.embedding.features import Embedder
from pillar_cli.errors import DataError, UsageError, param


def at_depth(info: dict[str, Any], depth: int | None) -> dict[str, Any]:
    """An embedder's record for images of `depth` bits a channel (None: vector data, nothing added): the
    depth, and the preprocessing's scaling to [0, 1] as it is done (/65535 at 16 bits)."""
    if depth is None:
        return info
    steps = info.get("preprocessing", "")
    return info | {
        "pixel_depth": depth,
        "preprocessing": steps.replace("/255", "/65535") if depth == 16 else steps,
    }


def embedder_for(
    recipe: FeatureRecipe,
    *,
    weights: Path | None = None,
    device: str = "auto",
    trust_checkpoint: bool = False,
    runtime: str = "auto",
) -> Embedder:
    """Rebuild the recipe's embedder; refused (one line naming the difference) when the rebuilt embedder would
    make other features: another weights file, another timm version's preprocessing, another feature
    dimension. `runtime` as build_embedder's (torch where only the module is wanted: no ONNX Runtime session
    is built)."""
    if recipe.transform is None and recipe.backbone != "network":
        raise DataError(
            "the classifier's feature recipe records no transform, so its embedder cannot be rebuilt",
            hint="embed the new inputs as its training rows were and pass FILE:SPLIT",
        )
    recorded = recipe.weights or "none"
    if recorded.startswith(("file:", "artifact:")) and weights is None:
        raise UsageError(
            f"the classifier's backbone weights came from a file ({recorded}): pass {param('weights')} "
            "FILE, the same file"
        )
    transform = recipe.transform or {}
    embedder = build_embedder(
        recipe.backbone,
        recipe.shape,
        weights=weights,
        pretrained=not recorded.startswith("random-init:"),
        resize=transform.get("resize"),
        crop=transform.get("crop"),
        device=device,
        trust_checkpoint=trust_checkpoint,
        seed=_random_init_seed(recorded),
        precision="bf16" if recipe.precision == "bf16 autocast" else "fp32",
        runtime=runtime,
    )
    built = FeatureRecipe.from_attrs(
        at_depth(embedder.info(), recipe.depth) | {"feature_dim": embedder.feature_dim}
    )
    # how the files were read (release/inputs.py reads new files so), not what the backbone makes
    ignore = ("image_shape", "pixel_window")
    if key := recipe.first_difference(built, ignore=ignore, unrecorded_differs=True):
        raise DataError(
            f"{weights if key == 'weights' and weights else 'the rebuilt backbone'} gives {key} "
            f"{built.to_attrs().get(key)!r}; the classifier's rows were embedded with "
            f"{recipe.to_attrs()[key]!r}"
        )
    return embedder


def _random_init_seed(weights: str) -> int:
    """The seed of randomly initialised weights ('random-init:seed=S'; public randomness, recorded as
    such)."""
    return int(weights.rpartition("=")[2]) if weights.startswith("random-init:seed=") else 0
