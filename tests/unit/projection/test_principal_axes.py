"""The public PCA's axes from the smaller Gram matrix equal numpy's SVD of the same rows, tall or wide, and a
rank-deficient matrix keeps its rank."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.projection import row_passes
from pillar_cli.projection.pca import PublicPCA
from pillar_cli.projection.row_passes import principal_axes


@pytest.mark.parametrize("shape", [(400, 30), (30, 400)])
def test_principal_axes_equal_the_svd(shape):
    x = np.random.default_rng(0).standard_normal(shape) * np.linspace(3, 0.1, shape[1])
    singular, axes = principal_axes(x)
    _, expected, vt = np.linalg.svd(x, full_matrices=False)
    kept = min(shape)
    np.testing.assert_allclose(singular[:kept], expected, rtol=1e-9)
    # same axes up to sign
    np.testing.assert_allclose(np.abs(np.sum(axes[:kept] * vt, axis=1)), 1.0, atol=1e-9)


def test_a_rank_deficient_public_split_keeps_its_rank():
    rng = np.random.default_rng(1)
    low_rank = rng.standard_normal((500, 20)) @ rng.standard_normal((20, 60))
    assert PublicPCA(None, standardize=False).fit(low_rank).rank_ == 20
    assert (
        PublicPCA(None).fit(rng.standard_normal((100, 784)).astype(np.float32)).rank_ == 99
    )  # centred: n − 1


def test_one_reading_gives_the_digests_and_numpys_two_pass_moments(monkeypatch):
    # rows far from the origin, in blocks of unequal size: where a one-pass sum of squares loses its digits
    monkeypatch.setattr(row_passes, "CHUNK_ROWS", 300)
    rows = (1e4 + np.random.default_rng(3).standard_normal((1000, 7)) * [1e-3, 1, 10, 1, 1, 1, 1]).astype(
        np.float32
    )
    digests, mean, std = row_passes.digests_and_moments(rows, lambda block: block)
    wide = rows.astype(np.float64)
    assert np.array_equal(digests, row_passes.row_digests(rows))
    np.testing.assert_allclose(mean, wide.mean(axis=0), rtol=1e-15)
    np.testing.assert_allclose(std, wide.std(axis=0), rtol=1e-9)
