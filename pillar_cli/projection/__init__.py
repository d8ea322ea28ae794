"""Maps of features to k dimensions fitted on PUBLIC data only: standardise + PCA, and a seeded random projection.

Nothing private can reach a fit.

May import: `errors`, `artifacts` (the projection artifact).
"""

from pillar_cli.projection.pca import (
                                       LinearMap,
                                       PublicPCA,
                                       StoredMap,
                                       fit_public_split,
                                       l2_normalized_rows,
                                       project,
                                       projection_artifact,
                                       standardize_rows,
)
from pillar_cli.projection.random import GaussianProjection

__all__ = ["GaussianProjection", "LinearMap", "PublicPCA", "StoredMap", "fit_public_split", "l2_normalized_rows", "project",
           "projection_artifact", "standardize_rows"]
