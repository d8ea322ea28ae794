"""PILLAR without public data: the projection fitted on the PRIVATE rows by one DP release of their second
moment (Analyze Gauss: Dwork, Talwar, Thakurta & Zhang, "Analyze Gauss", STOC 2014).

Rows are scaled to unit norm u, so one row moves Σ uuᵀ by ‖uuᵀ‖_F = 1 (add/remove one row: sensitivity 1). The
upper triangle of the sum is released with Gaussian noise σ, mirrored (symmetric noise); σ is calibrated to
(ε, δ) for that one Gaussian release by the accountant. The components are the released matrix's top k_max
eigenvectors (by default 200: keeping only those above the noise's spectral scale 2σ√D cost accuracy, 0.70
against 0.78 at ε = 0.5 on real features, because directions below the noise still carry what random
directions carry); its spectrum is stored as fractions of its trace. Everything after the release is
post-processing: nothing else reads the rows, not even their number, which the projection does not record.
There is no mean or per-feature scale (each would be one more statistic of the private rows to release): the
projection is the second-moment variant, rows L2-normalised (`fit-pca --second-moment`). Every model trained
on it composes the release's event with its runs' (privacy/guarantee.py), so their ε covers the projection:
train-private from the artifact's `private_release`, the Python API (`sweep`, `DPLinearClassifier`) from the
fitted object's `release_`.

Where the rows name their persons, each row's term is weighted by 1/(its person's rows): one person then moves
the sum by at most 1 (the person as the privacy unit), and one row still by at most 1 (removing a row of a
person of m rows moves it by 2/m ≤ 1), so the release holds for either unit; without persons it holds per row
only.
"""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.artifacts import Artifact, Split
from pillar_cli.artifacts.given_rows import given_rows
from pillar_cli.errors import UsageError, param
from pillar_cli.privacy import GaussianEvent, calibrate_noise, spent_epsilon, validate_budget
from pillar_cli.privacy.relation import ROW_RELATIONS
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.privacy.symmetric import symmetric_noise
from pillar_cli.privacy.unit import PERSON, ROW, WEIGHTED_PERSON_BOUND, PrivacyUnit, Units
from pillar_cli.projection.pca import PublicPCA
from pillar_cli.projection.row_passes import CHUNK_ROWS, l2_normalized_rows
from pillar_cli.randomness import NoiseSource

DEFAULT_K_MAX = 200
MECHANISM = (
    "Analyze Gauss: one Gaussian release of the second moment Σ uuᵀ of the L2-normalised private rows "
    "(upper triangle, L2 sensitivity 1, symmetric noise); its top eigenvectors"
)


def fit_private_pca(
    features: np.ndarray,
    k_max: int | None,
    epsilon: float,
    delta: float,
    accountant: str,
    noise: NoiseSource,
    units: Units | None = None,
) -> tuple[PublicPCA, dict]:
    """(the projection, the release's record: mechanism, ε spent, δ, event, noise source) from private rows.
    k_max None keeps min(D, 200) components (as many as a public fit's default rule reaches: directions below
    the noise still help a head, as random directions do). ε = inf releases the exact second moment (no
    guarantee: for tests and for comparison only). `units` (left out: each row its own): grouped into persons,
    each row is weighted so that the release bounds a person. δ must lie below 1/n for the n rows (or persons)
    it reads: the check refuses, and releases nothing."""
    units = units or Units.rows(len(features))
    validate_budget(epsilon, delta, units.count)
    dim = features.shape[1]
    if k_max is not None and not 1 <= k_max <= dim:
        raise UsageError(f"{param('k_max')} must be between 1 and the feature dimension {dim} (got {k_max})")
    sigma = 0.0 if math.isinf(epsilon) else calibrate_noise(accountant, epsilon, delta, 1.0, 1)
    moment = np.zeros((dim, dim))
    for start in range(0, len(features), CHUNK_ROWS):
        rows = l2_normalized_rows(features[start : start + CHUNK_ROWS].astype(np.float64))
        if units.grouped:
            rows *= np.sqrt(units.weights[start : start + CHUNK_ROWS])[:, None]
        moment += rows.T @ rows
    released = moment + symmetric_noise(noise.numpy().standard_normal, dim, sigma)
    values, vectors = np.linalg.eigh(released)
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    k_max = min(dim, DEFAULT_K_MAX) if k_max is None else k_max
    components = vectors[:, :k_max].T
    signs = np.sign(components[np.arange(k_max), np.abs(components).argmax(axis=1)])
    pca = PublicPCA(k_max, standardize=False, second_moment=True)
    pca.mean_, pca.scale_ = np.zeros(dim), np.ones(dim)
    pca.components_ = components * signs[:, None]
    trace = max(float(np.trace(released)), 1e-12)
    pca.eigenvalues_ = np.maximum(values, 0.0) / trace  # fractions of the released trace: no row count
    pca.rank_, pca.n_public_, pca.row_digests_ = k_max, 0, np.zeros(0, np.uint64)
    event = GaussianEvent(sigma)
    spent = math.inf if sigma == 0 else spent_epsilon(accountant, event, delta)
    unit = PrivacyUnit(PERSON, units.named_by) if units.grouped else PrivacyUnit(ROW)
    record = {
        "released": Released.PROJECTION.value,
        "mechanism": unit.mechanism(MECHANISM, ROW_RELATIONS, WEIGHTED_PERSON_BOUND),
        "epsilon": spent,
        "epsilon_target": epsilon,
        "delta": delta,
        "accountant": accountant,
        "event": event.to_dict(),
        "noise": noise.describe(),
        "unit": unit.to_attrs(),
    }
    pca.release_ = DPRelease.from_attrs(record)
    return pca, record


class DPPCA(PublicPCA):
    """The DP-PCA as an estimator (as scikit-learn keeps PCA and IncrementalPCA apart): `fit(X, groups=None)`
    releases the second moment of the PRIVATE rows X once, at (`epsilon`, `delta`) by `accountant` (per person
    where `groups` names each row's person), and keeps its top `k_max` components. A projection like PublicPCA
    (transform, basis, standardized) whose `release_` is the typed DP release every model trained on it
    composes (its `record` as files keep it). `noise_seed` makes the noise repeat: experiments only, NOT
    private.

    Example: projection = DPPCA(k_max=50, epsilon=0.5).fit(X_private) DPLinearClassifier(k=20, epsilon=1.0,
    projection=projection).fit(X_private, y)  # ε covers both releases
    """

    def __init__(
        self,
        k_max: int | None = None,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        accountant: str = "prv",
        noise_seed: int | None = None,
    ):
        super().__init__(k_max, standardize=False, second_moment=True)
        self.epsilon, self.delta, self.accountant, self.noise_seed = epsilon, delta, accountant, noise_seed

    def get_params(self, deep: bool = True) -> dict:
        return {
            "k_max": self.k_max,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "accountant": self.accountant,
            "noise_seed": self.noise_seed,
        }

    def fit(self, X: np.ndarray | Split, groups: object = None) -> DPPCA:
        """X: the private rows, or a split read from a file (its persons, where it records them, are the
        groups)."""
        if isinstance(X, Split):
            X, units = given_rows(X, None, groups, labelled=False)[0], X.units
        else:
            units = Units.given(groups, len(X), "the groups given")
        features = np.asarray(X, dtype=np.float32)
        fitted, record = fit_private_pca(
            features,
            self.k_max,
            float(self.epsilon),
            float(self.delta),
            self.accountant,
            NoiseSource(self.noise_seed),
            units,
        )
        for name in ("mean_", "scale_", "components_", "eigenvalues_", "rank_", "n_public_", "row_digests_"):
            setattr(self, name, getattr(fitted, name))
        self.release_ = DPRelease.from_attrs(record)
        return self


def private_projection_artifact(pca: PublicPCA, split: Split, release: dict) -> Artifact:
    """The DP-PCA projection with the split it read and its release (no row ids, no row count)."""
    artifact = pca.to_artifact()
    artifact.attrs.update(fitted_on=split.ref.to_dict(), backbone=split.backbone, private_release=release)
    return artifact
