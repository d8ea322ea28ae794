"""Maps of features to k dimensions fitted on PUBLIC data: standardise + PCA, and a seeded random projection;
and, where no public data exists, a PCA of the private rows released with DP (private_pca.py).

Nothing private reaches a fit except through that DP release.

May import: `errors`, `artifacts` (the projection artifact), `privacy` and `randomness` (the DP-PCA release).
"""

from pillar_cli.projection.pca import (
    LinearMap,
    PublicPCA,
    StoredMap,
    fit_public_split,
    project,
    projection_artifact,
    standardize_rows,
)
from pillar_cli.projection.random import GaussianProjection
from pillar_cli.projection.row_passes import l2_normalized_rows

__all__ = [
    "GaussianProjection",
    "LinearMap",
    "PublicPCA",
    "StoredMap",
    "fit_public_split",
    "l2_normalized_rows",
    "project",
    "projection_artifact",
    "standardize_rows",
]
