"""Property test (hypothesis): the projection metric is a normalised, symmetric distance."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pillar_cli.gsd.distance import projection_metric


@given(
    st.integers(2, 30).flatmap(lambda p: st.tuples(st.just(p), st.integers(1, p))), st.integers(0, 2**31 - 1)
)
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
