"""How a released head was trained, as typed values: what chose its run, and the statement's `basis`, from which
its guarantee makes the statement's words (privacy/guarantee.py `Guarantee.words`) when it is released and again on
every read, so that an edit of the words alone cannot make them say more than the record."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pillar_cli.privacy.premises import Premises


class ChosenBy(str, Enum):
    """What chose a cell's run (the value is what tables and statements print)."""

    ACCOUNTED = "in ε"  # a private selection released it; ε covers the choice
    VAL = "on val, outside ε"  # the best mean val accuracy: private labels, not accounted
    NOTHING = "none (one configuration)"  # one configuration: nothing was chosen

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ProjectionRelease:
    """The DP-PCA a head's projection came from (fitted on the private rows), as a statement names it: the words'
    part of a `DPRelease` (privacy/guarantee.py, which makes the words from this module's values and so is not
    imported here)."""

    mechanism: str
    epsilon: float
    delta: float


@dataclass(frozen=True)
class PublicChoiceNote:
    """How the public data was chosen from a GSD ranking: by a DP release (in ε) or not, and the choice's note."""

    released: bool
    note: str


@dataclass(frozen=True, kw_only=True)
class StatementBasis:
    """What a statement records of how its head was trained: the splits, its mechanism in words, the default rule
    it followed (its fields and the rule), what chose its run among how many cells, how the public data was chosen,
    the DP-PCA its projection came from (None: fitted on public data) and how its embeddings fixed their class set
    and splits (None: a statement written before they were recorded)."""

    trained_on: tuple[str, ...]
    mechanism: str
    rule: tuple[tuple[str, ...], str] | None
    selected: ChosenBy
    cells: int
    public_choice: PublicChoiceNote | None = None
    projection: ProjectionRelease | None = None
    premises: Premises | None = None

    @classmethod
    def of(cls, statement: dict) -> StatementBasis:
        """From a statement's record: its `basis` and its `mechanism`."""
        basis, rule, choice = statement["basis"], statement["basis"]["rule"], statement["basis"]["public_choice"]
        projection, premises = basis.get("projection"), basis.get("premises")
        return cls(trained_on=tuple(basis["trained_on"]), mechanism=statement["mechanism"],
                   rule=None if not rule else (tuple(rule["fields"]), rule["rule"]),
                   selected=ChosenBy(basis["selected"]), cells=basis["cells"],
                   public_choice=None if not choice else PublicChoiceNote(bool(choice["released"]), choice["note"]),
                   projection=None if not projection else ProjectionRelease(
                       projection["mechanism"], float(projection["epsilon"]), float(projection["delta"])),
                   premises=None if premises is None else Premises.from_attrs(premises))

    def to_attrs(self) -> dict:
        """The `basis` a statement stores (its mechanism is a field of its own)."""
        rule, choice, projection = self.rule, self.public_choice, self.projection
        return {"trained_on": list(self.trained_on), "rule": None if rule is None else
                {"fields": list(rule[0]), "rule": rule[1]}, "selected": str(self.selected), "cells": self.cells,
                "public_choice": None if choice is None else {"released": choice.released, "note": choice.note},
                **({} if projection is None else {"projection": {"mechanism": projection.mechanism,
                                                                 "epsilon": projection.epsilon,
                                                                 "delta": projection.delta}}),
                **({} if self.premises is None else {"premises": self.premises.to_attrs()})}

    @property
    def trained(self) -> str:
        """What trained the head, in words."""
        rows = " and ".join(self.trained_on)
        said = f"training this head on the {rows} split{'s' if ' and ' in rows else ''}"
        return f"{said} ({self.mechanism})" if self.mechanism else said
