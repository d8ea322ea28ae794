"""A released classifier as one file a serving stack loads: ONNX, TorchScript or safetensors, with the privacy
statement inside it (ONNX metadata_props, a TorchScript extra file, safetensors metadata).

The ONNX and TorchScript modules map uint8 images (N, H, W, C) (uint16 for 16-bit images) — or, with
features_only, features (N, D) — to class probabilities: the embedder its rows were made by (preprocessing and
backbone), the public scaler, the basis and unit-norm rows where the head has them, the head, a softmax; the
same arithmetic as `pillar predict`. A released network reads the images themselves (its pixel rows as NCHW
images), so it is exported from images only. A safetensors file holds the head's tensors by name (`mean`,
`scale`, `weights`, `bias`, `basis`; a network's weights by their names) for a stack that applies them itself.
"""

from __future__ import annotations

import errno
import hashlib
import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.artifacts.files import replacing
from pillar_cli.embedding.networks import NetworkSpec, build_network, load_state
from pillar_cli.embedding.recipe import embedder_for
from pillar_cli.errors import UsageError, check_one_of, first_line, param
from pillar_cli.release.card import hf_config, model_card
from pillar_cli.release.exported import (
    CONTENTS_KEY,
    EXPORT_FORMATS,
    EXTRA_FILE,
    HASH_KEY,
    HF_WEIGHTS,
    INPUT_KEY,
    METRICS_KEY,
    SUFFIXES,
    contents_of,
    metadata_hash,
)
from pillar_cli.release.folder import check_folder_target, write_folder
from pillar_cli.release.input_contract import input_contract


class ClassifierModule(torch.nn.Module):
    """Features (N, D) — or uint8 images (N, H, W, C) through the embedder's module `features` — →
    probabilities."""

    def __init__(self, classifier: Classifier, features: torch.nn.Module | None):
        super().__init__()
        for name in ("mean", "scale", "weights", "bias"):
            self.register_buffer(name, torch.from_numpy(np.asarray(getattr(classifier, name), np.float32)))
        basis = classifier.basis if classifier.basis is not None else np.zeros((0, 0), np.float32)
        self.register_buffer("basis", torch.from_numpy(np.asarray(basis, np.float32)))
        self.has_basis = classifier.basis is not None
        self.row_l2_normalised = bool(classifier.head["row_l2_normalised"])
        self.unit_rows = bool(classifier.head["unit_rows"])
        self.features = features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = self.features(x) if self.features is not None else x.float()
        if self.row_l2_normalised:
            norms = rows.norm(dim=1, keepdim=True)
            rows = rows / torch.where(norms > 0, norms, torch.ones_like(norms))
        rows = (rows - self.mean) / self.scale
        if self.has_basis:
            # as pillar predict: float64 sums, rounded once
            rows = (rows.double() @ self.basis.double()).float()
        if self.unit_rows:
            rows = rows / rows.norm(dim=1, keepdim=True).clamp_min(1e-12)
        logits = (rows.double() @ self.weights.double() + self.bias.double()).float()
        return torch.softmax(logits, dim=1)


class NetworkModule(torch.nn.Module):
    """uint8 images (N, H, W, C) → pixel rows by the recorded embedder → the network's NCHW images →
    probabilities."""

    def __init__(
        self, features: torch.nn.Module, network: torch.nn.Module, input_shape: tuple[int, int, int]
    ):
        super().__init__()
        self.features, self.network, self.input_shape = features, network, input_shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        height, width, channels = self.input_shape
        images = self.features(x).reshape(-1, height, width, channels).permute(0, 3, 1, 2)
        # as pillar predict: float64 softmax
        return torch.softmax(self.network(images).double(), dim=1).float()


def image_shape(classifier: Classifier) -> tuple[int, ...] | None:
    """(H, W, C) of the images the classifier's rows were embedded from; None for vector data."""
    recipe = classifier.features
    if recipe.reads_images:
        return recipe.image_shape
    if recipe.backbone == "pixels" and len(recipe.input_shape or ()) == 1:
        return None
    raise UsageError(
        "the classifier's feature recipe records no image shape, so an export from images cannot be "
        f"traced; pass {param('features_only', True)} and embed the inputs as recorded"
    )


def export_classifier(
    classifier: Classifier,
    fmt: str,
    out: Path,
    *,
    features_only: bool = False,
    weights: Path | None = None,
    trust_checkpoint: bool = False,
    force: bool = False,
    metrics: dict | None = None,
    inputs: Sequence[Path | str] = (),
) -> str:
    """Write `classifier` as `fmt`; returns what the file's module reads ('features (N, D)' or 'uint8 images
    …'). From images, the module holds the embedder rebuilt from the recipe (its weights file, if it had one,
    given as `weights`) and computes in fp32. hf: a folder of model.safetensors, config.json and a model card
    README.md (release/card.py; `metrics`: an evaluation's row for the head's cell), checked against replacing
    more than an earlier export (release/folder.py; `inputs`: the files it reads)."""
    check_one_of(EXPORT_FORMATS)("format", fmt)
    if fmt == "hf":
        check_folder_target(out, inputs, force)
    if classifier.is_network and features_only:
        raise UsageError(
            f"the release holds a fine-tuned network, which reads the images themselves: export it from "
            f"images (drop {param('features_only', True)})"
        )
    shape = None if features_only or fmt in ("safetensors", "hf") else image_shape(classifier)
    features = None
    if shape is not None:
        features = embedder_for(
            classifier.features,
            weights=weights,
            device="cpu",
            trust_checkpoint=trust_checkpoint,
            runtime="torch",
        ).module()  # the module alone: no ONNX Runtime session
    if out.suffix.lower() not in SUFFIXES[fmt]:
        raise UsageError(
            f"{out}: an hf export is a folder, named without a suffix"
            if fmt == "hf"
            else f"{out}: a {fmt} file is named {' or '.join(SUFFIXES[fmt])}, so that readers know its format"
        )
    carried = (
        _metadata(classifier)
        | ({METRICS_KEY: metrics} if fmt == "hf" and metrics is not None else {})
        | (
            {}
            if fmt in ("safetensors", "hf")
            else {INPUT_KEY: input_contract(classifier.features, shape, len(classifier.mean))}
        )
    )
    module = (
        _network_module(classifier, features)
        if classifier.is_network
        else ClassifierModule(classifier, features)
    )
    if module is not None:
        module.eval().requires_grad_(False)
    pixels = f"uint{classifier.features.depth or 8}"
    example = (
        torch.zeros((2, *shape), dtype=getattr(torch, pixels))
        if shape is not None
        else torch.zeros((2, len(classifier.mean)), dtype=torch.float32)
    )
    if fmt == "hf":
        write_folder(out, lambda folder: _hf_folder(folder, classifier, module, carried))
        return "features (N, D) float32"
    with replacing(out, force) as tmp:
        if fmt == "safetensors":
            _write_safetensors(tmp, classifier, module, carried)
        elif fmt == "torchscript":
            with warnings.catch_warnings(), torch.no_grad():
                # TorchScript is deprecated in torch (still served); tracer warnings
                warnings.simplefilter("ignore")
                scripted = torch.jit.trace(module, example)
                torch.jit.save(scripted, str(tmp), _extra_files={EXTRA_FILE: "{}"})  # its members, to hash
                metadata = _with_contents(carried, contents_of(tmp, fmt))
                torch.jit.save(scripted, str(tmp), _extra_files={EXTRA_FILE: json.dumps(metadata)})
        else:
            _export_onnx(module, example, tmp, carried)
    return (
        "features (N, D) float32" if shape is None else f"{pixels} images (N, {', '.join(map(str, shape))})"
    )


def _with_contents(carried: dict, contents: dict[str, str]) -> dict[str, str]:
    """The pillar metadata of an export: what it carries and the hashes of the rest of the file, each as JSON
    under "pillar_<key>", and one hash over them all."""
    full = carried | {CONTENTS_KEY: contents}
    return {f"pillar_{key}": json.dumps(value) for key, value in full.items()} | {
        HASH_KEY: metadata_hash(full)
    }


def _write_safetensors(
    path: Path,
    classifier: Classifier,
    module: torch.nn.Module | None,
    carried: dict,
    files: dict[str, str] | None = None,
) -> None:
    """The head's tensors by name (a network's weights), with the pillar metadata: written once to hash the
    tensors, then with their hash (and the hashes of an hf folder's `files`)."""
    from safetensors.torch import save_file

    tensors = (
        {name: torch.from_numpy(np.ascontiguousarray(array)) for name, array in classifier.network.items()}
        if classifier.is_network
        else {
            name: buffer.contiguous()
            for name, buffer in module.named_buffers()
            if name != "basis" or module.has_basis
        }
    )
    _saved(save_file, tensors, path)
    contents = contents_of(path, "safetensors") | (files or {})
    _saved(save_file, tensors, path, metadata=_with_contents(carried, contents))


def _saved(save_file: Callable[..., None], tensors: dict, path: Path, **options: Any) -> None:
    """safetensors' save_file, whose I/O failures (a full disk) are its own error kind, raised as the
    OSError they are: one line on the command line, like every other write's."""
    from safetensors import SafetensorError

    try:
        save_file(tensors, str(path), **options)
    except SafetensorError as err:
        if "No space left on device" in str(err) or "StorageFull" in str(err):
            raise OSError(errno.ENOSPC, "No space left on device") from None
        raise OSError(errno.EIO, f"cannot write the safetensors weights: {first_line(err)}") from None


def _hf_folder(folder: Path, classifier: Classifier, module: torch.nn.Module | None, carried: dict) -> None:
    """A Hugging Face model folder: the card and config.json made from what the export carries, then the
    weights, whose metadata holds the hashes of both."""
    files = {
        "README.md": model_card(carried, carried.get(METRICS_KEY)).encode(),
        "config.json": hf_config(carried).encode(),
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    _write_safetensors(
        folder / HF_WEIGHTS,
        classifier,
        module,
        carried,
        {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    )


def _network_module(classifier: Classifier, features: torch.nn.Module | None) -> torch.nn.Module | None:
    """The released network behind the embedder (None for safetensors, which stores its weights alone)."""
    if features is None:
        return None
    spec = NetworkSpec.from_attrs(classifier.head["network"])
    network = load_state(build_network(spec), classifier.network, "the released network")
    return NetworkModule(features, network, spec.input_shape)


def _metadata(classifier: Classifier) -> dict:
    """What an export carries: the statement, class names, head and recipe, and the release it came from."""
    return {
        "privacy": classifier.privacy.to_attrs(),
        "class_names": classifier.class_names,
        "head": classifier.head,
        "features": classifier.features.to_attrs(),
        "release": {"content_hash": classifier.content_hash},
    }


def _export_onnx(module: torch.nn.Module, example: torch.Tensor, path: Path, carried: dict) -> None:
    try:
        import onnx
        import onnxscript  # noqa: F401  (torch's dynamo exporter writes through it)
    except ImportError:
        raise UsageError(
            "exporting ONNX needs the onnx and onnxscript packages: pip install onnx onnxscript (or "
            "the package's 'export' extra)"
        ) from None

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            module,
            (example,),
            input_names=["input"],
            output_names=["probabilities"],
            dynamic_shapes=({0: torch.export.Dim("batch")},),
            opset_version=18,
            dynamo=True,
            verbose=False,
        )
    program.save(str(path))
    model = onnx.load(str(path))
    for key, value in _with_contents(carried, contents_of(path, "onnx")).items():
        model.metadata_props.add(key=key, value=value)
    onnx.save(model, str(path))
