"""Checkpoint layouts loaded through embed --weights: features equal a direct forward pass; wrong files
fail."""

from __future__ import annotations

import numpy as np
import pytest
import timm
import torch
from torchvision.transforms import v2

from pillar_cli import artifacts
from pillar_cli.data import SourceOptions, SplitPlan, load_source, make_splits

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def _checkpoints(model: torch.nn.Module) -> dict[str, dict]:
    state = model.state_dict()
    head = {"fc.weight": torch.zeros(10, 512), "fc.bias": torch.zeros(10)}
    return {
        "torchvision": dict(state),
        "solo-learn": {
            "state_dict": {
                **{f"backbone.{k}": v for k, v in state.items()},
                "projector.0.weight": torch.zeros(4, 4),
            }
        },
        "moco": {
            "state_dict": {
                **{f"module.encoder_q.{k}": v for k, v in {**state, **head}.items()},
                "module.encoder_k.conv1.weight": torch.zeros(1),
            }
        },
    }


@pytest.mark.parametrize("layout", ["torchvision", "solo-learn", "moco"])
def test_weights_file_loads_and_features_equal_a_direct_forward_pass(tmp_path, pillar, layout):
    torch.manual_seed(0)
    reference = timm.create_model("resnet18", pretrained=False, num_classes=0).eval()
    torch.save(_checkpoints(reference)[layout], tmp_path / "w.pt")
    out = tmp_path / "emb.h5"
    pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "resnet18",
        "--weights",
        tmp_path / "w.pt",
        "--resize",
        "40",
        "--crop",
        "32",
        "--batch-size",
        "128",
        "-o",
        out,
    )
    split = artifacts.read_split(f"{out}:val")
    digits = load_source("digits", SourceOptions())
    ids = make_splits(digits, SplitPlan())["val"]
    np.testing.assert_array_equal(split.index, ids)
    transform = v2.Compose(
        [
            v2.Resize(40, interpolation=v2.InterpolationMode.BICUBIC, antialias=True),
            v2.CenterCrop(32),
            v2.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
        ]
    )
    images = torch.from_numpy(digits.inputs[ids]).permute(0, 3, 1, 2).float().div(255).expand(-1, 3, -1, -1)
    with torch.inference_mode():
        expected = reference(transform(images)).numpy()
    np.testing.assert_allclose(split.features, expected, rtol=1e-4, atol=1e-4)
    assert split.attrs["weights"].startswith("file:") and split.attrs["backbone"] == "resnet18"


def test_a_checkpoint_of_another_architecture_fails_loudly(tmp_path, pillar):
    other = timm.create_model("resnet34", pretrained=False, num_classes=0)
    torch.save({"state_dict": {f"backbone.{k}": v for k, v in other.state_dict().items()}}, tmp_path / "w.pt")
    result = pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "resnet18",
        "--weights",
        tmp_path / "w.pt",
        "--resize",
        "40",
        "--crop",
        "32",
        "-o",
        tmp_path / "e.h5",
        expect=4,
    )
    assert result.stderr == (
        "error: checkpoint has 96 weights the backbone lacks (e.g. backbone.layer1.2.bn1.bias): "
        "it belongs to another architecture\n"
    )
    deeper = timm.create_model("resnet18", pretrained=False, num_classes=0).state_dict()
    torch.save({k: v for k, v in deeper.items() if not k.startswith("layer4")}, tmp_path / "partial.pt")
    result = pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "resnet18",
        "--weights",
        tmp_path / "partial.pt",
        "-o",
        tmp_path / "e.h5",
        expect=4,
    )
    assert result.stderr.startswith(f"error: {tmp_path / 'partial.pt'} does not fit the backbone: ")
    assert not (tmp_path / "e.h5").exists()


def test_safetensors_and_untrusted_lightning_checkpoints(tmp_path, pillar):
    import argparse

    from safetensors.torch import save_file

    torch.manual_seed(1)
    reference = timm.create_model("resnet18", pretrained=False, num_classes=0).eval()
    save_file({k: v.contiguous() for k, v in reference.state_dict().items()}, str(tmp_path / "w.safetensors"))
    common = [
        "--source",
        "digits",
        "--limit",
        "40",
        "--backbone",
        "resnet18",
        "--resize",
        "40",
        "--crop",
        "32",
    ]
    pillar("embed", *common, "--weights", tmp_path / "w.safetensors", "-o", tmp_path / "a.h5")
    lightning = {
        "state_dict": {f"backbone.{k}": v for k, v in reference.state_dict().items()},
        "hyper_parameters": argparse.Namespace(lr=0.1),
    }
    torch.save(lightning, tmp_path / "w.ckpt")
    refused = pillar("embed", *common, "--weights", tmp_path / "w.ckpt", "-o", tmp_path / "b.h5", expect=4)
    assert refused.stderr.startswith(f"error: cannot load weights from {tmp_path / 'w.ckpt'}")
    assert refused.stderr.splitlines()[-1].startswith(
        "hint: a Lightning checkpoint may hold more than tensors"
    )
    pillar("embed", *common, "--weights", tmp_path / "w.ckpt", "--trust-checkpoint", "-o", tmp_path / "b.h5")
    first = artifacts.read_split(f"{tmp_path / 'a.h5'}:private").features
    np.testing.assert_allclose(
        artifacts.read_split(f"{tmp_path / 'b.h5'}:private").features, first, atol=1e-6
    )
