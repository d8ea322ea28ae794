"""Property test (hypothesis): the training kernel clips every per-sample gradient to the bound."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pillar_cli.linear.engine import clipped_gradient_sum
from pillar_cli.linear.gradients import per_sample_gradients

finite = st.floats(-1e3, 1e3, allow_nan=False, width=32)


@given(
    hnp.arrays(np.float32, st.tuples(st.integers(1, 16), st.integers(1, 12)), elements=finite),
    st.integers(2, 6),
    st.floats(0.01, 10.0),
    st.integers(0, 2**31 - 1),
)
@settings(max_examples=60, deadline=None)
def test_training_kernel_scales_each_per_sample_gradient_down_to_the_bound(x, classes, clip, seed):
    """Row by row, the engine's clipped sum is that row's gradient times min(1, C/‖g‖) (float64 reference)."""
    generator = torch.Generator().manual_seed(seed)
    features = torch.as_tensor(x)
    weights = torch.randn(x.shape[1], classes, generator=generator) * 0.1
    bias = torch.randn(classes, generator=generator)
    labels = torch.randint(0, classes, (len(x),), generator=generator)
    # rows: (d+1, C) flat
    exact = per_sample_gradients(features.double(), labels, weights.double(), bias.double())
    for i in range(len(x)):
        sum_w, sum_b = clipped_gradient_sum(weights, bias, features[i : i + 1], labels[i : i + 1], clip)
        clipped = torch.cat([sum_w, sum_b[None]]).double().flatten()
        expected = exact[i] * min(1.0, clip / max(exact[i].norm().item(), 1e-300))
        assert clipped.norm() <= clip * (1 + 1e-5)
        # float32 residuals near 0 or 1 carry ~6e-8 absolute error, multiplied by ‖[x, 1]‖ in the gradient
        slack = 4e-7 * (features[i].double().norm() + 1).item()
        torch.testing.assert_close(clipped, expected, rtol=1e-4, atol=slack)


arrays = hnp.arrays(
    st.sampled_from([np.float32, np.float64, np.int64]),
    hnp.array_shapes(max_dims=3, max_side=5),
    elements=st.integers(-1000, 1000),
)
