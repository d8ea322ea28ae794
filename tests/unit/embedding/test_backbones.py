"""The backbone registry's contract, the pixels backbone, and checkpoint key remapping."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pillar_cli.embedding.backbones import BACKBONES, build_embedder
from pillar_cli.embedding.weights import remap_state_dict


@pytest.mark.parametrize("name", [n for n, spec in BACKBONES.items() if spec.timm_id])
def test_every_registered_backbone_builds_and_gives_its_declared_features(name):
    embedder = build_embedder(name, (16, 16, 3), pretrained=False, resize=64, crop=64)
    images = np.random.default_rng(0).integers(0, 255, (2, 16, 16, 3), dtype=np.uint8)
    features = embedder(images)
    assert features.shape == (2, embedder.feature_dim) == (2, BACKBONES[name].feature_dim)
    assert BACKBONES[name].feature_dim == (1280 if name == "efficientnet-lite0" else 2048)
    assert np.isfinite(features).all()


def test_pixels_backbone_flattens_and_scales():
    embedder = build_embedder("pixels", (2, 2, 1))
    out = embedder(np.array([[[[0], [255]], [[51], [102]]]], dtype=np.uint8))
    np.testing.assert_allclose(out, [[0.0, 1.0, 0.2, 0.4]])


def test_remap_keeps_only_backbone_keys():
    wanted = {"conv1.weight", "fc.weight"} - {"fc.weight"}
    state = {"backbone.conv1.weight": torch.ones(1), "projector.weight": torch.ones(1)}
    assert list(remap_state_dict(state, wanted)) == ["conv1.weight"]
