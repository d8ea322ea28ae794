"""The privacy unit: what two neighbouring datasets differ by — one training row, or one person with all their rows.

Where one person has many rows (a patient's X-rays, a lesion's photos, a slide's patches) a guarantee per row
protects that person only at about (their rows)·ε. With the person as the unit, the sampler draws persons, each
person's contribution to a release is bounded as one row's is (linear/persons.py), the row count that rates and
rules read is the count of persons, and every statement names the unit and where the persons came from. The
guarantee then holds for a person exactly as the grouping defines them: rows of one human filed under two ids are
two persons to the mechanism.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import UsageError, param

ROW, PERSON, AUTO = "row", "person", "auto"
UNITS = (AUTO, ROW, PERSON)
ROW_NEIGHBOURS = "add or remove one training row (its features and label)"
DP_SGD_PERSON_BOUND = ("each row's gradient clipped to C, then the sum of each person's clipped gradients clipped "
                       "again to C; persons, not rows, Poisson-sampled, at a rate read from the count of persons")
WEIGHTED_PERSON_BOUND = ("each row weighted by 1/(its person's rows) in every released sum, so that a person moves a "
                         "release at most as one row does")


@dataclass(frozen=True)
class PrivacyUnit:
    """`kind` row or person; `persons`: where a person unit's persons came from, in words (e.g. 'column
    PatientID')."""

    kind: str = ROW
    persons: str | None = None

    @classmethod
    def resolve(cls, asked: str, grouping: str | None) -> PrivacyUnit:
        """The unit a request asks for, given where the training rows' persons came from (None: not named). auto:
        the person where the rows name one, else the row."""
        if asked == PERSON and grouping is None:
            raise UsageError(f"{param('privacy_unit')} person needs each training row's person, which these rows do "
                             "not name", hint="embed a source that names them (an array 'groups', a manifest's third "
                                              "column, param groups=FILE.csv, DICOM PatientID), or pass the groups")
        kind = (PERSON if grouping is not None else ROW) if asked == AUTO else asked
        return cls(kind, grouping if kind == PERSON else None)

    @classmethod
    def from_attrs(cls, attrs: dict | None) -> PrivacyUnit:
        return cls() if not attrs else cls(str(attrs["unit"]), attrs.get("persons"))

    def to_attrs(self) -> dict:
        return {"unit": self.kind, "neighbouring": self.neighbouring, "bound": self.bound,
                **({"persons": self.persons} if self.persons else {})}

    @property
    def is_person(self) -> bool:
        return self.kind == PERSON

    @property
    def neighbouring(self) -> str:
        if not self.is_person:
            return ROW_NEIGHBOURS
        return f"add or remove one person (every row of theirs; persons as named by {self.persons})"

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
            return "each row's gradient clipped to C (DP-SGD), each row scaled to unit norm (one-release heads)"
        return (f"{DP_SGD_PERSON_BOUND} (DP-SGD); {WEIGHTED_PERSON_BOUND} (one-release and full-batch heads, "
                "DP-PCA)")

    def mechanism(self, description: str, person_bound: str | None) -> str:
        """A method's mechanism in words, with how it bounds a person (`person_bound`) where the person is the
        unit."""
        return description if not self.is_person else f"{description}; per person: {person_bound}"

    @property
    def counted(self) -> str:
        """What the released count counts."""
        return "persons" if self.is_person else "training rows"


def persons_of(groups: object, rows: int, name: str = "groups") -> np.ndarray:
    """Each row's person from one group id per row (any hashable values: patient ids, numbers), numbered 0..P−1."""
    ids = np.asarray(groups)
    if ids.ndim != 1 or len(ids) != rows:
        raise UsageError(f"{param(name)} must hold one group id per row: {rows} rows, {ids.shape} ids")
    if ids.dtype.kind == "f" and not np.isfinite(ids).all():
        raise UsageError(f"{param(name)} holds NaN or infinite group ids; every row needs its person")
    return np.unique(ids, return_inverse=True)[1].astype(np.int64)


def person_weights(persons: np.ndarray) -> np.ndarray:
    """1/(rows of the row's person), for every row: weighted so, a sum over rows that one row moves by at most Δ is
    moved by at most Δ by one person, whatever their number of rows."""
    _, inverse, counts = np.unique(np.asarray(persons), return_inverse=True, return_counts=True)
    return 1.0 / counts[inverse]
