"""The digits split the closed-form and second-order heads are checked on: a public PCA on 300 rows (used
without labels), 1,100 private rows."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli import PublicPCA


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(x))
    public, private = x[order[:300]], order[300:1400]
    return PublicPCA(30).fit(public), public, x[private], y[private]
