"""Standardise + PCA, fitted on PUBLIC data only: `PublicPCA.fit` takes one array, the public split's
features, which carry no labels (the CLI passes the embeddings' `public` split, or a split the user declares
public)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pillar_cli.artifacts import Artifact, Split
from pillar_cli.artifacts.projection_header import ProjectionHeader
from pillar_cli.artifacts.stored_rows import Rows
from pillar_cli.errors import DataError, PrivacyError, UsageError, param
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.projection.row_passes import (
    ScaledRows,
    digests_and_moments,
    l2_normalized_rows,
    principal_axes,
    rows_per_block,
)


def standardize_rows(
    x: np.ndarray, mean: np.ndarray, scale: np.ndarray, row_normalised: bool, reader: str
) -> np.ndarray:
    """(x − mean) / scale, after L2-normalising rows for second-moment projections; float32. Rows of another
    dimension are refused, `reader` saying what expects len(mean) ('the model was trained on')."""
    if x.shape[1] != len(mean):
        raise DataError(f"features have {x.shape[1]} dimensions; {reader} {len(mean)}")
    out, step = np.empty(x.shape, dtype=np.float32), rows_per_block(x.shape[1])
    for start in range(0, len(x), step):  # float64 arithmetic a block of rows at a time: memory stays ~x's
        rows = x[start : start + step]
        out[start : start + step] = ((l2_normalized_rows(rows) if row_normalised else rows) - mean) / scale
    return out


class LinearMap(Protocol):
    """A fixed map of standardised features to k dimensions: x ↦ A_kᵀ·standardised(x)."""

    @property
    def dim(self) -> int: ...

    def standardized(self, x: Rows) -> np.ndarray: ...

    def basis(self, k: int) -> np.ndarray: ...


@dataclass(frozen=True)
class StoredMap:
    """A LinearMap as a released classifier stores it: the public scaler and at most one basis."""

    mean: np.ndarray
    scale: np.ndarray
    row_normalised: bool  # rows L2-normalised before the scaler (second-moment projections)
    stored_basis: np.ndarray | None = None  # (D, k)

    @property
    def dim(self) -> int:
        return len(self.mean)

    def standardized(self, x: Rows) -> np.ndarray:
        return standardize_rows(x, self.mean, self.scale, self.row_normalised, "the classifier reads")

    def basis(self, k: int) -> np.ndarray:
        if self.stored_basis is None or self.stored_basis.shape[1] != k:
            raise DataError(f"this map stores no basis of {k} components")
        return self.stored_basis


def project(linear_map: LinearMap, x: Rows, k: int | None) -> np.ndarray:
    """Standardise, then map to k dimensions (k=None: no projection). The product accumulates in float64 and
    is rounded once: standardised public-scaled features can be large, and float32 sums in another order
    (another BLAS, an exported module) would then disagree in the last digits of the head's probabilities."""
    if k is None:
        return linear_map.standardized(x)
    basis, out = linear_map.basis(k).astype(np.float64), np.empty((len(x), k), dtype=np.float32)
    step = rows_per_block(x.shape[1])
    for start in range(0, len(x), step):  # a block of rows at a time: no standardised copy of all of x
        out[start : start + step] = (
            linear_map.standardized(x[start : start + step]).astype(np.float64) @ basis
        )
    return out


class PublicPCA:
    """Standardise (optional) then project on the top principal components of the public features.

    `second_moment=True` is the theory-faithful variant of the paper (Definition 3): rows L2-normalised, no
    centring, no standardisation, eigenvectors of the uncentred second moment E[xxᵀ].

    Fitted state: `mean_` (D,), `scale_` (D,), `components_` (k_max, D) orthonormal rows with deterministic
    signs, `eigenvalues_` (min(n, D),) the variance (second moment) along each component, `rank_`,
    `n_public_`; `release_`: the DP release of private rows it rests on (a DP-PCA's), None when fitted on
    public rows. Parameters follow scikit-learn's contract (stored as given, `get_params` / `set_params`), so
    `clone` and a search over them work; scikit-learn itself is not imported (the command line starts without
    it).
    """

    release_: DPRelease | None = None

    def __init__(self, k_max: int | None = None, standardize: bool = True, second_moment: bool = False):
        self.k_max = k_max
        self.standardize = standardize
        self.second_moment = second_moment

    def get_params(self, deep: bool = True) -> dict:
        return {"k_max": self.k_max, "standardize": self.standardize, "second_moment": self.second_moment}

    def set_params(self, **params: object) -> PublicPCA:
        unknown = sorted(set(params) - set(self.get_params()))
        if unknown:
            raise UsageError(
                f"PublicPCA has no parameter {unknown[0]} (its parameters: {', '.join(self.get_params())})"
            )
        for name, value in params.items():
            setattr(self, name, value)
        return self

    @property
    def standardizes(self) -> bool:
        """Whether fit scales each feature to unit variance (never for the second-moment variant)."""
        return self.standardize and not self.second_moment

    def fit(
        self, public: np.ndarray, y: None = None, on_rows: Callable[[int], None] = lambda n: None
    ) -> PublicPCA:
        """Fit on unlabelled public rows. Labels are refused, so no pipeline can fit this on a labelled
        (private) split; the digests of the rows fitted on are kept, so a classifier can refuse to train on
        any of them. `on_rows(m)` hears of m more rows summed into the Gram matrix (progress of a long
        fit)."""
        if y is not None:
            raise PrivacyError(
                "PublicPCA is fitted on unlabelled PUBLIC rows only; it was given labels",
                hint="fit it on the public rows, or pass public= to DPLinearClassifier.fit",
            )
        n, dim = public.shape
        if n < 2:
            raise DataError(f"the public split has {n} rows; PCA needs at least 2")
        self.row_digests_, mean, std = digests_and_moments(public, self._normalized_rows)
        self.mean_ = np.zeros(dim) if self.second_moment else mean
        self.scale_ = np.where(std > 0, std, 1.0) if self.standardizes else np.ones(dim)
        singular, vt = principal_axes(
            ScaledRows(public, self._normalized_rows, self.mean_, self.scale_), on_rows
        )
        # on σ², as eigh gives
        tolerance = singular.max(initial=0.0) ** 2 * max(n, dim) * np.finfo(np.float64).eps
        self.rank_ = int((singular**2 > tolerance).sum())
        k_max = self.rank_ if self.k_max is None else self.k_max
        if k_max > self.rank_:
            raise UsageError(
                f"{param('k_max')} {k_max} exceeds the rank of the public features ({self.rank_}: "
                f"{n} rows, {dim} dimensions)",
                hint="use more public data or a smaller k",
            )
        components = vt[:k_max]
        signs = np.sign(components[np.arange(k_max), np.abs(components).argmax(axis=1)])
        self.components_ = components * signs[:, None]
        self.eigenvalues_ = singular**2 / (n if self.second_moment else n - 1)
        self.n_public_ = n
        return self

    @classmethod
    def identity(cls, dim: int) -> PublicPCA:
        """No scaling and no components: the feature space of methods that use no public data (dpsgd, jl)."""
        pca = cls(0, standardize=False)
        pca.mean_, pca.scale_ = np.zeros(dim), np.ones(dim)
        pca.components_, pca.eigenvalues_ = np.zeros((0, dim)), np.zeros(0)
        pca.rank_, pca.n_public_, pca.row_digests_ = 0, 0, np.zeros(0, np.uint64)
        return pca

    @property
    def explained_variance_(self) -> np.ndarray:
        """The public variance along each kept component."""
        return self.eigenvalues_[: len(self.components_)]

    @property
    def explained_variance_ratio_(self) -> np.ndarray:
        total = self.eigenvalues_.sum()
        return self.explained_variance_ / total if total > 0 else self.explained_variance_

    def _normalized_rows(self, x: np.ndarray) -> np.ndarray:
        return l2_normalized_rows(x) if self.second_moment else x

    @property
    def dim(self) -> int:
        return len(self.mean_)

    def standardized(self, x: Rows) -> np.ndarray:
        return standardize_rows(
            x, self.mean_, self.scale_, self.second_moment, "the projection was fitted on"
        )

    def transform(self, x: Rows, k: int | None = None) -> np.ndarray:
        """Top-k projection of standardised features; k=None keeps all dimensions (no projection)."""
        return project(self, x, k)

    def basis(self, k: int) -> np.ndarray:
        """A_k: the (D, k) orthonormal basis of the top-k public components."""
        if not 1 <= k <= len(self.components_):
            raise UsageError(
                f"k={k} is out of range: the projection holds {len(self.components_)} components "
                f"(public rank {self.rank_})",
                hint=f"refit with a larger {param('k_max')} or use a smaller k",
            )
        return self.components_[:k].T.astype(np.float32)

    def to_artifact(self) -> Artifact:
        arrays = {
            "mean": self.mean_,
            "scale": self.scale_,
            "components": self.components_,
            "eigenvalues": self.eigenvalues_,
        }
        attrs = {
            "method": "second-moment" if self.second_moment else "pca",
            "standardized": self.standardizes,
            "centred": not self.second_moment,
            "row_l2_normalised": self.second_moment,
            "k_max": len(self.components_),
            "rank": self.rank_,
            "n_public": self.n_public_,
        }
        return Artifact("projection", arrays, attrs)

    @classmethod
    def from_artifact(cls, artifact: Artifact) -> PublicPCA:
        header = ProjectionHeader.of(artifact)
        pca = cls(header.k_max, header.standardized, header.row_l2_normalised)
        pca.mean_, pca.scale_ = artifact.array("mean"), artifact.array("scale")
        pca.components_, pca.eigenvalues_ = artifact.array("components"), artifact.array("eigenvalues")
        pca.rank_, pca.n_public_ = header.rank, header.n_public
        pca.row_digests_ = np.zeros(0, np.uint64)  # an artifact records its input split's row ids instead
        if header.private_release is not None:  # a DP-PCA: every model trained on it composes its release
            pca.release_ = DPRelease.from_attrs(header.private_release, Released.PROJECTION)
        return pca


def fit_public_split(
    split: Split,
    k_max: int | None = None,
    standardize: bool = True,
    second_moment: bool = False,
    on_rows: Callable[[int], None] = lambda n: None,
) -> PublicPCA:
    """PCA on an unlabelled (public) split; `on_rows` as PublicPCA.fit's."""
    require_unlabelled(split)
    return PublicPCA(k_max, standardize, second_moment).fit(split.features, on_rows=on_rows)


def require_unlabelled(split: Split) -> None:
    """A labelled split is refused: fitting on private rows would leak them into every model trained on the
    fit."""
    if split.labels is not None:
        raise PrivacyError(
            f"split '{split.name}' of {split.ref.path} is labelled; fit-pca fits on the unlabelled "
            "public split only",
            hint=f"use {split.ref.path}:public",
        )


def projection_artifact(pca: PublicPCA, split: Split) -> Artifact:
    """The fitted projection with what it was fitted on: the split's reference, source and row ids
    (`rows/public`), so that no stage evaluates or selects on rows the projection saw."""
    artifact = pca.to_artifact()
    artifact.arrays["rows/public"] = split.index
    if split.units.grouped:
        artifact.arrays["persons/public"] = split.units.ids
        artifact.attrs["persons"] = split.grouping
    artifact.attrs.update(fitted_on=split.ref.to_dict(), backbone=split.backbone)
    if split.source_fingerprint is not None:  # embeddings made by the library may name no source
        artifact.attrs["source_fingerprint"] = split.source_fingerprint
    return artifact
