"""A release's privacy statement in words: what its ε covers and what it does not, generated from what the statement
records of how its head was trained (`basis`) when it is released and again on every read, so that an edit of the
words alone cannot make them say more than the record; the one-line summary of its numbers and words; and the
statement as one typed record, read and written here."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from pillar_cli.privacy.basis import StatementBasis
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.events import Event, event_from_dict, headline
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.unit import PrivacyUnit
from pillar_cli.privacy.ledger import Ledger
from pillar_cli.privacy.risk import risk_words
from pillar_cli.privacy.risk_target import RiskTarget

BASIS = {"trained_on": list, "rule": (dict, type(None)), "selected": str, "cells": int,
         "public_choice": (dict, type(None))}  # what a statement records of its head's training ("projection",
# the DP-PCA release its projection came from, only where there is one; "premises", how its embeddings fixed their
# class set and splits, where they record it)


def statement_words(statement: dict) -> tuple[list[str], list[str], list[str]]:
    """(covers, not_covered, rests_on) of a statement: made by its guarantee (its unit, the row count it read, if
    any) from its basis and mechanism."""
    count = RowCount.from_dict(statement["count"]) if "count" in statement else None
    guarantee = Guarantee(PrivacyUnit.from_attrs(statement.get("unit")), count, statement["accountant"],
                          float(statement["delta"]))
    return guarantee.words(StatementBasis.of(statement))


def statement_summary(statement: dict) -> str:
    """The one-line summary a statement shows, made from its numbers and lists (never stored prose alone)."""
    rests_on = statement.get("rests_on") or []
    return (f"(ε = {statement['epsilon']:.4g}, δ = {statement['delta']:g})-DP ({statement['accountant']}) for "
            f"{statement['neighbouring']}; covers: {'; '.join(statement['covers'])}; does not cover: "
            f"{'; '.join(statement['not_covered'])}" + (f"; rests on: {'; '.join(rests_on)}" if rests_on else ""))


def words_problem(statement: dict) -> str | None:
    """What is wrong with a statement's words: lists its record of the training does not give; None if nothing."""
    basis = statement.get("basis")
    if not isinstance(basis, dict) or any(not isinstance(basis.get(key), kind) for key, kind in BASIS.items()):
        return "has a privacy statement without a readable record of how its head was trained (its basis)"
    try:
        words = statement_words(statement)
    except (KeyError, TypeError, ValueError, AttributeError):
        return "has a privacy statement whose record of how its head was trained is not one pillar reads"
    if words != (statement["covers"], statement["not_covered"], list(statement.get("rests_on") or [])):
        return "has covers, not_covered and rests_on lists that its record of how the head was trained does not give"
    return None


@dataclass(frozen=True, kw_only=True)
class Statement:
    """A released head's privacy statement (a classifier's `privacy` attribute, an export's metadata) as its readers
    use it; stored as the dict `to_attrs` gives, checked by artifacts/schema.py before it is read."""

    epsilon: float
    delta: float
    epsilon_target: float
    accountant: str
    clip: float
    neighbouring: str
    event: Event  # the DP event tree its ε is recomputed from
    steps: int
    covers: tuple[str, ...]
    not_covered: tuple[str, ...]
    summary: str
    accountant_description: str = ""
    epsilon_is_upper_bound: bool = True
    mechanism: str = ""
    basis: StatementBasis  # how the head was trained, which the words are made from
    noise: dict | None = None  # where its noise came from
    count: RowCount | None = None  # the row count it read; None: none
    unit: PrivacyUnit = field(default_factory=PrivacyUnit)  # what neighbouring datasets differ by (a row where a
    # statement written before units were recorded names none)
    rests_on: tuple[str, ...] = ()  # what it assumes of the public side (privacy/premises.py), in words
    risk: dict | None = None  # what it allows an attacker (privacy/risk.py Risk.to_attrs); None: not recorded
    risk_target: RiskTarget | None = None  # the risk its ε was calibrated to; None: ε was given

    @property
    def risk_sentence(self) -> str | None:
        """The recorded risk in words, for this statement's unit (None where none is recorded)."""
        if not self.risk:
            return None
        said = risk_words(self.risk["tpr_at_fpr"], self.risk["advantage"], self.unit.noun)
        if self.risk_target:
            said += (f"; ε was calibrated to keep the TPR at or below {100 * self.risk_target.max_tpr:.3g} % at a "
                     f"{100 * self.risk_target.at_fpr:.3g} % false-positive rate")
        return said

    @classmethod
    def from_attrs(cls, attrs: dict) -> Statement:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in attrs.items() if key in known}
        count, target = attrs.get("count"), attrs.get("risk_target")
        return cls(**values | {"covers": tuple(attrs["covers"]), "not_covered": tuple(attrs["not_covered"]),
                               "rests_on": tuple(attrs.get("rests_on") or ()), "event": event_from_dict(attrs["event"]),
                               "count": None if count is None else RowCount.from_dict(count),
                               "basis": StatementBasis.of(attrs),
                               "risk_target": target and RiskTarget.from_attrs(target),
                               "unit": PrivacyUnit.from_attrs(attrs.get("unit"))})

    def to_attrs(self) -> dict:
        attrs = {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None and value != ()}
        return attrs | {"covers": list(self.covers), "not_covered": list(self.not_covered),
                        "event": self.event.to_dict(), "unit": self.unit.to_attrs(), "basis": self.basis.to_attrs()} | \
            ({"rests_on": list(self.rests_on)} if self.rests_on else {}) | \
            ({} if self.count is None else {"count": self.count.to_dict()}) | \
            ({} if self.risk_target is None else {"risk_target": self.risk_target.to_attrs()})

    def ledger(self) -> Ledger:
        """The ledger a loaded release shows as `ledger_` (privacy/ledger.py)."""
        count = self.count
        training = self.event if count is None else count.without_count(self.event)
        return Ledger(self.accountant, self.epsilon_target, self.epsilon, self.delta, *headline(training), self.steps,
                      self.clip, self.event, self.epsilon_is_upper_bound, "; ".join(self.covers), False,
                      "; ".join(self.not_covered), count, self.unit)
