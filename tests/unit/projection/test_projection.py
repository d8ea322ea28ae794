"""PublicPCA against scikit-learn, orthonormality, sign convention and rank checks."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from pillar_cli.errors import UsageError
from pillar_cli.projection import PublicPCA


def _data(n=200, d=30, seed=0):
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((n, 5)) @ rng.standard_normal((5, d)) * 3 + rng.standard_normal((n, d))
    ).astype(np.float32)


def test_matches_sklearn_standard_scaler_and_pca():
    x = _data()
    pca = PublicPCA(k_max=10).fit(x)
    reference = PCA(n_components=10).fit(StandardScaler().fit_transform(x))
    np.testing.assert_allclose(pca.eigenvalues_[:10], reference.explained_variance_, rtol=1e-5)
    overlap = np.abs(np.sum(pca.components_ * reference.components_, axis=1))
    np.testing.assert_allclose(overlap, 1.0, atol=1e-5)
    np.testing.assert_allclose(
        np.abs(pca.transform(x, 10)),
        np.abs(reference.transform(StandardScaler().fit_transform(x))),
        atol=1e-3,
    )


def test_components_are_orthonormal_with_positive_largest_entry():
    pca = PublicPCA(k_max=8).fit(_data())
    np.testing.assert_allclose(pca.components_ @ pca.components_.T, np.eye(8), atol=1e-10)
    largest = pca.components_[np.arange(8), np.abs(pca.components_).argmax(axis=1)]
    assert (largest > 0).all()


def test_k_beyond_the_public_rank_is_refused():
    x = _data(n=12, d=30)
    with pytest.raises(UsageError, match=r"^k_max 20 exceeds the rank of the public features \(11: 12 rows"):
        PublicPCA(k_max=20).fit(x)
    pca = PublicPCA(k_max=5).fit(x)
    with pytest.raises(UsageError, match="k=6 is out of range: the projection holds 5 components"):
        pca.basis(6)


def test_artifact_round_trip():
    pca = PublicPCA(k_max=4).fit(_data())
    artifact = pca.to_artifact()
    back = PublicPCA.from_artifact(artifact)
    x = _data(seed=1)
    np.testing.assert_array_equal(back.transform(x, 4), pca.transform(x, 4))
