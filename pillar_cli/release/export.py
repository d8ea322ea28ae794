"""A released classifier as one file a serving stack loads: ONNX, TorchScript or safetensors, with the privacy
statement inside it (ONNX metadata_props, a TorchScript extra file, safetensors metadata).

The ONNX and TorchScript modules map features (N, D) — or, for a classifier on raw pixels, uint8 images
(N, H, W, C) — to class probabilities: the public scaler, the basis and unit-norm rows where the head has them,
the head, a softmax; the same arithmetic as `pillar predict`. A safetensors file holds the same tensors by name
(`mean`, `scale`, `weights`, `bias`, `basis`) for a stack that applies them itself.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import torch

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.artifacts.files import replacing
from pillar_cli.errors import UsageError, param
from pillar_cli.release.exported import EXTRA_FILE, METADATA_KEYS

EXPORT_FORMATS = ("onnx", "torchscript", "safetensors")


class ClassifierModule(torch.nn.Module):
    """Features (or uint8 HWC pixel images, flattened and divided by 255) → class probabilities."""

    def __init__(self, classifier: Classifier, from_pixels: bool):
        super().__init__()
        for name in ("mean", "scale", "weights", "bias"):
            self.register_buffer(name, torch.from_numpy(np.asarray(getattr(classifier, name), np.float32)))
        basis = classifier.basis if classifier.basis is not None else np.zeros((0, 0), np.float32)
        self.register_buffer("basis", torch.from_numpy(np.asarray(basis, np.float32)))
        self.has_basis = classifier.basis is not None
        self.row_l2_normalised = bool(classifier.head["row_l2_normalised"])
        self.unit_rows = bool(classifier.head["unit_rows"])
        self.from_pixels = from_pixels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(x.shape[0], -1).float()
        if self.from_pixels:
            rows = rows / 255.0
        if self.row_l2_normalised:
            norms = rows.norm(dim=1, keepdim=True)
            rows = rows / torch.where(norms > 0, norms, torch.ones_like(norms))
        rows = (rows - self.mean) / self.scale
        if self.has_basis:
            rows = rows @ self.basis
        if self.unit_rows:
            rows = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-12)
        return torch.softmax(rows @ self.weights + self.bias, dim=1)


def pixel_input_shape(classifier: Classifier) -> tuple[int, ...] | None:
    """(H, W, C) when the classifier reads raw pixels as they are (the pixels backbone, no resize); else None."""
    recipe = classifier.features
    if recipe.get("backbone") == "pixels" and recipe.get("preprocessing") == "flatten (HWC order), /255":
        return tuple(int(n) for n in recipe["input_shape"])
    return None


def export_classifier(classifier: Classifier, fmt: str, features_only: bool, out: Path, force: bool) -> str:
    """Write `classifier` as `fmt`; returns what the file's module reads ('features (N, D)' or 'uint8 images …')."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown {param('format')} '{fmt}' (known: {', '.join(EXPORT_FORMATS)})")
    shape = None if features_only or fmt == "safetensors" else pixel_input_shape(classifier)
    if not features_only and fmt != "safetensors" and shape is None:
        recipe = classifier.features
        raise UsageError(f"the classifier's features were made by {recipe.get('backbone', 'an unrecorded backbone')} "
                         f"({recipe.get('preprocessing', 'unrecorded preprocessing')}): an export from images "
                         f"would need that inside; pass {param('features_only', True)} and embed the inputs as "
                         "recorded")
    metadata = {f"pillar_{key}": json.dumps(_metadata(classifier)[key]) for key in METADATA_KEYS}
    module = ClassifierModule(classifier, shape is not None).eval()
    example = (torch.zeros((2, *shape), dtype=torch.uint8) if shape is not None else
               torch.zeros((2, len(classifier.mean)), dtype=torch.float32))
    with replacing(out, force) as tmp:
        if fmt == "safetensors":
            from safetensors.torch import save

            tmp.write_bytes(save({name: buffer.contiguous() for name, buffer in module.named_buffers()
                                  if name != "basis" or module.has_basis}, metadata=metadata))
        elif fmt == "torchscript":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # TorchScript is deprecated in torch, still served
                scripted = torch.jit.trace(module, example)
                torch.jit.save(scripted, str(tmp), _extra_files={EXTRA_FILE: json.dumps(metadata)})
        else:
            _export_onnx(module, example, tmp, metadata)
    return "features (N, D) float32" if shape is None else f"uint8 images (N, {', '.join(map(str, shape))})"


def _metadata(classifier: Classifier) -> dict:
    return {"privacy": classifier.privacy, "class_names": classifier.class_names, "head": classifier.head,
            "features": classifier.features}


def _export_onnx(module: torch.nn.Module, example: torch.Tensor, path: Path, metadata: dict[str, str]) -> None:
    try:
        import onnx
    except ImportError:
        raise UsageError("exporting ONNX needs the onnx package: pip install onnx (or the package's 'export' "
                         "extra)") from None

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter warns that it is the legacy path
        torch.onnx.export(module, (example,), str(path), input_names=["input"], output_names=["probabilities"],
                          dynamic_axes={"input": {0: "batch"}, "probabilities": {0: "batch"}}, opset_version=17,
                          dynamo=False)
    model = onnx.load(str(path))
    for key, value in metadata.items():
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, str(path))
