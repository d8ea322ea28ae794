"""Differentially private top-k subspaces of a private gradient matrix (DP-GSD, Gu, Kamath, Wu; Algorithm 2).

Both mechanisms see the private rows only through Σ w g̃ g̃ᵀ with every row clipped to `clip`, so adding or
removing one private example changes that matrix by one rank-one term of norm ≤ clip². Where the rows name
their persons, each row is weighted by w = 1/(its person's rows), as the DP-PCA weights them: one person then
moves the matrix by at most clip² too, and the release protects the person (the unit it records). All private
rows are used, each with a random label drawn from its own content (distance.py): an index-based subsample, or
labels by position, would not be a fixed function of each row, and deleting one record would move the others.
- `gauss`: Analyze-Gauss (Dwork, Talwar, Thakurta, Zhang 2014), (ε, δ)-DP: a symmetric Gaussian matrix of σ =
  z·clip² is added (z calibrated by the PLD accountant for one Gaussian mechanism); top-k eigenvectors.
- `bingham`: the exponential mechanism with utility tr(VᵀAV) (sensitivity clip²), pure ε-DP: V is drawn with
  density ∝ exp(ε·tr(VᵀAV) / (2·clip²)) (matrix Bingham; exact for k = 1, Gibbs sweeps for k > 1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pillar_cli.errors import UsageError, check_positive, param
from pillar_cli.gsd.bingham import sample_matrix_bingham
from pillar_cli.gsd.subspace import GradientMatrix, clipped_gram
from pillar_cli.lazy import scipy_sparse_linalg
from pillar_cli.privacy import ExponentialEvent, GaussianEvent, calibrate_noise
from pillar_cli.privacy.relation import ROW_RELATIONS
from pillar_cli.privacy.release import Released
from pillar_cli.privacy.symmetric import symmetric_noise
from pillar_cli.privacy.unit import PERSON, WEIGHTED_PERSON_BOUND, PrivacyUnit, Units
from pillar_cli.randomness import SECRET, NoiseSource

MAX_DIM = {"gauss": 12_000, "bingham": 2_000}  # p×p matrices in memory; Bingham eigendecomposes one per draw


@dataclass(frozen=True)
class DPSettings:
    epsilon: float
    delta: float
    clip: float = 1.0
    mechanism: str = "gauss"
    sweeps: int = 20
    noise: NoiseSource = SECRET  # the release's noise or Bingham draws (seeded only for experiments: NOT DP)

    def __post_init__(self) -> None:
        check_positive("epsilon", self.epsilon)
        check_positive("clip", self.clip)


@dataclass(frozen=True)
class DPSubspaceResult:
    basis: np.ndarray  # (p, k)
    rows: int
    ledger: dict[str, Any]

    @property
    def summary(self) -> str:
        ledger = self.ledger
        budget = (
            f"(ε={ledger['epsilon']:g}, δ={ledger['delta']:g})"
            if ledger["delta"]
            else f"ε={ledger['epsilon']:g}"
        )
        return f"{budget}-DP private subspace: {ledger['mechanism']} over all private rows, {ledger['note']}"


def dp_gradient_subspace(
    matrix: GradientMatrix, k: int, dp: DPSettings, units: Units | None = None
) -> DPSubspaceResult:
    """The private subspace released by `dp.mechanism`; `units` (left out: each row its own): where they are
    persons, each row is weighted so that the release bounds a person, and it records the person as its
    unit."""
    if dp.mechanism not in MAX_DIM:
        raise UsageError(f"{param('mechanism')} must be one of {', '.join(MAX_DIM)}; got '{dp.mechanism}'")
    if matrix.dim > MAX_DIM[dp.mechanism]:
        raise UsageError(
            f"DP-GSD with {dp.mechanism} forms a {matrix.dim}×{matrix.dim} matrix; at most "
            f"{MAX_DIM[dp.mechanism]} is supported",
            hint=f"use fewer features or {param('trainable')} parameters, or {param('mechanism')} gauss",
        )
    units = units or Units.rows(matrix.rows)
    gram = clipped_gram(matrix, dp.clip, units.weights if units.grouped else None)
    rng = dp.noise.child("gsd", dp.mechanism, k).numpy()
    unit = PrivacyUnit(PERSON, units.named_by) if units.grouped else PrivacyUnit()
    ledger: dict[str, Any] = {
        "released": Released.PUBLIC_CHOICE.value,
        "epsilon": dp.epsilon,
        "clip": dp.clip,
        "unit": unit.to_attrs(),
    }
    if dp.mechanism == "gauss":
        multiplier = calibrate_noise("pld", dp.epsilon, dp.delta, 1.0, 1)
        std = multiplier * dp.clip**2
        gram += symmetric_noise(rng.standard_normal, len(gram), std)
        basis = scipy_sparse_linalg.eigsh(gram, k=k, which="LA")[1][:, ::-1]
        ledger |= {
            "mechanism": unit.mechanism(
                "Analyze-Gauss (symmetric Gaussian on GᵀG)", ROW_RELATIONS, WEIGHTED_PERSON_BOUND
            ),
            "delta": dp.delta,
            "event": GaussianEvent(multiplier).to_dict(),
            "noise_multiplier": multiplier,
            "noise_std": std,
            "accountant": "pld",
            "note": f"clip {dp.clip:g}, noise σ={std:.4g} (multiplier {multiplier:.4g}, PLD)",
        }
    else:
        eta = dp.epsilon / (2 * dp.clip**2)
        basis = sample_matrix_bingham(gram, k, eta, rng, dp.sweeps)
        sampler = "exact rejection sampler" if k == 1 else f"Gibbs sampler, {dp.sweeps} sweeps (approximate)"
        ledger |= {
            "mechanism": unit.mechanism(
                "exponential mechanism (matrix Bingham)", ROW_RELATIONS, WEIGHTED_PERSON_BOUND
            ),
            "delta": 0.0,
            "sampler": sampler,
            "event": ExponentialEvent(dp.epsilon).to_dict(),
            "note": f"clip {dp.clip:g}, utility tr(VᵀGᵀGV) with sensitivity clip², {sampler}",
        }
    return DPSubspaceResult(basis, matrix.rows, ledger)
