"""The embedders' arithmetic as torch modules from uint8 (or, 16-bit, uint16) NHWC images to float32 features:
what `embed` runs and what an exported classifier carries inside, so both compute the same features."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from pillar_cli.embedding.images import (
    match_channels,
    normalise,
    resize,
    resize_and_crop,
    top_level,
    unit_pixels,
)


@dataclass(frozen=True)
class Preprocessing:
    """ImageNet-style: resize the short side, centre-crop, normalise; grey images are repeated to RGB."""

    resize: int
    crop: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    interpolation: str = "bilinear"

    def apply(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 or uint16 NHWC on any device → normalised float NCHW."""
        x = match_channels(unit_pixels(images.permute(0, 3, 1, 2)), 3)
        mode = "bicubic" if self.interpolation == "bicubic" else "bilinear"
        return normalise(resize_and_crop(x, self.resize, self.crop, mode), self.mean, self.std)

    def as_record(self) -> dict:
        """The values that rebuild it (an embeddings file's `transform`)."""
        return asdict(self) | {"mean": list(self.mean), "std": list(self.std)}


class PixelFeatures(torch.nn.Module):
    """Pixels in [0, 1] (/255, or /65,535 at 16 bits), flattened in HWC order, after an optional resize of the
    short side and centre crop."""

    def __init__(self, resize: int | None, crop: int | None):
        super().__init__()
        self.resize, self.crop = resize, crop

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.float()
        if self.resize:
            x = resize_and_crop(x.permute(0, 3, 1, 2), self.resize, self.crop).permute(0, 2, 3, 1)
        return x.reshape(x.shape[0], -1) / top_level(images)


class BackboneFeatures(torch.nn.Module):
    """A frozen timm backbone after its preprocessing."""

    def __init__(self, preprocessing: Preprocessing, model: torch.nn.Module):
        super().__init__()
        self.preprocessing, self.model = preprocessing, model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(self.preprocessing.apply(images)).float()


class NetworkFeatures(torch.nn.Module):
    """A pre-trained network's penultimate features: pixels in [0, 1], channels matched and resized to what it
    reads."""

    def __init__(self, model: torch.nn.Module, input_shape: tuple[int, int, int]):
        super().__init__()
        self.model, self.input_shape = model, input_shape

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = unit_pixels(images.permute(0, 3, 1, 2))
        return self.model(resize(match_channels(x, self.input_shape[2]), self.input_shape[:2])).float()


class Fresh(torch.nn.Module):
    """A copy of its input: what follows may then change it in place (timm's residual `x += shortcut`) without
    touching the view that opacus' backward hook returned for the layer before."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.clone()
