"""Few-shot heads that release one statistic of the private rows and learn the rest from the PUBLIC rows.

- `dp-prototypes`: one Gaussian release of the per-class sums of the unit-norm private rows (as
  public-lda's), each class's prototype the direction of its noisy sum; then rounds of k-means on the public
  rows started from those prototypes (each public row joins its nearest prototype, each prototype moves to
  the mean direction of its rows), as DPPL refines its prototypes on public data (Wahdany et al., "Beyond the
  mean: differentially private prototypes for private transfer learning", NeurIPS 2024). The head scores a
  row by its cosine to each prototype over a temperature τ = 0.1 (its probabilities are a softmax of scaled
  cosines, not calibrated): a direction needs no class size, so the head reads no row count.
- `public-votes`: k-means on the public rows (public randomness: the run's seed), then one Gaussian release
  of the histogram of private labels per centre (each private row votes at its nearest centre); each public
  row takes its centre's noisy majority label and a logistic regression fitted to those labelled public rows
  is the head. The number of centres is set from the released row count and the noise scale (enough private
  votes per centre to out-vote the noise), the public rows and the classes.

Both releases move by at most one unit per private row (its weight, 1/(its person's rows) with the person as
the unit): L2 sensitivity 1 under adding or removing one row. Everything after the release is
post-processing of public rows and the released statistic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Cell, Reads, option
from pillar_cli.methods.closed_form import ClosedFormHead, class_sums
from pillar_cli.methods.data import SweepData

# logits are cosines over τ, as cosine classifiers scale them: cosines alone give near-uniform probabilities
COSINE_TEMPERATURE = 0.1
VOTES_PER_CENTRE_IN_SIGMAS = 4.0  # the rule's centres hold about this many noise scales of private votes each
PUBLIC_ROWS_PER_CENTRE = 5  # and at least this many public rows each


def unit_rows(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def public_rows(cell: Cell, method: ClosedFormHead) -> np.ndarray:
    """The public split as the head reads it (projected, unit norm); refused when too small to cluster."""
    public = method.features(cell.mapping, cell.data.public, cell.k)
    if len(public) < cell.data.num_classes:
        raise DataError(
            f"method '{method.name}' clusters the public split, whose {len(public)} rows are fewer than the "
            f"{cell.data.num_classes} classes",
            hint="embed more public rows",
        )
    return public


@dataclass(frozen=True)
class PrototypeOptions:
    prototype_rounds: int = option(
        5,
        "rounds of k-means on the PUBLIC rows started from the noisy class prototypes (0: the noisy "
        "prototypes as released); post-processing, free in ε.",
    )

    def __post_init__(self) -> None:
        if self.prototype_rounds < 0:
            raise UsageError(f"{param('prototype_rounds')} must be at least 0 (got {self.prototype_rounds})")


def refined_prototypes(prototypes: np.ndarray, public: np.ndarray, rounds: int) -> np.ndarray:
    """(C, d) unit prototypes after `rounds` of spherical k-means on the public unit rows; a prototype that no
    public row joins stays where it is."""
    for _ in range(rounds):
        nearest = (public @ prototypes.T).argmax(axis=1)
        sums = np.eye(len(prototypes))[nearest].T @ public
        joined = np.bincount(nearest, minlength=len(prototypes)) > 0
        prototypes = np.where(joined[:, None], unit_rows(sums), prototypes)
    return prototypes


class DPPrototypes(ClosedFormHead):
    name = "dp-prototypes"
    family = "DP prototypes"
    description = (
        "nearest class prototype (cosine): one Gaussian release of the per-class sums of the private rows "
        "(unit norm), refined by k-means on the PUBLIC rows; k components"
    )
    options = PrototypeOptions
    reads = MappingProxyType({Reads.PUBLIC_ROWS: "to refine the prototypes"})
    reads_count = False  # a prototype is a direction: no class size is read
    mechanism_description = (
        "one Gaussian release of the per-class sums of the unit-norm rows, L2 sensitivity 1; the "
        "prototypes their directions, refined on public rows"
    )

    def configs(self, *, seeds: list[int], **_: object) -> list[RunConfig]:
        """One release per seed (a prototype head has no ridge)."""
        return [RunConfig.one_release(seed) for seed in seeds]

    def statistics(self, cell: Cell, rows: np.ndarray, row_weights: np.ndarray) -> tuple:
        data = cell.data
        rounds = self.options_or_defaults(cell.options).prototype_rounds
        public = public_rows(cell, self) if rounds else np.zeros((0, rows.shape[1]))
        return class_sums(rows, data.private_y, data.num_classes, row_weights), public, rounds

    def model_attrs(self, options: PrototypeOptions | None) -> dict:
        return {
            "dp_prototypes": {
                "prototype_rounds": self.options_or_defaults(options).prototype_rounds,
                "note": "the noisy class sums' directions, refined by k-means on the PUBLIC rows "
                "(post-processing)",
            }
        }

    def solve(
        self, statistics: tuple, noise: Callable[[tuple], np.ndarray], ridge: float | None, sigma: float
    ) -> LinearHead:
        sums, public, rounds = statistics
        prototypes = refined_prototypes(unit_rows(sums + noise(sums.shape)), public, rounds)
        return LinearHead(
            (prototypes.T / COSINE_TEMPERATURE).astype(np.float32), np.zeros(len(prototypes), np.float32)
        )


@dataclass(frozen=True)
class VoteOptions:
    vote_centres: int = option(
        0,
        "k-means centres on the PUBLIC rows whose private label votes are released (0: the rule, "
        "about ñ/(4σ) centres, at least one a class, at most one per 5 public rows).",
    )

    def __post_init__(self) -> None:
        if self.vote_centres < 0:
            raise UsageError(f"{param('vote_centres')} must be at least 0 (got {self.vote_centres})")


def rule_centres(released_rows: float, sigma: float, classes: int, public_rows: int) -> int:
    """Centres for a noisy vote: about ñ/(4σ), so that a centre's votes stand four noise scales above zero, at
    least one a class and at most one per five public rows (fewer public rows than that: one a public row)."""
    most = max(classes, public_rows // PUBLIC_ROWS_PER_CENTRE)
    wanted = most if sigma == 0 else round(released_rows / (VOTES_PER_CENTRE_IN_SIGMAS * sigma))
    return min(public_rows, max(classes, min(most, wanted)))


def centres_of(public: np.ndarray, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(centres, each public row's centre) of k-means on the public rows, seeded by the run's public seed."""
    from sklearn.cluster import KMeans

    fitted = KMeans(count, n_init=3, random_state=seed).fit(public)
    return fitted.cluster_centers_, fitted.labels_


def vote_histogram(
    rows: np.ndarray,
    labels: np.ndarray,
    centres: np.ndarray,
    classes: int,
    row_weights: np.ndarray | None = None,
) -> np.ndarray:
    """(centres, C): each row's weight (None: 1) at (its nearest centre, its label); a row of weight ≤ 1 moves
    one entry by at most its weight."""
    nearest = (-2 * rows @ centres.T + (centres**2).sum(axis=1)).argmin(axis=1)
    weights = np.ones(len(rows)) if row_weights is None else row_weights
    return np.eye(len(centres))[nearest].T @ (np.eye(classes)[labels] * weights[:, None])


def student(public: np.ndarray, labels: np.ndarray, classes: int) -> LinearHead:
    """A logistic regression on the labelled public rows (not private: they are public rows and released
    votes); a class no public row carries gets a bias no logit reaches."""
    present = np.unique(labels)
    weights = np.zeros((public.shape[1], classes), np.float32)
    bias = np.full(classes, -1e4, np.float32)
    if len(present) == 1:
        bias[present[0]] = 0.0
        return LinearHead(weights, bias)
    from sklearn.linear_model import LogisticRegression

    fitted = LogisticRegression(C=10.0, max_iter=500).fit(public, labels)
    coef, intercept = (
        (np.vstack([-fitted.coef_, fitted.coef_]) / 2, np.array([-1, 1]) * fitted.intercept_ / 2)
        if len(present) == 2
        else (fitted.coef_, fitted.intercept_)
    )
    weights[:, present] = coef.T
    bias[present] = intercept
    return LinearHead(weights, bias)


class PublicVotes(ClosedFormHead):
    name = "public-votes"
    family = "public votes"
    description = (
        "public-cluster label votes: k-means on the PUBLIC rows, one Gaussian release of the private labels' "
        "histogram per centre, a logistic regression on the public rows labelled by their centres; "
        "k components"
    )
    options = VoteOptions
    reads = MappingProxyType({Reads.PUBLIC_ROWS: "to cluster and to train the student on"})
    mechanism_description = (
        "one Gaussian release of the histogram of private labels per public k-means centre (each unit-norm "
        "row votes at its nearest centre), L2 sensitivity 1; centres from the released row count"
    )

    def configs(self, *, seeds: list[int], **_: object) -> list[RunConfig]:
        """One release per seed; the seed also seeds the public k-means."""
        return [RunConfig.one_release(seed) for seed in seeds]

    def check_data(self, data: SweepData, options: VoteOptions | None) -> None:
        centres = self.options_or_defaults(options).vote_centres
        if data.public_x is not None and centres > len(data.public_x):
            raise UsageError(
                f"{param('vote_centres')} {centres} is more than the {len(data.public_x)} public rows"
            )

    def model_attrs(self, options: VoteOptions | None) -> dict:
        centres = self.options_or_defaults(options).vote_centres
        return {
            "public_votes": {
                "centres": centres
                or f"the rule: round(ñ/({VOTES_PER_CENTRE_IN_SIGMAS:g}σ)), at least one a class, at most one "
                f"per {PUBLIC_ROWS_PER_CENTRE} public rows",
                "student": "logistic regression (C = 10) on the public rows labelled by their centre's noisy "
                "majority (post-processing)",
            }
        }

    def train_cell(self, cell: Cell) -> list:
        """Per seed its own public k-means (the statistics differ by seed), then one release each."""
        runs = []
        for config in cell.configs:
            runs.extend(super().train_cell(replace(cell, configs=[config])))
        return runs

    def statistics(self, cell: Cell, rows: np.ndarray, row_weights: np.ndarray) -> tuple:
        data, public = cell.data, public_rows(cell, self)
        count = self.options_or_defaults(cell.options).vote_centres or rule_centres(
            cell.rows.value, cell.noise_multiplier(1.0, 1), data.num_classes, len(public)
        )
        centres, assigned = centres_of(public, count, cell.configs[0].seed)
        return vote_histogram(rows, data.private_y, centres, data.num_classes, row_weights), public, assigned

    def solve(
        self, statistics: tuple, noise: Callable[[tuple], np.ndarray], ridge: float | None, sigma: float
    ) -> LinearHead:
        votes, public, assigned = statistics
        labels = (votes + noise(votes.shape)).argmax(axis=1)
        return student(public, labels[assigned], votes.shape[1])


PROTOTYPES = DPPrototypes()
VOTES = PublicVotes()
