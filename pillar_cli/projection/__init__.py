"""Maps of features to k dimensions fitted on PUBLIC data only: standardise + PCA, and a seeded random projection.

Imports `pillar_cli.errors` and `pillar_cli.artifacts` (the projection artifact); nothing private can reach a fit.
"""

from pillar_cli.projection.pca import (
                                       LinearMap,
                                       PublicPCA,
                                       fit_public_split,
                                       l2_normalized_rows,
                                       project,
                                       projection_artifact,
                                       standardize_rows,
)
from pillar_cli.projection.random import GaussianProjection

__all__ = ["GaussianProjection", "LinearMap", "PublicPCA", "fit_public_split", "l2_normalized_rows", "project",
           "projection_artifact", "standardize_rows"]
