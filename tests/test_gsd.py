"""Gradient subspace distance: per-sample gradients, the projection metric, orderings on real data, DP-GSD."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from pillar_cli.data import SourceOptions, load_source
from pillar_cli.gsd.distance import GSDSettings, plan_gsd, projection_metric
from pillar_cli.gsd.probes import LinearProbe
from pillar_cli.gsd.releases import DPSettings


def test_per_sample_gradients_equal_single_sample_backward_passes():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 5)), rng.integers(0, 3, 6)
    probe = LinearProbe(5, 3, seed=0)
    probe.weights, probe.bias = rng.standard_normal((5, 3)), rng.standard_normal(3)
    w, b = probe.weights, probe.bias
    grads = probe.gradients(x, y)
    for i in range(6):
        wi = torch.tensor(w, requires_grad=True)
        bi = torch.tensor(b, requires_grad=True)
        loss = torch.nn.functional.cross_entropy((torch.tensor(x[i]) @ wi + bi)[None], torch.tensor(y[i:i + 1]))
        loss.backward()
        expected = torch.cat([wi.grad, bi.grad[None]]).numpy().ravel()
        np.testing.assert_allclose(grads[i], expected, atol=1e-12)


def test_projection_metric_properties():
    rng = np.random.default_rng(1)
    v, _ = np.linalg.qr(rng.standard_normal((20, 4)))
    rotation, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    assert projection_metric(v, v) == pytest.approx(0.0, abs=1e-7)
    assert projection_metric(v, v @ rotation) == pytest.approx(0.0, abs=1e-7)  # a basis change is the same subspace
    full, _ = np.linalg.qr(rng.standard_normal((20, 8)))
    assert projection_metric(full[:, :4], full[:, 4:]) == pytest.approx(1.0)
    for _ in range(20):
        a, _ = np.linalg.qr(rng.standard_normal((20, 4)))
        b, _ = np.linalg.qr(rng.standard_normal((20, 4)))
        assert 0.0 <= projection_metric(a, b) <= 1.0
        assert projection_metric(a, b) == pytest.approx(projection_metric(b, a))


@pytest.fixture(scope="module")
def candidates(pillar, tmp_path_factory) -> dict[str, str]:
    """Pixel embeddings of digits at 8×8 (as stored) and upscaled to 28×28, and of uniform noise images."""
    root = tmp_path_factory.mktemp("gsd")
    digits = load_source("digits", SourceOptions())
    upscaled = np.stack([np.asarray(Image.fromarray(im[..., 0]).resize((28, 28), Image.BILINEAR)) for im in digits.inputs])
    np.savez(root / "digits28.npz", x=upscaled.astype(np.uint8), y=digits.labels)
    noise = np.random.default_rng(0).integers(0, 256, (1797, 28, 28), dtype=np.uint8)
    np.savez(root / "noise.npz", x=noise, y=digits.labels)
    for name in ("digits28", "noise"):
        pillar("embed", "--source", "npz", "--path", root / f"{name}.npz", "--public-fraction", "0.5",
               "-o", root / f"{name}.h5")
    pillar("embed", "--source", "digits", "--public-fraction", "0.5", "-o", root / "digits8.h5")
    return {name: f"{root / name}.h5:public" for name in ("digits28", "digits8", "noise")}


@pytest.mark.parametrize("probe", [
    ["--probe", "linear"],
    ["--probe", "cnn", "--max-samples", "1000"],
    ["--probe", "timm:resnet18", "--trainable", "fc", "--probe-size", "32", "--max-samples", "200"],
])
def test_gsd_orders_same_distribution_then_shifted_then_noise(pillar, mnist, candidates, tmp_path, probe):
    images_only = [] if probe[1] == "linear" else ["--public", candidates["digits8"]]  # 8×8: resized by the probe
    result = pillar("gsd", *probe, "--private", f"{mnist['emb']}:private", "--public", f"{mnist['emb']}:test",
                    "--public", candidates["digits28"], *images_only, "--public", candidates["noise"],
                    "--k", "8", "-o", tmp_path / "gsd.h5", "--json")
    ranking = [r["candidate"].rsplit("/", 1)[-1] for r in json.loads(result.stdout)["ranking"]]
    assert ranking[0] == "emb.h5:test" and ranking[-1] == "noise.h5:public"
    assert "digits28.h5:public" in ranking[1:-1]


def test_timm_probe_names_its_trainable_parameters_and_refuses_zero_gradients(pillar, mnist, tmp_path):
    args = ["gsd", "--probe", "timm:resnet18", "--probe-size", "32", "--max-samples", "50", "--k", "4",
            "--private", f"{mnist['emb']}:private", "--public", f"{mnist['emb']}:test"]
    result = pillar(*args, "--trainable", "layer4.1.bn2", "--trainable", "fc", "-o", tmp_path / "a.h5", "--json")
    assert json.loads(result.stdout)["settings"]["probe"].startswith(
        "timm:resnet18 on 32×32 images (random init, seed 0); trainable layer4.1.bn2.weight, layer4.1.bn2.bias, "
        "fc.weight, fc.bias (6154 parameters)")
    # a random-init ResNet zero-initialises each block's last BN scale: nothing before it gets a gradient
    failed = pillar(*args, "--trainable", "layer4.1.conv1", "-o", tmp_path / "b.h5", expect=4)
    assert failed.stderr.startswith("error: the per-sample gradients have rank 0 < --k 4: the probe cannot tell "
                                    "this data apart\n")
    assert not (tmp_path / "b.h5").exists()


def test_dp_gsd_agrees_at_large_epsilon_and_is_noisier_at_small_epsilon():
    digits = load_source("digits", SourceOptions())
    x = digits.inputs.reshape(len(digits.inputs), -1).astype(np.float32) / 255
    probe = LinearProbe(64, 10, seed=0)
    private, public = (x[:1000], probe), [(x[1000:], probe)]

    def distance(dp: DPSettings | None) -> float:
        return plan_gsd(private, public, GSDSettings(5, 10, max_samples=1000, dp=dp)).run()[0][0]

    exact = distance(None)
    loose, tight = distance(DPSettings(50.0, 1e-5, 10.0)), distance(DPSettings(0.5, 1e-5, 10.0))
    assert abs(loose - exact) <= 0.05
    assert tight > loose + 0.05
