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


def test_hub_weights_without_network_are_one_line_naming_why_and_the_hub_client_never_retries(
    monkeypatch, tmp_path
):
    """Offline, the hub client retried for about a minute (20 retry lines) before the same refusal."""
    from huggingface_hub import constants

    from pillar_cli.embedding import hub
    from pillar_cli.errors import UsageError

    monkeypatch.setattr(hub, "reachable", lambda host, timeout=hub.CONNECT_SECONDS: False)
    # an empty cache, whatever this machine holds
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    was = constants.HF_HUB_OFFLINE
    with pytest.raises(UsageError) as refused:
        build_embedder("resnet50", (32, 32, 3))
    assert str(refused.value) == (
        "cannot fetch pretrained weights for 'resnet50' (huggingface.co cannot be reached "
        "and they are not in the local cache)"
    )
    assert refused.value.render()[1] == "offline: download the weights elsewhere and pass weights FILE"
    assert was == constants.HF_HUB_OFFLINE
    with hub.cache_only_when_offline() as online:
        assert not online and constants.HF_HUB_OFFLINE
    assert was == constants.HF_HUB_OFFLINE


def test_random_weights_contact_no_hub(monkeypatch):
    """Only a fetch of hub weights probes the network: random or packaged weights never contact a host."""
    from pillar_cli.embedding import hub

    def probed(host, timeout=hub.CONNECT_SECONDS):
        raise AssertionError(f"probed {host}")

    monkeypatch.setattr(hub, "reachable", probed)
    embedder = build_embedder("resnet50", (32, 32, 3), pretrained=False)
    assert embedder.weights == "random-init:seed=0"
