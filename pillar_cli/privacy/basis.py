"""How a released head was trained, as typed values: what chose its run, and the statement's `basis`, from
which its guarantee makes the statement's words (privacy/guarantee.py `Guarantee.words`) when it is released
and again on every read, so that an edit of the words alone cannot make them say more than the record."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pillar_cli.privacy.premises import Premises


class ChosenBy(str, Enum):
    """What chose a cell's run (the value is what tables and statements print)."""

    ACCOUNTED = "in ε"  # a private selection released it; ε covers the choice
    VAL = "on val, outside ε"  # the best mean val accuracy: private labels, not accounted
    NOTHING = "none (one configuration)"  # one configuration: nothing was chosen
    SEARCH = "by a search, outside ε"  # fitted by scikit-learn model selection, kept or scored on labels

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, kw_only=True)
class StatementBasis:
    """What a statement records of how its head was trained: the splits, its mechanism in words, the default
    rule it followed (its fields and the rule), what chose its run among how many cells, the note of a public
    choice made with non-private access to the private split (allowed explicitly; a DP choice is an upstream
    release of the guarantee) and how its embeddings fixed their class set and splits (None: a statement
    written before they were recorded)."""

    trained_on: tuple[str, ...]
    mechanism: str
    rule: tuple[tuple[str, ...], str] | None
    selected: ChosenBy
    cells: int
    public_choice: str | None = None
    premises: Premises | None = None
    own_public: int | None = None  # records of the private rows' own source the projection was fitted on

    @classmethod
    def of(cls, statement: dict) -> StatementBasis:
        """From a statement's record: its `basis` and its `mechanism`."""
        basis, rule, premises = (
            statement["basis"],
            statement["basis"]["rule"],
            statement["basis"].get("premises"),
        )
        choice = basis["public_choice"]
        if choice is not None and not isinstance(choice, str):
            raise ValueError("a statement's public choice is the note of a choice made outside ε, or none")
        return cls(
            trained_on=tuple(basis["trained_on"]),
            mechanism=statement["mechanism"],
            rule=None if not rule else (tuple(rule["fields"]), rule["rule"]),
            selected=ChosenBy(basis["selected"]),
            cells=basis["cells"],
            public_choice=choice,
            premises=None if premises is None else Premises.from_attrs(premises),
            own_public=None if basis.get("own_public") is None else int(basis["own_public"]),
        )

    def to_attrs(self) -> dict:
        """The `basis` a statement stores (its mechanism is a field of its own)."""
        rule = self.rule
        return {
            "trained_on": list(self.trained_on),
            "rule": None if rule is None else {"fields": list(rule[0]), "rule": rule[1]},
            "selected": str(self.selected),
            "cells": self.cells,
            "public_choice": self.public_choice,
            **({} if self.premises is None else {"premises": self.premises.to_attrs()}),
            **({} if self.own_public is None else {"own_public": self.own_public}),
        }

    @property
    def trained(self) -> str:
        """What trained the head, in words."""
        rows = " and ".join(self.trained_on)
        said = f"training this head on the {rows} split{'s' if ' and ' in rows else ''}"
        return f"{said} ({self.mechanism})" if self.mechanism else said
