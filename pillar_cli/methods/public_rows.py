"""Where the Python API's projection comes from: fitted on the public rows it is given, or passed in fitted.
It is never fitted on private rows, and training refuses private rows that the projection was fitted on."""

from __future__ import annotations

import copy

import numpy as np

from pillar_cli.errors import DataError, PrivacyError, UsageError, param
from pillar_cli.methods.catalog import get_method
from pillar_cli.projection import PublicPCA
from pillar_cli.projection.row_passes import row_digests


def fitted_projection(
    projection: PublicPCA | None, public: np.ndarray | None, methods: list[str], dim: int
) -> PublicPCA:
    """A fitted projection given as is; an unfitted one (or the default PublicPCA) fitted on a copy of
    `public`; with neither, the identity for methods that need no public basis (dpsgd, jl)."""
    if projection is not None and hasattr(projection, "mean_"):
        return projection
    if public is not None:
        public = np.asarray(public, dtype=np.float32)
        bad = int((~np.isfinite(public)).any(axis=1).sum()) if public.ndim == 2 else 0
        if bad:
            raise DataError(f"{param('public')} has {bad} rows with NaN or Inf features")
        return copy.deepcopy(projection or PublicPCA()).fit(public)
    needing = [m for m in methods if get_method(m).needs_public_basis]
    if needing:
        raise UsageError(
            f"method '{needing[0]}' projects on public components: pass {param('public')} (unlabelled "
            f"public rows) or a fitted {param('projection')}"
        )
    return PublicPCA.identity(dim)


def refuse_fitted_rows(projection: PublicPCA, private: np.ndarray) -> None:
    """A private row the projection was fitted on would be used outside the DP guarantee. Rows are compared
    exactly (by digest): a row changed in any digit is another row. Whether two rows describe one person is a
    property of the data set, which the caller knows and this check cannot."""
    fitted = getattr(projection, "row_digests_", np.zeros(0, np.uint64))
    if len(fitted):
        shared = int(np.isin(row_digests(private), fitted).sum())
        if shared:
            raise PrivacyError(
                f"{shared} private rows are among the rows the projection was fitted on",
                hint="fit the projection on public rows only",
            )


def refuse_privately_scaled(private: np.ndarray, public: np.ndarray | None) -> None:
    """Private rows standardised column by column (means 0, scales 1, as a scaler fitted on them leaves them)
    beside public rows that are not: the scaler read private data outside ε, and the public rows the
    projection is fitted on bypassed it (Pipeline(StandardScaler(), DPLinearClassifier()) scores at
    chance)."""
    if public is None or len(private) < 2:
        return
    mean, scale = private.mean(axis=0, dtype=np.float64), private.std(axis=0, dtype=np.float64)
    standardised = np.all(np.abs(mean) < 1e-4) and np.all((np.abs(scale - 1) < 1e-3) | (scale == 0))
    public = np.asarray(public, dtype=np.float64)
    if standardised and np.abs(public.mean(axis=0)).max() > 0.1:
        raise PrivacyError(
            "the private rows arrive standardised on their own statistics and the public rows do "
            "not: a scaler fitted on private rows ran before this estimator, outside its ε",
            hint="pass raw features: the estimator standardises both with public statistics",
        )
