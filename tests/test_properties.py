"""Property tests (hypothesis) for the math and the artifact layer, and a fuzz of the artifact reader."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import h5py
import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact
from pillar_cli.errors import ArtifactError
from pillar_cli.gsd.distance import projection_metric
from pillar_cli.linear.engine import clipped_gradient_sum
from pillar_cli.linear.gradients import per_sample_gradients

finite = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@given(hnp.arrays(np.float32, st.tuples(st.integers(1, 16), st.integers(1, 12)), elements=finite),
       st.integers(2, 6), st.floats(0.01, 10.0), st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_training_kernel_scales_each_per_sample_gradient_down_to_the_bound(x, classes, clip, seed):
    """Row by row, the engine's clipped sum is that row's gradient times min(1, C/‖g‖) (float64 reference)."""
    generator = torch.Generator().manual_seed(seed)
    features = torch.as_tensor(x)
    weights = torch.randn(x.shape[1], classes, generator=generator) * 0.1
    bias = torch.randn(classes, generator=generator)
    labels = torch.randint(0, classes, (len(x),), generator=generator)
    exact = per_sample_gradients(features.double(), labels, weights.double(), bias.double())  # rows: (d+1, C) flat
    for i in range(len(x)):
        sum_w, sum_b = clipped_gradient_sum(weights, bias, features[i:i + 1], labels[i:i + 1], clip)
        clipped = torch.cat([sum_w, sum_b[None]]).double().flatten()
        expected = exact[i] * min(1.0, clip / max(exact[i].norm().item(), 1e-300))
        assert clipped.norm() <= clip * (1 + 1e-5)
        # float32 residuals near 0 or 1 carry ~6e-8 absolute error, multiplied by ‖[x, 1]‖ in the gradient
        slack = 4e-7 * (features[i].double().norm() + 1).item()
        torch.testing.assert_close(clipped, expected, rtol=1e-4, atol=slack)


@given(st.integers(2, 30).flatmap(lambda p: st.tuples(st.just(p), st.integers(1, p))), st.integers(0, 2**31 - 1))
@settings(max_examples=60, deadline=None)
def test_projection_metric_is_a_normalised_symmetric_distance(shape, seed):
    p, k = shape
    rng = np.random.default_rng(seed)
    a, _ = np.linalg.qr(rng.standard_normal((p, k)))
    b, _ = np.linalg.qr(rng.standard_normal((p, k)))
    rotation, _ = np.linalg.qr(rng.standard_normal((k, k)))
    distance = projection_metric(a, b)
    assert 0.0 <= distance <= 1.0
    assert abs(distance - projection_metric(b, a)) < 1e-6  # sqrt(1 − overlap) magnifies rounding near 0
    assert projection_metric(a, a @ rotation) < 1e-6


array_names = st.from_regex(r"[a-z]{1,6}(/[a-z0-9]{1,6}){0,2}", fullmatch=True)
arrays = hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64]), hnp.array_shapes(max_dims=3, max_side=5),
                    elements=st.integers(-1000, 1000))
attr_values = st.one_of(st.text(max_size=20), st.integers(-10**6, 10**6), st.booleans(),
                        st.lists(st.integers(0, 9), max_size=4), st.dictionaries(st.text("abc", max_size=3),
                                                                                 st.integers(), max_size=3))


@given(st.dictionaries(array_names, arrays, min_size=1, max_size=4),
       st.dictionaries(st.from_regex(r"[a-z_]{1,10}", fullmatch=True).filter(
           lambda key: key not in artifacts.RESERVED_ATTRS), attr_values, max_size=4))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_artifact_write_read_round_trip(named_arrays, attrs):
    names = sorted(named_arrays)
    if any(other.startswith(name + "/") for name in names for other in names):
        return  # a dataset cannot also be a group
    directory = Path(tempfile.mkdtemp())
    try:
        written = artifacts.write(directory / "a.h5", Artifact("gsd", named_arrays, attrs))
        back = artifacts.read(directory / "a.h5", "gsd")
        assert back.attrs == attrs and sorted(back.arrays) == names
        for name in names:
            np.testing.assert_array_equal(back.arrays[name], named_arrays[name])
        assert back.provenance.content_hash == written.provenance.content_hash
    finally:
        shutil.rmtree(directory)


def _valid_artifact_bytes() -> bytes:
    directory = Path(tempfile.mkdtemp())
    try:
        artifacts.write(directory / "a.h5", Artifact("projection", {"mean": np.arange(8.0), "components": np.eye(8)},
                                                     {"k_max": 8}))
        return (directory / "a.h5").read_bytes()
    finally:
        shutil.rmtree(directory)


VALID = _valid_artifact_bytes()


@given(st.one_of(st.binary(max_size=4096),
                 st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=40)
                 .map(lambda edits: _corrupt(VALID, edits)),
                 st.integers(0, len(VALID)).map(lambda cut: VALID[:cut])))
@settings(max_examples=150, deadline=None)
def test_reader_fuzz_only_ever_raises_artifact_errors(data):
    directory = Path(tempfile.mkdtemp())
    try:
        path = directory / "fuzz.h5"
        path.write_bytes(data)
        try:
            artifact = artifacts.read(path, "projection")
        except ArtifactError:
            return
        assert artifact.kind == "projection"  # corruption that spared everything read is fine
    finally:
        shutil.rmtree(directory)


def _corrupt(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    buffer = bytearray(data)
    for position, value in edits:
        buffer[position] = value
    return bytes(buffer)


def test_pca_depends_on_public_rows_only(pillar, mnist, tmp_path):
    altered = tmp_path / "emb.h5"
    altered.write_bytes(mnist["emb"].read_bytes())
    with h5py.File(altered, "a") as h5:
        for split in ("private", "val", "test"):
            h5[f"splits/{split}/features"][...] = np.random.default_rng(0).random(h5[f"splits/{split}/features"].shape)
    pillar("fit-pca", f"{altered}:public", "--k-max", "100", "-o", tmp_path / "pca.h5")
    ours, reference = artifacts.read(tmp_path / "pca.h5", "projection"), artifacts.read(mnist["pca"], "projection")
    for name in ("mean", "scale", "components", "eigenvalues"):
        np.testing.assert_array_equal(ours.array(name), reference.array(name))
