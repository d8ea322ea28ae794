"""What a model artifact states about all its runs together, as typed records read and written here only: the
ledger every run was accounted under, the public data and how it was chosen, the row count, the noise, the
selection, the whole file's guarantee. Each stage reads a model's header through `ModelHeader.of`; the schema
(artifacts/schema.py) has checked the types of what it reads.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.core import Artifact
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.premises import Premises
from pillar_cli.privacy.guarantee import PrivacyUnit, total_delta


@dataclass(frozen=True, kw_only=True)
class ModelLedger:
    """How every run of the model was accounted: the accountant, δ, the clipping norm C."""

    accountant: str
    delta: float
    clip: float
    accountant_description: str = ""
    epsilon_is_upper_bound: bool = True

    @classmethod
    def from_attrs(cls, record: dict) -> ModelLedger:
        return cls(accountant=str(record["accountant"]), delta=float(record["delta"]), clip=float(record["clip"]),
                   accountant_description=str(record.get("accountant_description", "")),
                   epsilon_is_upper_bound=bool(record.get("epsilon_is_upper_bound", True)))


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


@dataclass(frozen=True, kw_only=True)
class ModelHeader:
    """A model artifact's attributes that hold for all its runs."""

    num_classes: int
    n_private: int
    ledger: ModelLedger
    selection: list[SelectedCell] = field(default_factory=list)  # per (method, k, ε) cell: what chose which runs
    selection_mode: str = "val"  # "val", or "accounted": private cells hold the runs their selections released
    selection_note: str = ""
    trained_on: tuple[str, ...] = ("private",)
    row_l2_normalised: bool = False
    private_fraction: float = 1.0
    public_choice: PublicChoice | None = None
    public_data: dict | None = None  # what the projection was fitted on (projection/public_choice.public_data_of)
    count: dict | None = None  # the row count the runs read (privacy/count.RowCount) and which methods read it
    noise: dict = field(default_factory=dict)  # where the noise came from (randomness.NoiseSource.describe)
    whole_file: dict | None = None  # every head together: kind, ε, δ, composition, statement
    selection_ledger: dict | None = None  # each accounted selection's DP events
    mechanisms: dict[str, str] = field(default_factory=dict)  # per method, its mechanism in words
    features: dict = field(default_factory=dict)  # how the features were made, and the class names
    network: dict | None = None  # a fine-tuned network's architecture (embedding/networks.NetworkSpec)
    default_rule: Any = None  # the default rule a ruled cell followed
    source: str | None = None  # the source its rows came from, in words (a fine-tuned network's)
    source_fingerprint: str | None = None  # what names the source's rows (artifacts.Split.source_fingerprint)
    projection_release: dict | None = None  # the DP release of a projection fitted on the private rows (DP-PCA)
    risk_target: dict | None = None  # the membership risk its runs' ε was calibrated to (privacy/risk_target.py)
    unit: PrivacyUnit = PrivacyUnit()  # what the runs' neighbouring datasets differ by: a row, or a person

    @classmethod
    def of(cls, model: Artifact) -> ModelHeader:
        attrs = model.attrs
        return cls(num_classes=int(attrs["num_classes"]), n_private=int(attrs["n_private"]),
                   ledger=ModelLedger.from_attrs(attrs["ledger"]),
                   selection=[SelectedCell.from_attrs(cell) for cell in attrs.get("selection", [])],
                   selection_mode=str(attrs.get("selection_mode", "val")),
                   selection_note=str(attrs.get("selection_note", "")),
                   trained_on=tuple(attrs.get("trained_on", ("private",))),
                   row_l2_normalised=bool(attrs.get("row_l2_normalised", False)),
                   private_fraction=float(attrs.get("private_fraction", 1.0)),
                   public_choice=PublicChoice.of(model),
                   public_data=attrs.get("public_data"), count=attrs.get("count"), noise=attrs.get("noise") or {},
                   whole_file=attrs.get("whole_file"), selection_ledger=attrs.get("selection_ledger"),
                   mechanisms=attrs.get("mechanisms") or {}, features=attrs.get("features") or {},
                   network=attrs.get("network"), default_rule=attrs.get("default_rule"), source=attrs.get("source"),
                   source_fingerprint=attrs.get("source_fingerprint"),
                   projection_release=attrs.get("projection_release"), risk_target=attrs.get("risk_target"),
                   unit=PrivacyUnit.from_attrs(attrs.get("privacy_unit")))

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
