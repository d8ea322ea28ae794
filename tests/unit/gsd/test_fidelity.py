"""GSD at the paper's fidelity on real MNIST-5k: the exact path equals ARPACK's SVD of the same gradient
matrices, and the authors' released conventions (unit-norm gradient rows, frozen bias) are the formula applied
directly."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.data import SourceOptions, load_source
from pillar_cli.gsd.distance import GSDSettings, plan_gsd, projection_metric
from pillar_cli.gsd.probes import LinearProbe
from pillar_cli.gsd.subspace import top_right_singular_vectors

pytestmark = pytest.mark.slow  # SVDs of 2,000 × 7,850 gradient matrices


def _top_right_singular_vectors(rows: np.ndarray, k: int) -> np.ndarray:
    """The top-k right singular vectors (k × dim, largest first) by ARPACK's Lanczos iteration on the matrix
    itself, to machine precision: another algorithm than pillar's eigendecomposition of the Gram matrix, and
    without numpy's full SVD of the 2,000 × 7,850 rows (13 s each)."""
    from scipy.sparse.linalg import svds

    _, values, vt = svds(rows, k=k, tol=0, solver="arpack", random_state=0)
    return vt[np.argsort(values)[::-1]]


@pytest.fixture(scope="module")
def mnist():
    data = load_source("mnist5k", SourceOptions())
    x = data.inputs.reshape(len(data.inputs), -1).astype(np.float32) / 255
    return x[:2500], x[2500:]


@pytest.mark.parametrize(("normalize", "bias", "samples"), [(False, True, 2000), (True, False, 1000)])
def test_gsd_equals_arpacks_svd(mnist, normalize, bias, samples):
    private, public = mnist
    probe = LinearProbe(784, 10, seed=0, trainable_bias=bias)
    assert probe.dim == (785 if bias else 784) * 10
    plan = plan_gsd(
        (private, probe),
        [(public, probe)],
        GSDSettings(16, 10, max_samples=samples, normalize_rows=normalize),
    )
    assert plan.run().private.method == "exact"
    matrices = (plan.private, plan.candidates[0])
    rows = [m.all_rows().astype(np.float64) for m in matrices]
    if normalize:  # the rows are the probe's own gradients scaled to unit norm
        raw = probe.gradients(plan.private.inputs, plan.private.labels)
        np.testing.assert_allclose(
            rows[0], raw / np.linalg.norm(raw, axis=1, keepdims=True), rtol=1e-4, atol=1e-7
        )
    reference = [_top_right_singular_vectors(r, 16) for r in rows]  # rows as computed
    for k in (16, 8, 4, 1):  # the largest first: the Gram matrix's top eigenpairs are computed once
        ours = [top_right_singular_vectors(m, k, seed=0).basis for m in matrices]
        assert projection_metric(*ours) == pytest.approx(
            projection_metric(*(v[:k].T for v in reference)), abs=1e-4
        )
