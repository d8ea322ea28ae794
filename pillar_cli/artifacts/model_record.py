"""What a model artifact states about all its runs together, as one typed record: the guarantee every run is
of (the plan's one record: unit, relation, row count, accountant, δ, upstream releases), how the runs were
clipped and accounted, the public data and how it was chosen, the noise, the selection, the whole file's
guarantee. Every writer (a sweep, fine-tuning) builds a `ModelRecord` and stores `to_attrs()`; every stage
reads `ModelRecord.of(model)`; the schema's table of a model's attributes is made from its fields
(artifacts/stored.py), so that writer, reader and validator cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pillar_cli.artifacts.artifact import Artifact
from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.stored import stored, stored_fields_of, stored_keys, to_attrs
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.premises import Premises
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.privacy.risk_target import RiskTarget
from pillar_cli.privacy.unit import PrivacyUnit

NUMBER = (int, float)


@dataclass(frozen=True, kw_only=True)
class ModelLedger:
    """How every run of the model was clipped and accounted beyond its guarantee: the clipping norm C, the
    accountant in words, and where each run's ε is stored."""

    clip: float = stored(NUMBER, decode=float)
    accountant_description: str = stored(str, default="")
    epsilon_is_upper_bound: bool = stored(bool, default=True)
    # None: no split was protected (public pre-training)
    protected_split: str | None = stored(str, default=None)
    mechanism: str | None = stored(str, default=None)  # a fine-tuned network's; a sweep's are per method
    per_run: str | None = stored(str, default=None)  # where each run's event and ε are stored

    @classmethod
    def from_attrs(cls, record: dict) -> ModelLedger:
        return cls(**stored_fields_of(cls, record))

    def to_attrs(self) -> dict:
        return to_attrs(self)


@dataclass(frozen=True, kw_only=True)
class PublicChoice:
    """A projection's public split chosen from a GSD ranking: which GSD, which candidate, the private split it
    read, and its DP release (None: it read the private split without DP), which every model trained on the
    projection composes as an upstream release of its guarantee."""

    gsd: dict  # the GSD artifact's InputRef
    candidate: str
    gsd_distance: float
    private_input: dict  # the InputRef of the private split the GSD read
    release: DPRelease | None
    note: str

    @classmethod
    def from_attrs(cls, record: dict | None) -> PublicChoice | None:
        if record is None:
            return None
        release = record.get("release")
        return cls(
            gsd=record["gsd"],
            candidate=record["candidate"],
            gsd_distance=record["gsd_distance"],
            private_input=record["private_input"],
            note=record["note"],
            release=None if release is None else DPRelease.from_attrs(release, Released.PUBLIC_CHOICE),
        )

    @classmethod
    def of(cls, artifact: Artifact) -> PublicChoice | None:
        """The choice a projection (or a model trained on one) records; None: its public data was not
        chosen."""
        return cls.from_attrs(artifact.attrs.get("public_choice"))

    def to_attrs(self) -> dict:
        return {
            "gsd": self.gsd,
            "candidate": self.candidate,
            "gsd_distance": self.gsd_distance,
            "private_input": self.private_input,
            "note": self.note,
            "release": None if self.release is None else self.release.to_attrs(),
        }

    @property
    def released(self) -> bool:
        """The choice was a DP release (its ε composes into every run's)."""
        return self.release is not None


def _cells(cells: list[SelectedCell]) -> list[dict]:
    return [cell.to_attrs() for cell in cells]


def _read_cells(cells: list[dict]) -> list[SelectedCell]:
    return [SelectedCell.from_attrs(cell) for cell in cells]


@dataclass(frozen=True, kw_only=True)
class ModelRecord:
    """A model artifact's attributes that hold for all its runs (the run table and heads are arrays:
    artifacts/model.py). Method-specific notes (`method_notes`, e.g. noisy-sgd's boosting) are stored at the
    top level under each method's key."""

    num_classes: int = stored(int)
    n_private: int = stored(int)
    guarantee: Guarantee = stored(dict, encode=Guarantee.to_attrs, decode=Guarantee.from_attrs)  # the plan's
    ledger: ModelLedger = stored(dict, encode=ModelLedger.to_attrs, decode=ModelLedger.from_attrs)
    selection_note: str = stored(str)
    selection: list[SelectedCell] = stored(list, factory=list, encode=_cells, decode=_read_cells)  # per cell
    selection_mode: str = stored(str, default="val")  # or "accounted": private cells hold what they released
    selection_ledger: dict | None = stored(dict, default=None)  # each accounted selection's DP events
    trained_on: tuple[str, ...] = stored(list, default=("private",), encode=list, decode=tuple)
    row_l2_normalised: bool = stored(bool, default=False)
    private_fraction: float = stored(NUMBER, default=1.0)
    # (i, n): the grid's i-th of n
    shard: tuple[int, int] = stored(list, default=(0, 1), encode=list, decode=tuple)
    feature_space: str | None = stored(str, default=None)  # what a head's weights multiply, in words
    max_epsilon_spent: float | None = stored(NUMBER, default=None)
    mechanisms: dict[str, str] = stored(dict, factory=dict)  # per method, its mechanism in words
    public_choice: PublicChoice | None = stored(
        dict, default=None, encode=PublicChoice.to_attrs, decode=PublicChoice.from_attrs
    )
    # what the projection was fitted on (public_data_of)
    public_data: dict | None = stored(dict, default=None)
    # methods that read it
    count_read_by: tuple[str, ...] = stored(list, default=(), encode=list, decode=tuple)
    noise: dict = stored(dict, factory=dict)  # where the noise came from (randomness.NoiseSource.describe)
    # every head together: kind, ε, δ, composition, statement
    whole_file: dict | None = stored(dict, default=None)
    features: dict = stored(dict, factory=dict)  # how the features were made, and the class names
    network: dict | None = stored(dict, default=None)  # a fine-tuned network's architecture (NetworkSpec)
    default_rule: dict | None = stored(dict, default=None)  # the default rule a ruled cell followed
    # the source its rows came from, in words (a fine-tuned network's)
    source: str | None = stored(str, default=None)
    source_fingerprint: str | None = stored(str, default=None)  # what names the source's rows (Split)
    risk_target: RiskTarget | None = stored(
        dict, default=None, encode=RiskTarget.to_attrs, decode=RiskTarget.from_attrs
    )  # the risk its runs' ε was calibrated to
    persons: dict | None = stored(dict, default=None)  # where the persons of `persons/<split>` came from
    max_physical_batch: int | None = stored(int, default=None)  # a fine-tuned network's memory bound
    # the public pre-training a network started from
    pretrained_from: dict | None = stored(dict, default=None)
    method_notes: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def from_attrs(cls, attrs: dict) -> ModelRecord:
        keys = stored_keys(cls)
        return cls(
            **stored_fields_of(cls, attrs),
            method_notes={key: value for key, value in attrs.items() if key not in keys},
        )

    @classmethod
    def of(cls, model: Artifact) -> ModelRecord:
        return cls.from_attrs(model.attrs)

    def to_attrs(self) -> dict:
        return {**to_attrs(self), **self.method_notes}

    @property
    def delta_total(self) -> float:
        """The δ every run's recorded ε holds at: the guarantee's, its upstream releases' included."""
        return self.guarantee.delta_total

    @property
    def unit(self) -> PrivacyUnit:
        """What neighbouring datasets differ by: a row, or a person."""
        return self.guarantee.unit

    @property
    def count(self) -> RowCount | None:
        """The row count the runs read, as the plan released it (or took as exact)."""
        return self.guarantee.count

    @property
    def accountant(self) -> str:
        return self.guarantee.accountant

    @property
    def accounted(self) -> bool:
        return self.selection_mode == "accounted"

    @property
    def class_names(self) -> list[str]:
        """The class names the features recorded, else the class numbers."""
        return list(self.features.get("class_names") or [str(c) for c in range(self.num_classes)])

    @property
    def premises(self) -> Premises:
        """How the embeddings it was trained on fixed their class set, splits and rows."""
        return Premises.from_attrs(self.features.get("premises"))

    @property
    def feature_recipe(self) -> FeatureRecipe:
        """How the features were made."""
        return FeatureRecipe.from_attrs(self.features)

    @property
    def notes(self) -> list[str]:
        """What the runs rest on, in words: the public data, how it was chosen, the row count."""
        choice = self.public_choice
        return [
            *([self.public_data["note"]] if self.public_data else []),
            *(
                []
                if choice is None
                else [choice.note + ("" if not choice.released else f", at total δ = {self.delta_total:g}")]
            ),
            *([self.count.describe()] if self.count else []),
        ]
