"""Probe models for Gradient Subspace Distance: the models whose per-sample gradients span a dataset's
subspace.

Every probe sits at FIXED initial weights (a function of the seed, or a weights file) and is differentiated on
random labels, so a dataset's gradient subspace depends on its inputs only. Three families (Gu, Kamath, Wu):
`linear` (softmax regression on embeddings, closed-form gradients), `cnn` (a small probe CNN: two conv layers
and a linear layer) and `timm:NAME` (a timm backbone; only the parameters named by `--trainable` are
differentiated). Image probes read pixel artifacts (`embed --backbone pixels`), whose `input_shape` restores
the HWC layout.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Protocol

import numpy as np

from pillar_cli.artifacts import FeatureRecipe
from pillar_cli.embedding.images import match_channels, normalise, resize
from pillar_cli.embedding.networks import small_cnn
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.lazy import torch
from pillar_cli.linear.gradients import per_sample_gradients


class Probe(Protocol):
    dim: int  # gradient dimension p
    description: str

    def gradients(self, inputs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """(rows, p) per-sample gradients of the cross-entropy loss at the probe's fixed weights."""
        ...

    def for_dataset(self, feature_dim: int, recipe: FeatureRecipe, what: str) -> Probe:
        """The same probe (same weights) reading another artifact's rows, or a DataError if it cannot."""
        ...


class LinearProbe:
    """Softmax regression on feature vectors; row i's gradient is vec([x_i, 1] ⊗ (softmax(x_i W + b) −
    e_{y_i}))."""

    def __init__(self, feature_dim: int, num_classes: int, seed: int, trainable_bias: bool = True):
        rng = np.random.default_rng(seed)
        self.weights = (rng.standard_normal((feature_dim, num_classes)) / np.sqrt(feature_dim)).astype(
            np.float32
        )
        self.bias = np.zeros(num_classes, np.float32)
        self.feature_dim, self.trainable_bias = feature_dim, trainable_bias
        self.dim = (feature_dim + trainable_bias) * num_classes
        self.description = (
            f"linear softmax on {feature_dim}-d features ({self.dim} parameters"
            f"{'' if trainable_bias else ', bias frozen'}), fixed init"
        )

    def gradients(self, inputs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        def as_float64(array: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(array, dtype=torch.float64)

        gradients = per_sample_gradients(
            as_float64(inputs), torch.as_tensor(labels), as_float64(self.weights), as_float64(self.bias)
        ).numpy()
        return gradients if self.trainable_bias else gradients[:, : self.dim]  # the bias's columns come last

    def for_dataset(self, feature_dim: int, recipe: FeatureRecipe, what: str) -> LinearProbe:
        if feature_dim != self.feature_dim:
            raise DataError(
                f"the private features have {self.feature_dim} dimensions, {what} {feature_dim}",
                hint="embed all sets with the same backbone",
            )
        return self


@dataclass(frozen=True)
class ImageLayout:
    """How pixel rows become probe inputs: the stored (H, W, C) and the probe's (height, width, channels)."""

    stored: tuple[int, int, int]
    height: int
    width: int
    channels: int
    mean: tuple[float, ...] = (0.0,)
    std: tuple[float, ...] = (1.0,)

    def images(self, pixels: np.ndarray) -> torch.Tensor:
        """Flattened HWC pixels in [0, 1] → normalised NCHW float32 at the probe's size and channel count."""
        x = torch.as_tensor(pixels, dtype=torch.float32).reshape(-1, *self.stored).permute(0, 3, 1, 2)
        x = resize(match_channels(x, self.channels), (self.height, self.width))
        return normalise(x, self.mean, self.std).contiguous()


class TorchProbe:
    """A torch module differentiated per sample (torch.func: vmap over grad) wrt its trainable parameters
    only.

    The module runs in eval mode: batch-norm layers use their stored statistics, so one sample's gradient does
    not depend on the others in its block.
    """

    def __init__(self, model: torch.nn.Module, trainable: list[str], layout: ImageLayout, description: str):
        self.model = model.eval()
        self.layout = layout
        params = dict(model.named_parameters())
        self._trainable = {name: params[name].detach() for name in trainable}
        self._frozen = {name: p.detach() for name, p in params.items() if name not in self._trainable}
        self._buffers = dict(model.named_buffers())
        self.dim = sum(p.numel() for p in self._trainable.values())
        self.description = (
            f"{description}; trainable {', '.join(trainable)} ({self.dim} parameters), fixed init"
        )

    def for_dataset(self, feature_dim: int, recipe: FeatureRecipe, what: str) -> TorchProbe:
        """Images of another size or channel count are resized and converted to the private set's layout."""
        clone = copy.copy(self)
        clone.layout = replace(self.layout, stored=stored_image_shape(recipe, feature_dim, what))
        return clone

    def gradients(self, inputs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        from torch.func import functional_call, grad, vmap

        def loss(
            trainable: dict[str, torch.Tensor], image: torch.Tensor, label: torch.Tensor
        ) -> torch.Tensor:
            logits = functional_call(self.model, (trainable, self._frozen, self._buffers), (image[None],))
            return torch.nn.functional.cross_entropy(logits, label[None])

        per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(
            self._trainable, self.layout.images(inputs), torch.as_tensor(labels, dtype=torch.long)
        )
        return torch.cat([g.reshape(len(inputs), -1) for g in per_sample.values()], dim=1).numpy()


def select_trainable(names: list[str], patterns: list[str]) -> list[str]:
    """Parameters named by a pattern: the name itself, anything under it (`fc` → `fc.weight`), or a glob."""

    def matches(name: str, pattern: str) -> bool:
        return (
            name == pattern
            or name.startswith(pattern + ".")
            or fnmatch(name, pattern)
            or fnmatch(name, pattern + ".*")
        )

    for pattern in patterns:
        if not any(matches(name, pattern) for name in names):
            raise UsageError(
                f"{param('trainable')} '{pattern}' matches no parameter of the probe",
                hint=f"parameter names look like {', '.join(names[:2])}, ..., {names[-1]}",
            )
    return [name for name in names if any(matches(name, pattern) for pattern in patterns)]


def stored_image_shape(recipe: FeatureRecipe, feature_dim: int, what: str) -> tuple[int, int, int]:
    """The (H, W, C) of a pixel artifact's rows, or a DataError saying how to produce one."""
    shape = recipe.input_shape
    if recipe.backbone != "pixels" or shape is None or len(shape) != 3 or int(np.prod(shape)) != feature_dim:
        raise DataError(
            f"{what} holds no images: image probes need pixel embeddings of an image source",
            hint=f"embed it with {param('backbone')} pixels (features are then flattened HWC pixels)",
        )
    return tuple(int(n) for n in shape)


@dataclass(frozen=True)
class ProbeSpec:
    """What `pillar gsd` was asked to probe with: `linear`, `cnn` or `timm:NAME` (+ trainable patterns,
    weights)."""

    family: str
    trainable: tuple[str, ...] = ()
    weights: Path | None = None
    image_size: int | None = None
    trainable_bias: bool = True  # the GSD authors' released script freezes biases

    @classmethod
    def parse(
        cls, text: str, trainable: list[str], weights: Path | None, image_size: int | None
    ) -> ProbeSpec:
        if text not in ("linear", "cnn") and not text.startswith("timm:"):
            raise UsageError(f"{param('probe')} must be linear, cnn or timm:NAME; got '{text}'")
        if text == "linear" and (trainable or weights or image_size):
            raise UsageError(
                f"{param('trainable')}, {param('probe_weights')} and {param('probe_size')} apply to image "
                "probes (cnn, timm:NAME)"
            )
        if text == "cnn" and weights is not None:
            raise UsageError(
                f"{param('probe_weights')} applies to timm probes; the cnn probe is always at its seeded init"
            )
        return cls(text, tuple(trainable), weights, image_size)

    def build(
        self, feature_dim: int, recipe: FeatureRecipe, num_classes: int, seed: int
    ) -> LinearProbe | TorchProbe:
        """The probe for the private split, whose rows `recipe` says how were made."""
        if self.family == "linear":
            return LinearProbe(feature_dim, num_classes, seed, self.trainable_bias)
        stored = stored_image_shape(recipe, feature_dim, "the private split")
        size = (self.image_size, self.image_size) if self.image_size else stored[:2]
        if self.family == "cnn":
            model = small_cnn(stored[2], num_classes, seed)
            layout = ImageLayout(stored, *size, stored[2], (0.5,), (0.5,))
            default_trainable = [name for name, _ in model.named_parameters()]
            description = f"small CNN on {size[0]}×{size[1]}×{stored[2]} images"
        else:
            model, layout, default_trainable = _timm_probe(
                self.family.removeprefix("timm:"), stored, size, num_classes, seed, self.weights
            )
            description = f"{self.family} on {size[0]}×{size[1]} images ({_weights_note(self.weights, seed)})"
        names = [name for name, _ in model.named_parameters()]
        trainable = select_trainable(names, list(self.trainable)) if self.trainable else default_trainable
        if not self.trainable_bias:
            trainable = [name for name in trainable if not name.endswith("bias")]
        return TorchProbe(model, trainable, layout, description)


def _timm_probe(
    name: str,
    stored: tuple[int, int, int],
    size: tuple[int, int],
    num_classes: int,
    seed: int,
    weights: Path | None,
) -> tuple[torch.nn.Module, ImageLayout, list[str]]:
    """A timm model with a fresh seeded `num_classes` head; its backbone from `weights` or its seeded init."""
    import timm

    from pillar_cli.embedding.weights import load_weights_file

    if not timm.is_model(name):
        raise UsageError(f"{param('probe')} timm:{name}: '{name}' is not a timm model")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = timm.create_model(name, pretrained=False, num_classes=0)
        if weights is not None:
            load_weights_file(model, weights)
        model.reset_classifier(num_classes)
    config = timm.data.resolve_model_data_config(model)
    layout = ImageLayout(stored, *size, 3, tuple(config["mean"]), tuple(config["std"]))
    head = model.pretrained_cfg.get("classifier", "fc")
    return model, layout, [n for n, _ in model.named_parameters() if n == head or n.startswith(head + ".")]


def _weights_note(weights: Path | None, seed: int) -> str:
    return f"weights {weights}" if weights is not None else f"random init, seed {seed}"
