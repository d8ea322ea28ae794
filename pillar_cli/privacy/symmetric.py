"""The Gaussian release of a symmetric matrix (Analyze Gauss: Dwork, Talwar, Thakurta & Zhang 2014): noise
drawn on its upper triangle and mirrored, so that the release is a Gaussian mechanism on the triangle, which
one row moves by at most the Frobenius norm of its term."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def symmetric_noise(draw: Callable[[tuple], np.ndarray], dim: int, scale: float) -> np.ndarray:
    """(dim × dim) symmetric noise: standard normals from `draw` on the upper triangle, times `scale`,
    mirrored."""
    upper = np.triu(draw((dim, dim))) * scale
    return upper + np.triu(upper, 1).T
