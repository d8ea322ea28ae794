"""Where the Python API's projection comes from: fitted on the public rows it is given, or passed in fitted. It is
never fitted on private rows, and training refuses private rows that the projection was fitted on."""

from __future__ import annotations

import copy

import numpy as np

from pillar_cli.errors import PrivacyError, UsageError, param
from pillar_cli.methods.catalog import get_method
from pillar_cli.projection import PublicPCA
from pillar_cli.projection.pca import row_digests


def fitted_projection(projection: PublicPCA | None, public: np.ndarray | None, methods: list[str],
                      dim: int) -> PublicPCA:
    """A fitted projection given as is; an unfitted one (or the default PublicPCA) fitted on a copy of `public`;
    with neither, the identity for methods that need no public basis (dpsgd, jl)."""
    if projection is not None and hasattr(projection, "mean_"):
        return projection
    if public is not None:
        return copy.deepcopy(projection or PublicPCA()).fit(np.asarray(public, dtype=np.float32))
    needing = [m for m in methods if get_method(m).needs_public_basis]
    if needing:
        raise UsageError(f"method '{needing[0]}' projects on public components: pass {param('public')} (unlabelled "
                         f"public rows) or a fitted {param('projection')}")
    return PublicPCA.identity(dim)


def refuse_fitted_rows(projection: PublicPCA, private: np.ndarray) -> None:
    """A private row the projection was fitted on would be used outside the DP guarantee."""
    fitted = getattr(projection, "row_digests_", np.zeros(0, np.uint64))
    if len(fitted):
        shared = int(np.isin(row_digests(private), fitted).sum())
        if shared:
            raise PrivacyError(f"{shared} private rows are among the rows the projection was fitted on",
                               hint="fit the projection on public rows only")
