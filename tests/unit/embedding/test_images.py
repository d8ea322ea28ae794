"""The image operations shared by the embedders' preprocessing and the GSD image probes."""

from __future__ import annotations

import pytest
import torch

from pillar_cli.embedding.images import match_channels, normalise, resize
from pillar_cli.errors import DataError


def test_channels_are_repeated_from_grey_and_averaged_to_grey():
    grey = torch.rand(2, 1, 4, 5)
    rgb = match_channels(grey, 3)
    assert rgb.shape == (2, 3, 4, 5) and all(torch.equal(rgb[:, c], grey[:, 0]) for c in range(3))
    colour = torch.rand(2, 3, 4, 5)
    torch.testing.assert_close(match_channels(colour, 1), colour.mean(1, keepdim=True))
    assert match_channels(colour, 3) is colour


def test_other_channel_counts_are_a_clear_error():
    with pytest.raises(DataError, match=r"^cannot turn 4-channel images into 3-channel inputs$"):
        match_channels(torch.rand(1, 4, 2, 2), 3)


def test_resize_keeps_images_at_their_size_and_preserves_a_constant_image():
    images = torch.rand(1, 3, 8, 8)
    assert resize(images, (8, 8)) is images
    constant = torch.full((1, 1, 28, 28), 0.25)
    torch.testing.assert_close(resize(constant, (12, 9)), torch.full((1, 1, 12, 9), 0.25))


def test_normalise_per_channel_and_broadcast():
    images = torch.ones(1, 3, 2, 2)
    out = normalise(images, (0.5, 0.0, 1.0), (0.5, 2.0, 1.0))
    assert torch.equal(out[0, :, 0, 0], torch.tensor([1.0, 0.5, 0.0]))
    assert torch.equal(normalise(images, (0.5,), (0.5,)), torch.ones(1, 3, 2, 2))
