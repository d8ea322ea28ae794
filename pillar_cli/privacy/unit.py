"""The privacy unit: what two neighbouring datasets differ by — one training row, or one person with all their
rows — and every training row's unit as a value.

Where one person has many rows (a patient's X-rays, a slide's patches) a guarantee per row protects that
person only at about (their rows)·ε. With the person as the unit, the sampler draws persons, each person's
contribution to a release is bounded as one row's is (linear/persons.py), the row count read is the count of
persons, and every statement names the unit and where the persons came from: rows of one human filed under two
ids are two persons.

`Units` holds every training row's unit (each row its own, or a person): the training code reads the count,
the row weights and the engine's person layout from it, never from a person array that may be None.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.privacy.count import Counted
from pillar_cli.privacy.relation import Relation

ROW, PERSON, AUTO = "row", "person", "auto"
UNITS = (AUTO, ROW, PERSON)
DP_SGD_PERSON_BOUND = (
    "each row's gradient clipped to C, then the sum of each person's clipped gradients clipped "
    "again to C; persons, not rows, Poisson-sampled, at a rate read from the count of persons"
)
WEIGHTED_PERSON_BOUND = (
    "each row weighted by 1/(its person's rows) in every released sum, so that a person moves a "
    "release at most as one row does"
)


def adjacency(relations: tuple[Relation, ...], unit: PrivacyUnit | None = None) -> str:
    """The relations in a mechanism's words: "add/remove-one adjacency", "… of one person" with a person
    unit."""
    if not relations or not all(isinstance(relation, Relation) for relation in relations):
        raise ValueError(f"a mechanism's relations must be Relation values, not {relations!r}")
    said = " and ".join(relation.short for relation in relations) + " adjacency"
    return said if unit is None or not unit.is_person else f"{said} of one person"


@dataclass(frozen=True)
class PrivacyUnit:
    """`kind` row or person; `persons`: where a person unit's persons came from, in words (e.g. 'column
    PatientID')."""

    kind: str = ROW
    persons: str | None = None

    @classmethod
    def resolve(cls, asked: str, grouping: str | None) -> PrivacyUnit:
        """The unit a request asks for, given where the training rows' persons came from (None: not named).
        auto: the person where the rows name one, else the row."""
        if asked == PERSON and grouping is None:
            raise UsageError(
                f"{param('privacy_unit')} person needs each training row's person, which these rows do "
                "not name",
                hint="embed a source that names them (an array 'groups', a manifest's third "
                "column, param groups=FILE.csv, DICOM PatientID), or pass the groups",
            )
        kind = (PERSON if grouping is not None else ROW) if asked == AUTO else asked
        return cls(kind, grouping if kind == PERSON else None)

    @classmethod
    def from_attrs(cls, attrs: dict | None) -> PrivacyUnit:
        """As a file records it (none recorded: a row); a unit other than a row or a person is a ValueError,
        which the schema turns into one line naming the file before any reader gets here."""
        if not attrs:
            return cls()
        if attrs.get("unit") not in (ROW, PERSON) or not isinstance(attrs.get("persons"), (str, type(None))):
            raise ValueError(f"a privacy unit is a row or a person, not {attrs.get('unit')!r}")
        return cls(attrs["unit"], attrs.get("persons"))

    @classmethod
    def readable(cls, attrs: object) -> bool:
        """Whether a file's record of a unit is one `from_attrs` reads."""
        if attrs is not None and not isinstance(attrs, dict):
            return False
        try:
            cls.from_attrs(attrs)
        except (ValueError, TypeError, AttributeError):
            return False
        return True

    def to_attrs(self) -> dict:
        return {
            "unit": self.kind,
            "neighbouring": self.neighbouring,
            "bound": self.bound,
            **({"persons": self.persons} if self.persons else {}),
        }

    @property
    def is_person(self) -> bool:
        return self.kind == PERSON

    @property
    def neighbouring(self) -> str:
        """The neighbouring relation of a release made with this unit, in words."""
        one = (
            f"person (every row of theirs; persons as named by {self.persons})"
            if self.is_person
            else "training row (its features and label)"
        )
        return f"{Relation.ADD_OR_REMOVE_ONE.value} {one}"

    @property
    def noun(self) -> str:
        """What one unit is, as a sentence names it ("a given person was used")."""
        return "person" if self.is_person else "training row"

    @property
    def described(self) -> str:
        """The unit in a few words (a model card's `unit`)."""
        if not self.is_person:
            return "one training row (its features and label)"
        return f"one person, all their rows (persons as named by {self.persons})"

    @property
    def bound(self) -> str:
        """How one unit's contribution to a release is bounded (a method's own words: Method.person_bound)."""
        if not self.is_person:
            return (
                "each row's gradient clipped to C (DP-SGD), each row scaled to unit norm (one-release heads)"
            )
        return (
            f"{DP_SGD_PERSON_BOUND} (DP-SGD); {WEIGHTED_PERSON_BOUND} (one-release and full-batch heads, "
            "DP-PCA)"
        )

    def mechanism(self, description: str, relations: tuple[Relation, ...], person_bound: str | None) -> str:
        """A mechanism in words: what it releases (`description`), the relations it is analysed under, and how
        it bounds a person (`person_bound`) where the person is the unit."""
        said = f"{description}; {adjacency(relations, self)}"
        return said if not self.is_person else f"{said}; per person: {person_bound}"

    @property
    def counted(self) -> Counted:
        """What the released count counts."""
        return Counted.PERSONS if self.is_person else Counted.ROWS


def persons_of(groups: object, rows: int, name: str = "groups") -> np.ndarray:
    """Each row's person from one group id per row (any hashable values: patient ids, numbers), numbered
    0..P−1."""
    ids = np.asarray(groups)
    if ids.ndim != 1 or len(ids) != rows:
        raise UsageError(f"{param(name)} must hold one group id per row: {rows} rows, {ids.shape} ids")
    if ids.dtype.kind == "f" and not np.isfinite(ids).all():
        raise UsageError(f"{param(name)} holds NaN or infinite group ids; every row needs its person")
    return np.unique(ids, return_inverse=True)[1].astype(np.int64)


def person_weights(persons: np.ndarray) -> np.ndarray:
    """1/(rows of the row's person), for every row: weighted so, a sum over rows that one row moves by at most
    Δ is moved by at most Δ by one person, whatever their number of rows."""
    _, inverse, counts = np.unique(np.asarray(persons), return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse]


@dataclass(frozen=True, eq=False)
class Units:
    """Every training row's unit of privacy: each row its own (`Units.rows`), or the persons a grouping names,
    all their rows together. It gives what a mechanism reads of the unit: how many there are (the count's
    subject), each row's weight in a released sum, and whether batches draw groups of rows (the engine's
    person layout)."""

    # each row's unit: integer ids, as a file numbers its source's persons (comparable across splits)
    ids: np.ndarray
    named_by: str | None = None  # where the persons came from, in words (e.g. 'column PatientID'); None: rows

    @classmethod
    def rows(cls, n: int) -> Units:
        """Each of n rows its own unit."""
        return cls(np.arange(n, dtype=np.int64))

    @classmethod
    def of(cls, persons: np.ndarray | None, rows: int, named_by: str | None = None) -> Units:
        """From a person column a file or a caller may hold (None: each row its own unit)."""
        if persons is None:
            return cls.rows(rows)
        if len(persons) != rows:
            raise DataError(f"{len(persons)} persons for {rows} rows: every row needs its person")
        return cls(np.asarray(persons, dtype=np.int64), named_by or "the groups given")

    @classmethod
    def given(cls, groups: object, rows: int, named_by: str, name: str = "groups") -> Units:
        """From the Python API's `groups`, one id per row (any hashable values: patient ids, numbers), or
        None."""
        return cls.rows(rows) if groups is None else cls(persons_of(groups, rows, name), named_by)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def grouped(self) -> bool:
        """Whether the units are persons named by a grouping (else each row is its own)."""
        return self.named_by is not None

    @functools.cached_property
    def count(self) -> int:
        """How many units the rows hold."""
        return len(np.unique(self.ids)) if self.grouped else len(self.ids)

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """Each row's weight in a released sum over rows: 1/(rows of its unit), so that one unit moves the sum
        at most as one row does."""
        return person_weights(self.ids) if self.grouped else np.ones(len(self.ids))

    def bounded_by(self, unit: PrivacyUnit) -> Units:
        """The units a mechanism protecting `unit` bounds: these persons with a person unit, else each row."""
        return self if unit.is_person else Units.rows(len(self.ids))

    def take(self, rows: np.ndarray) -> Units:
        """The units of the given rows."""
        return Units(self.ids[rows], self.named_by) if self.grouped else Units.rows(len(rows))

    def joined(self, other: Units) -> Units:
        """The units of these rows followed by `other`'s (splits of one source: a person keeps their id)."""
        if self.grouped != other.grouped:
            raise DataError("rows with persons joined to rows without: every row needs its person")
        return (
            Units(np.concatenate([self.ids, other.ids]), self.named_by)
            if self.grouped
            else Units.rows(len(self) + len(other))
        )
