"""Gradient subspace distance: per-sample gradients, the projection metric, orderings on real data, DP-GSD."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PIL import Image

from pillar_cli.data import SourceOptions, load_source
from pillar_cli.gsd import DPSettings, gradient_subspace_distances, per_sample_gradients, projection_metric


def test_per_sample_gradients_equal_single_sample_backward_passes():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 5)), rng.integers(0, 3, 6)
    w, b = rng.standard_normal((5, 3)), rng.standard_normal(3)
    grads = per_sample_gradients(x, y, w, b)
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


def test_gsd_orders_same_distribution_then_shifted_then_noise(pillar, mnist, tmp_path):
    digits = load_source("digits", SourceOptions())
    upscaled = np.stack([np.asarray(Image.fromarray(im[..., 0]).resize((28, 28), Image.BILINEAR)) for im in digits.inputs])
    np.savez(tmp_path / "digits28.npz", x=upscaled.astype(np.uint8), y=digits.labels)
    noise = np.random.default_rng(0).integers(0, 256, (1797, 28, 28), dtype=np.uint8)
    np.savez(tmp_path / "noise.npz", x=noise, y=digits.labels)
    for name in ("digits28", "noise"):
        pillar("embed", "--source", "npz", "--path", tmp_path / f"{name}.npz", "--public-fraction", "0.5",
               "-o", tmp_path / f"{name}.h5")
    result = pillar("gsd", "--private", f"{mnist['emb']}:private", "--public", f"{mnist['emb']}:test",
                    "--public", f"{tmp_path / 'digits28.h5'}:public", "--public", f"{tmp_path / 'noise.h5'}:public",
                    "--k", "8", "-o", tmp_path / "gsd.h5", "--json")
    ranking = json.loads(result.stdout)["ranking"]
    assert [r["candidate"].rsplit("/", 1)[-1] for r in ranking] == ["emb.h5:test", "digits28.h5:public",
                                                                     "noise.h5:public"]


def test_dp_gsd_agrees_at_large_epsilon_and_is_noisier_at_small_epsilon():
    digits = load_source("digits", SourceOptions())
    x = digits.inputs.reshape(len(digits.inputs), -1).astype(np.float32) / 255
    private, public = x[:1000], x[1000:]
    exact, _ = gradient_subspace_distances(private, [public], 10, 5, seed=0, max_samples=1000)
    loose, release = gradient_subspace_distances(private, [public], 10, 5, seed=0, max_samples=1000,
                                                 dp=DPSettings(50.0, 1e-5, 10.0))
    tight, _ = gradient_subspace_distances(private, [public], 10, 5, seed=0, max_samples=1000,
                                           dp=DPSettings(0.5, 1e-5, 10.0))
    assert abs(loose[0] - exact[0]) <= 0.05
    assert tight[0] > loose[0] + 0.05
    assert release.rows == 1000 and release.noise_multiplier > 0
