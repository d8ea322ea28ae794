"""Trainable networks on pixel images: the GSD paper's small CNN (at any width) and timm architectures made
trainable with per-sample gradients; a network stored in a model artifact as one array per weight, and the
network's penultimate features as a backbone.

A network reads NCHW images in [0, 1] (a pixels-embeddings row, flattened HWC / 255, reshaped), so a network
fine-tuned by `pillar finetune`, pre-trained by `pillar pretrain` and embedded with by `pillar embed
--backbone network` sees the same inputs everywhere.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.network import is_network, stored_state
from pillar_cli.embedding.features import ReadyFeatures
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.lazy import torch


@dataclass(frozen=True)
class NetworkSpec:
    """What builds a network again: its architecture (`cnn`, `cnn:WIDTH` or a timm name), the image layout it
    reads (height, width, channels) and its number of classes."""

    architecture: str
    input_shape: tuple[int, int, int]
    num_classes: int

    def to_attrs(self) -> dict:
        return asdict(self) | {"input_shape": list(self.input_shape), "inputs": "NCHW pixels in [0, 1]"}

    @classmethod
    def from_attrs(cls, attrs: dict) -> NetworkSpec:
        return cls(
            str(attrs["architecture"]), tuple(int(n) for n in attrs["input_shape"]), int(attrs["num_classes"])
        )


def small_cnn(channels: int, num_classes: int, seed: int, width: int = 1) -> torch.nn.Module:
    """The probe CNN of Gu, Kamath, Wu: two stride-2 3×3 conv layers (8 and 16 channels, ×`width`; ReLU),
    global average pool, linear."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            OrderedDict(
                conv1=torch.nn.Conv2d(channels, 8 * width, 3, stride=2, padding=1),
                relu1=torch.nn.ReLU(),
                conv2=torch.nn.Conv2d(8 * width, 16 * width, 3, stride=2, padding=1),
                relu2=torch.nn.ReLU(),
                pool=torch.nn.AdaptiveAvgPool2d(1),
                flatten=torch.nn.Flatten(),
                fc=torch.nn.Linear(16 * width, num_classes),
            )
        )


def build_network(spec: NetworkSpec, seed: int = 0) -> torch.nn.Module:
    """The network of `spec`, randomly initialised (seeded). timm networks get GroupNorm for BatchNorm (no
    statistic shared across a batch's samples, as per-sample clipping needs), no in-place activations, and a
    copy after each normalisation layer, so opacus' hooks can record every layer."""
    channels = spec.input_shape[2]
    name, _, width = spec.architecture.partition(":")
    if name == "cnn":
        if width and not (width.isdigit() and int(width) > 0):
            raise UsageError(
                f"{param('arch')} cnn:WIDTH needs a positive integer width; got '{spec.architecture}'"
            )
        return small_cnn(channels, spec.num_classes, seed, int(width or 1))
    import timm
    from opacus.validators import ModuleValidator

    from pillar_cli.embedding.modules import Fresh

    if not timm.is_model(spec.architecture):
        raise UsageError(
            f"unknown {param('arch')} '{spec.architecture}': cnn, cnn:WIDTH or a timm model name"
        )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ModuleValidator.fix(
            timm.create_model(
                spec.architecture, pretrained=False, num_classes=spec.num_classes, in_chans=channels
            )
        )
    for layer in list(model.modules()):
        if hasattr(layer, "inplace"):
            layer.inplace = False
        for child_name, child in list(layer.named_children()):
            if isinstance(child, torch.nn.GroupNorm):
                setattr(layer, child_name, torch.nn.Sequential(OrderedDict(norm=child, fresh=Fresh())))
    return model


def pretrained_network(model: Artifact) -> tuple[NetworkSpec, dict[str, np.ndarray]]:
    """The network of a `pillar pretrain` artifact. Any other model is refused: a network trained on private
    rows carries an ε that whatever starts from it, or embeds with it, does not account."""
    methods = sorted(set(model.array("runs/method").tolist())) if is_network(model) else []
    if methods != ["pretrain"]:
        raise DataError(
            f"{model.path} holds no network pre-trained on public data (methods: "
            f"{', '.join(methods) or 'none'}); a network trained on private rows carries an ε that "
            "nothing built on it accounts",
            hint="use a pillar pretrain artifact",
        )
    if (count := len(model.array("runs/method"))) != 1:
        raise DataError(f"{model.path} holds {count} pre-trained networks; pre-train with one seed")
    return NetworkSpec.from_attrs(ModelRecord.of(model).network), stored_state(model, 0)


def state_arrays(model: torch.nn.Module) -> dict[str, np.ndarray]:
    """The weights as float32 arrays, by parameter name (how a model artifact stores a network)."""
    return {
        name: tensor.detach().cpu().numpy().astype(np.float32) for name, tensor in model.state_dict().items()
    }


def load_state(model: torch.nn.Module, state: dict[str, np.ndarray], what: str) -> torch.nn.Module:
    """Load `state` strictly; a state of another architecture is one DataError naming `what`."""
    try:
        model.load_state_dict({name: torch.as_tensor(array) for name, array in state.items()}, strict=True)
    except RuntimeError as err:
        raise DataError(
            f"{what} does not fit the network: {str(err).splitlines()[1 if ':' in str(err) else 0].strip()}"
        ) from None
    return model


def as_images(rows: np.ndarray | torch.Tensor, spec: NetworkSpec) -> torch.Tensor:
    """Flattened HWC pixel rows in [0, 1] → NCHW float32 images."""
    height, width, channels = spec.input_shape
    return torch.as_tensor(rows, dtype=torch.float32).reshape(-1, height, width, channels).permute(0, 3, 1, 2)


def network_logits(
    model: torch.nn.Module, rows: np.ndarray, spec: NetworkSpec, batch: int = 1024
) -> np.ndarray:
    """The network's logits on flattened pixel rows, in batches."""
    model.eval()
    with torch.no_grad():
        return np.concatenate(
            [model(as_images(rows[i : i + batch], spec)).numpy() for i in range(0, len(rows), batch)]
            or [np.zeros((0, spec.num_classes), np.float32)]
        )


def feature_extractor(model: torch.nn.Module) -> torch.nn.Module:
    """The network without its classifier: its penultimate (pooled) features."""
    if isinstance(model, torch.nn.Sequential):
        return torch.nn.Sequential(*list(model.children())[:-1])
    model.reset_classifier(0)
    return model


class NetworkEmbedder:
    """A network's penultimate features of images (pixels resized to the network's input size, /255)."""

    def __init__(self, model: torch.nn.Module, spec: NetworkSpec, weights_id: str, device: torch.device):
        from pillar_cli.embedding.modules import NetworkFeatures

        self.spec, self.weights_id, self.device = spec, weights_id, device
        self._features = NetworkFeatures(feature_extractor(model), spec.input_shape).eval().to(device)
        with torch.no_grad():
            self.feature_dim = int(
                self._features(torch.zeros(1, *spec.input_shape, dtype=torch.uint8, device=device)).shape[1]
            )

    def info(self) -> dict[str, Any]:
        height, width, _ = self.spec.input_shape
        return {
            "backbone": "network",
            "weights": self.weights_id,
            "network": self.spec.to_attrs(),
            "preprocessing": f"resize {height}×{width} (bilinear, antialiased), /255; penultimate features",
        }

    def module(self) -> torch.nn.Module:
        """uint8 NHWC images → the features (what an export carries); moves the network to the CPU."""
        return self._features.cpu()

    def __call__(self, batch: np.ndarray | torch.Tensor) -> np.ndarray:
        with torch.inference_mode():
            return self._features(torch.as_tensor(np.asarray(batch)).to(self.device)).cpu().numpy()

    def submit(self, batch: np.ndarray | torch.Tensor):
        return ReadyFeatures(self(batch))
