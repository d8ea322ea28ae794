"""What a sweep trains on and under which privacy settings: the rows (raw embeddings; each method applies the
public scaler itself), their units, the val rows, the public rows some methods read, and the DP-GSD release
that chose the public data; δ, clip, accountant, the noise source, the count's share, the unit (set by the
plan)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from pillar_cli.artifacts.embeddings import kept_rows
from pillar_cli.artifacts.stored_rows import Rows
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.privacy.count import COUNT_SHARE, DEFAULT_DELTA
from pillar_cli.privacy.release import DPRelease
from pillar_cli.privacy.unit import PrivacyUnit, Units
from pillar_cli.projection import PublicPCA
from pillar_cli.randomness import SECRET, NoiseSource


@dataclass(frozen=True)
class PrivacySettings:
    delta: float = DEFAULT_DELTA  # resolved: the plan sets the default (privacy/count.py default_delta)
    clip: float = 1.0
    accountant: str = "prv"
    noise: NoiseSource = SECRET  # where every private draw comes from (seeded only for experiments: NOT DP)
    n_public: bool = False  # the number of training rows is public knowledge: read exactly, no noisy count
    count_share: float = COUNT_SHARE  # the noisy count's share of the smallest target's μ² (privacy/count.py)
    unit: PrivacyUnit = PrivacyUnit()  # what neighbouring datasets differ by (set by the plan)


SplitT = TypeVar("SplitT", bound="LabelledSplit")


class LabelledSplit(Protocol):
    """Labelled rows of one split as an entry point read them: an embeddings file's split (artifacts.Split)
    or arrays given to the Python API (`GivenRows`)."""

    @property
    def name(self) -> str: ...
    @property
    def features(self) -> Rows: ...
    @property
    def labels(self) -> np.ndarray | None: ...
    @property
    def index(self) -> np.ndarray | None: ...
    @property
    def units(self) -> Units: ...
    def joined(self: SplitT, other: SplitT) -> SplitT: ...
    def subsample(self: SplitT, fraction: float) -> SplitT: ...


@dataclass(frozen=True)
class GivenRows:
    """Labelled rows given as arrays (the Python API's X, y and groups), with each row's unit."""

    features: np.ndarray
    labels: np.ndarray
    units: Units
    name: str = "private"
    index: np.ndarray | None = None  # arrays name no source rows

    def joined(self, other: GivenRows) -> GivenRows:
        """These rows followed by the val rows that train beside them: both name their persons, or neither."""
        if self.units.grouped and not other.units.grouped:
            raise UsageError(
                f"{param('groups_val')} must name the persons of the val rows, which train beside X"
            )
        return GivenRows(
            np.concatenate([self.features, other.features]),
            np.concatenate([self.labels, other.labels]),
            self.units.joined(other.units),
            f"{self.name}+{other.name}",
        )

    def subsample(self, fraction: float) -> GivenRows:
        """The rows a seeded fraction keeps, as Split.subsample keeps them (the whole at 1)."""
        if fraction == 1.0:
            return self
        rows = kept_rows(self.features, fraction, "private_fraction", self.name)
        return GivenRows(self.features[rows], self.labels[rows], self.units.take(rows), self.name)


@dataclass(frozen=True)
class SweepData:
    """Everything a sweep trains on. Features are raw embeddings; the public scaler is applied per method."""

    pca: PublicPCA
    private_x: Rows
    private_y: np.ndarray
    val_x: Rows | None  # None: no val split, allowed when each cell has a single configuration
    val_y: np.ndarray | None
    num_classes: int
    public_x: Rows | None = None  # unlabelled public rows (GEP's anchor subspace)
    warm_start: tuple[np.ndarray, np.ndarray] | None = None  # (W (D, C), b) in the standardised space
    private_index: np.ndarray | None = None  # source row ids, when known: public and private must be disjoint
    public_index: np.ndarray | None = None
    # the embeddings file the rows come from, for messages (None: rows given as arrays)
    source: str | None = None
    # labelled public rows (AdaDPS's preconditioner)
    public_labelled: tuple[Rows, np.ndarray] | None = None
    units: Units = None  # type: ignore[assignment]  # each training row's unit (left out: each row its own)
    # each val row's unit, where there are val rows (left out: each row its own)
    val_units: Units | None = None
    public_choice: DPRelease | None = None  # the DP-GSD release that chose the public data, where one did
    # a digest naming the training rows' content (None: hashed when the count is drawn)
    rows_named: str | None = None
    val_index: np.ndarray | None = None  # the val rows' source row ids, when known
    trained_on: tuple[str, ...] = ("private",)  # the splits the training rows come from

    def __post_init__(self) -> None:
        object.__setattr__(self, "units", self.units or Units.rows(len(self.private_x)))
        if len(self.units) != len(self.private_x):
            raise DataError(f"{self.name}: {len(self.units)} persons for {len(self.private_x)} rows")
        if self.val_x is not None:
            object.__setattr__(self, "val_units", self.val_units or Units.rows(len(self.val_x)))

    @property
    def public(self) -> Rows:
        """The unlabelled public rows, for a method that reads them (the plan refuses such a method
        without)."""
        if self.public_x is None:
            raise DataError(f"{self.name}: this method reads the public split, which was not given")
        return self.public_x

    @property
    def labelled_public(self) -> tuple[Rows, np.ndarray]:
        """The labelled public rows, for a method that reads them (the plan refuses such a method without)."""
        if self.public_labelled is None:
            raise DataError(f"{self.name}: this method reads a labelled public split, which was not given")
        return self.public_labelled

    @property
    def name(self) -> str:
        return "the private split" if self.source is None else f"{self.source}:private"


def sweep_data(
    pca: PublicPCA,
    training: LabelledSplit,
    num_classes: int,
    selecting: LabelledSplit | None = None,
    **context: Any,
) -> SweepData:
    """The one place a sweep's data is made, from the splits an entry point read: the rows that train and
    the val rows that select, if any (methods/arrangement.py decides which). `context`: the rest of
    `SweepData` (public rows, a warm start, the source's name, ...)."""
    if training.labels is None:
        raise DataError(f"{context.get('source') or 'the private split'}: its private split holds no labels")
    return SweepData(
        pca=pca,
        private_x=training.features,
        private_y=training.labels,
        val_x=None if selecting is None else selecting.features,
        val_y=None if selecting is None else selecting.labels,
        num_classes=num_classes,
        private_index=training.index,
        units=training.units,
        val_units=None if selecting is None else selecting.units,
        val_index=None if selecting is None else selecting.index,
        trained_on=tuple(training.name.split("+")),
        **context,
    )
