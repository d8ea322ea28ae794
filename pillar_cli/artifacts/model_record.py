"""What a model artifact states about all its runs together, as one typed record: the ledger every run was accounted
under, the public data and how it was chosen, the row count, the noise, the selection, the whole file's guarantee.
Every writer (a sweep, fine-tuning) builds a `ModelRecord` and stores `to_attrs()`; every stage reads
`ModelRecord.of(model)`; the schema's table of a model's attributes is made from its fields (artifacts/stored.py),
so that writer, reader and validator cannot disagree.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pillar_cli.artifacts.artifact import Artifact
from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.stored import stored, stored_fields_of, stored_keys, to_attrs
from pillar_cli.privacy.guarantee import total_delta
from pillar_cli.privacy.unit import PrivacyUnit
from pillar_cli.privacy.premises import Premises
from pillar_cli.privacy.risk_target import RiskTarget

NUMBER = (int, float)


@dataclass(frozen=True, kw_only=True)
class ModelLedger:
    """How every run of the model was accounted: the accountant, δ, the clipping norm C, and what each run's ε
    covers."""

    accountant: str = stored(str)
    delta: float = stored(NUMBER, decode=float)
    clip: float = stored(NUMBER, decode=float)
    accountant_description: str = stored(str, default="")
    epsilon_is_upper_bound: bool = stored(bool, default=True)
    protected_split: str | None = stored(str, default=None)  # None: no split was protected (public pre-training)
    mechanism: str | None = stored(str, default=None)  # a fine-tuned network's; a sweep's are per method
    per_run: str | None = stored(str, default=None)  # where each run's event and ε are stored

    @classmethod
    def from_attrs(cls, record: dict) -> ModelLedger:
        return cls(**stored_fields_of(cls, record))

    def to_attrs(self) -> dict:
        return to_attrs(self)


@dataclass(frozen=True, kw_only=True)
class PublicChoice:
    """A projection's public split chosen from a GSD ranking: which GSD, which candidate, the private split it read,
    and its DP release (None: it read the private split without DP). On a model: the δ the runs' composed ε holds
    at (the runs' δ plus the release's)."""

    gsd: dict  # the GSD artifact's InputRef
    candidate: str
    gsd_distance: float
    private_input: dict  # the InputRef of the private split the GSD read
    release: dict | None  # the DP-GSD release's ledger (mechanism, epsilon, delta, noise)
    note: str
    delta_total: float | None = None
    composition: str | None = None

    @classmethod
    def from_attrs(cls, record: dict | None) -> PublicChoice | None:
        if record is None:
            return None
        return cls(**{name: record.get(name) for name in cls.__dataclass_fields__})

    @classmethod
    def of(cls, artifact: Artifact) -> PublicChoice | None:
        """The choice a projection (or a model trained on one) records; None: its public data was not chosen."""
        return cls.from_attrs(artifact.attrs.get("public_choice"))

    def to_attrs(self) -> dict:
        return asdict(self)

    @property
    def released(self) -> bool:
        """The choice was a DP release (its ε composes into every run's)."""
        return self.release is not None

    def on_model(self, delta: float) -> PublicChoice:
        """As a model trained on the projection records it: with the δ its runs' composed ε holds at."""
        released = [self.release] if self.release else []
        return PublicChoice(**{**asdict(self), "delta_total": total_delta(delta, released),
                               "composition": None if self.release is None else
                               "each run's event tree composed with the release's, accounted at delta_total"})


def _cells(cells: list[SelectedCell]) -> list[dict]:
    return [cell.to_attrs() for cell in cells]


def _read_cells(cells: list[dict]) -> list[SelectedCell]:
    return [SelectedCell.from_attrs(cell) for cell in cells]


@dataclass(frozen=True, kw_only=True)
class ModelRecord:
    """A model artifact's attributes that hold for all its runs (the run table and heads are arrays:
    artifacts/model.py). Method-specific notes (`method_notes`, e.g. noisy-sgd's boosting) are stored at the top
    level under each method's key."""

    num_classes: int = stored(int)
    n_private: int = stored(int)
    ledger: ModelLedger = stored(dict, encode=ModelLedger.to_attrs, decode=ModelLedger.from_attrs)
    selection_note: str = stored(str)
    selection: list[SelectedCell] = stored(list, factory=list, encode=_cells, decode=_read_cells)  # per cell
    selection_mode: str = stored(str, default="val")  # or "accounted": private cells hold what they released
    selection_ledger: dict | None = stored(dict, default=None)  # each accounted selection's DP events
    unit: PrivacyUnit = stored(dict, key="privacy_unit", default=PrivacyUnit(), encode=PrivacyUnit.to_attrs,
                               decode=PrivacyUnit.from_attrs)  # what neighbouring datasets differ by
    trained_on: tuple[str, ...] = stored(list, default=("private",), encode=list, decode=tuple)
    row_l2_normalised: bool = stored(bool, default=False)
    private_fraction: float = stored(NUMBER, default=1.0)
    shard: tuple[int, int] = stored(list, default=(0, 1), encode=list, decode=tuple)  # (i, n): the grid's i-th of n
    feature_space: str | None = stored(str, default=None)  # what a head's weights multiply, in words
    max_epsilon_spent: float | None = stored(NUMBER, default=None)
    mechanisms: dict[str, str] = stored(dict, factory=dict)  # per method, its mechanism in words
    public_choice: PublicChoice | None = stored(dict, default=None, encode=asdict, decode=PublicChoice.from_attrs)
    public_data: dict | None = stored(dict, default=None)  # what the projection was fitted on (public_data_of)
    count: dict | None = stored(dict, default=None)  # the row count the runs read (privacy/count.RowCount), readers
    noise: dict = stored(dict, factory=dict)  # where the noise came from (randomness.NoiseSource.describe)
    whole_file: dict | None = stored(dict, default=None)  # every head together: kind, ε, δ, composition, statement
    features: dict = stored(dict, factory=dict)  # how the features were made, and the class names
    network: dict | None = stored(dict, default=None)  # a fine-tuned network's architecture (NetworkSpec)
    default_rule: dict | None = stored(dict, default=None)  # the default rule a ruled cell followed
    source: str | None = stored(str, default=None)  # the source its rows came from, in words (a fine-tuned network's)
    source_fingerprint: str | None = stored(str, default=None)  # what names the source's rows (Split)
    projection_release: dict | None = stored(dict, default=None)  # the DP release of a DP-PCA projection
    risk_target: RiskTarget | None = stored(dict, default=None, encode=RiskTarget.to_attrs,
                                            decode=RiskTarget.from_attrs)  # the risk its runs' ε was calibrated to
    persons: dict | None = stored(dict, default=None)  # where the persons of `persons/<split>` came from
    max_physical_batch: int | None = stored(int, default=None)  # a fine-tuned network's memory bound
    pretrained_from: dict | None = stored(dict, default=None)  # the public pre-training a network started from
    method_notes: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def from_attrs(cls, attrs: dict) -> ModelRecord:
        keys = stored_keys(cls)
        return cls(**stored_fields_of(cls, attrs),
                   method_notes={key: value for key, value in attrs.items() if key not in keys})

    @classmethod
    def of(cls, model: Artifact) -> ModelRecord:
        return cls.from_attrs(model.attrs)

    def to_attrs(self) -> dict:
        return {**to_attrs(self), **self.method_notes}

    @property
    def delta_total(self) -> float:
        """The δ every run's recorded ε holds at: the ledger's, plus a DP public choice's and a DP-PCA's."""
        choice = None if self.public_choice is None else self.public_choice.release
        return total_delta(self.ledger.delta, [release for release in (choice, self.projection_release) if release])

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
        return [*([self.public_data["note"]] if self.public_data else []),
                *([] if choice is None else
                  [choice.note + ("" if not choice.released else f", at total δ = {choice.delta_total:g}")]),
                *([self.count["note"]] if self.count else [])]
