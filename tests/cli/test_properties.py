"""fit-pca depends on the public rows only: changing private rows leaves the projection unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from checks import edited_copy

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_pca_depends_on_public_rows_only(pillar, mnist, tmp_path):
    altered = tmp_path / "emb.h5"
    with edited_copy(mnist["emb"], altered) as h5:  # the private rows of another, consistent artifact
        for split in ("private", "val", "test"):
            h5[f"splits/{split}/features"][...] = np.random.default_rng(0).random(
                h5[f"splits/{split}/features"].shape
            )
    pillar("fit-pca", f"{altered}:public", "--k-max", "100", "-o", tmp_path / "pca.h5")
    ours, reference = (
        artifacts.read(tmp_path / "pca.h5", "projection"),
        artifacts.read(mnist["pca"], "projection"),
    )
    for name in ("mean", "scale", "components", "eigenvalues"):
        np.testing.assert_array_equal(ours.array(name), reference.array(name))
