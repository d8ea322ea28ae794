"""pillar gsd on real data: same distribution < shifted < noise for every probe; timm probes' parameters."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from pillar_cli.data import SourceOptions, load_source

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def candidates(pillar, tmp_path_factory) -> dict[str, str]:
    """Pixel embeddings of digits at 8×8 (as stored) and upscaled to 28×28, and of uniform noise images."""
    root = tmp_path_factory.mktemp("gsd")
    digits = load_source("digits", SourceOptions())
    upscaled = np.stack(
        [np.asarray(Image.fromarray(im[..., 0]).resize((28, 28), Image.BILINEAR)) for im in digits.inputs]
    )
    np.savez(
        root / "digits28.npz", x=upscaled.astype(np.uint8), y=digits.labels, class_names=digits.class_names
    )
    noise = np.random.default_rng(0).integers(0, 256, (1797, 28, 28), dtype=np.uint8)
    np.savez(root / "noise.npz", x=noise, y=digits.labels, class_names=digits.class_names)
    for name in ("digits28", "noise"):
        pillar(
            "embed",
            "--source",
            "npz",
            "--path",
            root / f"{name}.npz",
            "--public-fraction",
            "0.5",
            "-o",
            root / f"{name}.h5",
        )
    pillar("embed", "--source", "digits", "--public-fraction", "0.5", "-o", root / "digits8.h5")
    return {name: f"{root / name}.h5:public" for name in ("digits28", "digits8", "noise")}


@pytest.mark.parametrize(
    "probe",
    [
        ["--probe", "linear"],
        ["--probe", "cnn", "--max-samples", "1000"],
        ["--probe", "timm:resnet18", "--trainable", "fc", "--probe-size", "32", "--max-samples", "200"],
    ],
)
def test_gsd_orders_same_distribution_then_shifted_then_noise(pillar, mnist, candidates, tmp_path, probe):
    # 8×8: resized by the probe
    images_only = [] if probe[1] == "linear" else ["--public", candidates["digits8"]]
    result = pillar(
        "gsd",
        *probe,
        "--private",
        f"{mnist['emb']}:private",
        "--public",
        f"{mnist['emb']}:test",
        "--public",
        candidates["digits28"],
        *images_only,
        "--public",
        candidates["noise"],
        "--k",
        "8",
        "-o",
        tmp_path / "gsd.h5",
        "--json",
    )
    ranking = [r["candidate"].rsplit("/", 1)[-1] for r in json.loads(result.stdout)["ranking"]]
    assert ranking[0] == "emb.h5:test" and ranking[-1] == "noise.h5:public"
    assert "digits28.h5:public" in ranking[1:-1]


def test_timm_probe_names_its_trainable_parameters_and_refuses_zero_gradients(pillar, mnist, tmp_path):
    args = [
        "gsd",
        "--probe",
        "timm:resnet18",
        "--probe-size",
        "32",
        "--max-samples",
        "50",
        "--k",
        "4",
        "--private",
        f"{mnist['emb']}:private",
        "--public",
        f"{mnist['emb']}:test",
    ]
    result = pillar(
        *args, "--trainable", "layer4.1.bn2", "--trainable", "fc", "-o", tmp_path / "a.h5", "--json"
    )
    assert json.loads(result.stdout)["settings"]["probe"].startswith(
        "timm:resnet18 on 32×32 images (random init, seed 0); trainable layer4.1.bn2.weight, "
        "layer4.1.bn2.bias, fc.weight, fc.bias (6154 parameters)"
    )
    # a random-init ResNet zero-initialises each block's last BN scale: nothing before it gets a gradient
    failed = pillar(*args, "--trainable", "layer4.1.conv1", "-o", tmp_path / "b.h5", expect=4)
    assert failed.stderr.startswith(
        "error: the per-sample gradients have rank 0 < --k 4: the probe cannot tell this data apart\n"
    )
    assert not (tmp_path / "b.h5").exists()
