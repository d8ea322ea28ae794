"""Image tensor operations shared by the embedders' preprocessing and the GSD image probes (NCHW floats)."""

from __future__ import annotations

from collections.abc import Sequence

from pillar_cli.errors import DataError
from pillar_cli.lazy import torch


def top_level(images: torch.Tensor) -> float:
    """The most a pixel of these images holds: 255 (uint8) or 65,535 (16-bit images, uint16)."""
    return 65535.0 if images.dtype == torch.uint16 else 255.0


def unit_pixels(images: torch.Tensor) -> torch.Tensor:
    """uint8 or uint16 pixels as floats in [0, 1]."""
    return images.float().div_(top_level(images))


def match_channels(images: torch.Tensor, channels: int) -> torch.Tensor:
    """Grey images repeated to `channels`, colour images averaged to grey; anything else is an error."""
    have = images.shape[1]
    if have == channels:
        return images
    if have == 1:
        return images.expand(-1, channels, -1, -1)
    if channels == 1:
        return images.mean(1, keepdim=True)
    raise DataError(f"cannot turn {have}-channel images into {channels}-channel inputs")


def resize(images: torch.Tensor, size: tuple[int, int], mode: str = "bilinear") -> torch.Tensor:
    """Antialiased resize to (height, width); a no-op at that size already."""
    if tuple(images.shape[-2:]) == tuple(size):
        return images
    return torch.nn.functional.interpolate(images, size=size, mode=mode, align_corners=False, antialias=True)


def normalise(images: torch.Tensor, mean: Sequence[float], std: Sequence[float]) -> torch.Tensor:
    """(x − mean) / std per channel (one value broadcasts over all channels)."""
    shape = (1, -1, 1, 1)
    return (images - torch.tensor(mean, device=images.device).view(shape)) / torch.tensor(
        std, device=images.device
    ).view(shape)


def resize_and_crop(
    images: torch.Tensor, short_side: int, crop: int | None, mode: str = "bilinear"
) -> torch.Tensor:
    """Resize NCHW images so that their short side is `short_side`, then centre-crop `crop` × `crop` (None:
    keep the resized image whole)."""
    height, width = (int(n) for n in images.shape[-2:])  # plain ints, also while traced for an export
    scale = short_side / min(height, width)
    floor = crop or 1
    size = (max(floor, round(height * scale)), max(floor, round(width * scale)))
    images = resize(images, size, mode)
    if crop is None:
        return images
    top, left = (size[0] - crop) // 2, (size[1] - crop) // 2
    return images[..., top : top + crop, left : left + crop]
