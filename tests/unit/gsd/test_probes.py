"""GSD probes and subspaces: torch.func per-sample gradients, streamed randomized SVD, Bingham sampling."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pillar_cli.artifacts import FeatureRecipe
from pillar_cli.errors import DataError, UsageError
from pillar_cli.gsd.bingham import sample_matrix_bingham, sample_vector_bingham
from pillar_cli.gsd.distance import projection_metric
from pillar_cli.gsd.probes import LinearProbe, ProbeSpec, select_trainable
from pillar_cli.gsd.releases import DPSettings, dp_gradient_subspace
from pillar_cli.gsd.subspace import TOLERANCE, GradientMatrix, top_right_singular_vectors
from pillar_cli.randomness import NoiseSource

IMAGE_RECIPE = FeatureRecipe(backbone="pixels", input_shape=(12, 12, 1))


def loop_of_single_sample_gradients(probe, pixels: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The reference: one backward pass per sample through the module itself."""
    names = list(probe._trainable)
    params = dict(probe.model.named_parameters())
    images = probe.layout.images(pixels)
    rows = []
    for i in range(len(labels)):
        loss = torch.nn.functional.cross_entropy(
            probe.model(images[i : i + 1]), torch.tensor(labels[i : i + 1])
        )
        grads = torch.autograd.grad(loss, [params[n] for n in names])
        rows.append(torch.cat([g.reshape(-1) for g in grads]).numpy())
    return np.stack(rows)


@pytest.mark.parametrize(
    "family, trainable, size",
    [
        ("cnn", [], None),
        ("cnn", ["conv2", "fc.bias"], None),
        ("timm:resnet18", ["fc", "layer4.*.bn2", "layer3.0.conv1"], 24),
    ],
)
def test_torch_func_per_sample_gradients_equal_single_sample_backward_passes(family, trainable, size):
    rng = np.random.default_rng(0)
    pixels, labels = rng.uniform(0, 1, (5, 144)).astype(np.float32), rng.integers(0, 3, 5)
    probe = ProbeSpec.parse(family, trainable, None, size).build(144, IMAGE_RECIPE, 3, seed=0)
    grads = probe.gradients(pixels, labels)
    expected = loop_of_single_sample_gradients(probe, pixels, labels)
    assert grads.shape == (5, probe.dim) and probe.dim == sum(p.numel() for p in probe._trainable.values())
    np.testing.assert_allclose(grads, expected, rtol=1e-4, atol=1e-6 * np.abs(expected).max())
    assert np.abs(grads).max() > 0


def test_trainable_patterns_select_names_prefixes_and_globs():
    names = [
        "conv1.weight",
        "conv1.bias",
        "layer4.0.conv3.weight",
        "layer4.1.conv3.weight",
        "fc.weight",
        "fc.bias",
    ]
    assert select_trainable(names, ["fc"]) == ["fc.weight", "fc.bias"]
    assert select_trainable(names, ["layer4.*.conv3", "conv1.bias"]) == [
        "conv1.bias",
        "layer4.0.conv3.weight",
        "layer4.1.conv3.weight",
    ]
    with pytest.raises(UsageError, match=r"^trainable 'layer9' matches no parameter of the probe$"):
        select_trainable(names, ["layer9"])


def test_image_probes_refuse_feature_embeddings():
    with pytest.raises(DataError, match=r"^the private split holds no images"):
        ProbeSpec.parse("cnn", [], None, None).build(
            2048, FeatureRecipe(backbone="sl", feature_dim=2048), 10, 0
        )


class MatrixProbe:
    """Rows of a fixed matrix, selected by the first input column: a probe with a known spectrum."""

    def __init__(self, matrix: np.ndarray):
        self.matrix, self.dim = matrix, matrix.shape[1]

    def gradients(self, inputs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        return self.matrix[inputs[:, 0]]


def test_streamed_subspace_equals_the_exact_svd_and_its_cached_twin():
    rng = np.random.default_rng(0)
    left = np.linalg.qr(rng.standard_normal((300, 300)))[0]
    right = np.linalg.qr(rng.standard_normal((3000, 300)))[0]
    matrix = (left * 0.8 ** np.arange(300)) @ right.T
    exact = np.linalg.svd(matrix, full_matrices=False)[2][:8].T
    rows = np.arange(300)[:, None]
    computed = []
    for cache_bytes in (2**30, 0):
        gradients = GradientMatrix(MatrixProbe(matrix), rows, np.zeros(300, int), cache_bytes=cache_bytes)
        counted = []
        gradients.on_rows = counted.append
        subspace = top_right_singular_vectors(gradients, 8, seed=0)
        basis = subspace.basis
        assert subspace.method == ("exact" if cache_bytes else "randomized")
        assert sum(counted) <= 300 * gradients.passes(subspace=True)
        np.testing.assert_allclose(basis.T @ basis, np.eye(8), atol=1e-10)
        assert projection_metric(basis, exact) < 1e-5
        assert subspace.gap == pytest.approx(1 / 0.8, rel=1e-6)  # σ_8 / σ_9 of the 0.8^i spectrum
        computed.append(basis)
    assert projection_metric(*computed) < 1e-5


def test_a_clustered_spectrum_is_exact_by_default_and_flagged():
    """σ_k / σ_{k+1} = 1.01 (MNIST-like): the exact path matches numpy's SVD, the randomized path reaches its
    recorded tolerance, and the gap is reported."""
    rng = np.random.default_rng(3)
    left = np.linalg.qr(rng.standard_normal((400, 400)))[0]
    right = np.linalg.qr(rng.standard_normal((2000, 400)))[0]
    spectrum = np.r_[np.geomspace(10, 3, 8), 3 / 1.01 ** np.arange(1, 393)]
    matrix = (left * spectrum) @ right.T
    exact = np.linalg.svd(matrix, full_matrices=False)[2][:8].T
    rows = np.arange(400)[:, None]
    kept = top_right_singular_vectors(
        GradientMatrix(MatrixProbe(matrix), rows, np.zeros(400, int)), 8, seed=0
    )
    assert kept.method == "exact" and projection_metric(kept.basis, exact) < 1e-4
    assert kept.gap == pytest.approx(1.01, rel=1e-6)
    streamed = top_right_singular_vectors(
        GradientMatrix(MatrixProbe(matrix), rows, np.zeros(400, int), cache_bytes=0), 8, seed=0
    )
    assert streamed.method == "randomized" and streamed.tolerance <= TOLERANCE
    assert projection_metric(streamed.basis, exact) <= TOLERANCE  # within the recorded certificate


def test_rank_deficient_gradients_are_refused():
    matrix = np.outer(np.arange(1, 51), np.ones(40))  # rank 1
    gradients = GradientMatrix(MatrixProbe(matrix), np.arange(50)[:, None], np.zeros(50, int))
    with pytest.raises(DataError, match=r"^the per-sample gradients have rank 1 < k 3"):
        top_right_singular_vectors(gradients, 3, seed=0)


def test_vector_bingham_matches_quadrature_on_the_circle():
    """E[x₁²] under density ∝ exp(η(3x₁² + x₂²)) on the unit circle, against a 200,000-point quadrature."""
    rng = np.random.default_rng(0)
    eta = 1.5
    samples = np.array([sample_vector_bingham(np.diag([3.0, 1.0]), eta, rng) for _ in range(20_000)])
    angles = np.linspace(0, 2 * np.pi, 200_000, endpoint=False)
    weights = np.exp(eta * (3 * np.cos(angles) ** 2 + np.sin(angles) ** 2))
    expected = float(np.sum(np.cos(angles) ** 2 * weights) / np.sum(weights))
    standard_error = float(np.std(samples[:, 0] ** 2) / np.sqrt(len(samples)))
    assert np.allclose(np.linalg.norm(samples, axis=1), 1.0)
    assert abs(float(np.mean(samples[:, 0] ** 2)) - expected) < 4 * standard_error


def test_matrix_bingham_concentrates_on_the_top_eigenspace_as_eta_grows():
    rng = np.random.default_rng(1)
    basis = np.linalg.qr(rng.standard_normal((60, 60)))[0]
    matrix = (basis * np.r_[np.full(3, 10.0), np.linspace(1, 0, 57)]) @ basis.T
    top = basis[:, :3]
    concentrated = sample_matrix_bingham(matrix, 3, eta=5000.0, rng=rng, sweeps=5)
    diffuse = sample_matrix_bingham(matrix, 3, eta=0.001, rng=rng, sweeps=5)
    np.testing.assert_allclose(concentrated.T @ concentrated, np.eye(3), atol=1e-10)
    assert projection_metric(concentrated, top) < 0.05
    assert projection_metric(diffuse, top) > 0.9


def test_dp_gsd_exponential_mechanism_tracks_the_exact_subspace_at_large_epsilon():
    from pillar_cli.data import SourceOptions, load_source

    digits = load_source("digits", SourceOptions())
    x = digits.inputs.reshape(len(digits.inputs), -1)[:, ::4].astype(np.float32) / 255  # 16 pixels: p = 51
    probe = LinearProbe(16, 3, seed=0)
    labels = np.random.default_rng(0).integers(0, 3, 1000)
    gradients = GradientMatrix(probe, x[:1000], labels)
    exact = top_right_singular_vectors(gradients, 2, seed=0).basis
    distance = {
        eps: projection_metric(
            exact,
            dp_gradient_subspace(
                gradients, 2, DPSettings(eps, 0.0, 5.0, "bingham", sweeps=10, noise=NoiseSource(0))
            ).basis,
        )
        for eps in (0.1, 1000.0)
    }
    assert distance[1000.0] < 0.05
    assert distance[0.1] > distance[1000.0] + 0.3
