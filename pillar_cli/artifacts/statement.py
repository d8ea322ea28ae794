"""A release's privacy statement: its guarantee (the plan's one record, for the head released), its ε and the
DP event tree it is recomputed from, and in words what ε covers and what it does not — words generated from
the guarantee and what the statement records of how its head was trained (`basis`) when it is released and
again on every read, so that an edit of the words alone cannot make them say more than the record; the
one-line summary of its numbers and words; and the statement as one typed record, made by `make_statement` (a
release, and the Python API's `ledger_`), read and written here."""

from __future__ import annotations

from dataclasses import dataclass, fields

from pillar_cli.privacy.accountants import get_accountant
from pillar_cli.privacy.basis import StatementBasis
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.events import Event, event_from_dict, headline
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.ledger import Ledger
from pillar_cli.privacy.risk import attribute_accuracy, attribute_words, risk_of, risk_words
from pillar_cli.privacy.risk_target import RiskTarget
from pillar_cli.privacy.unit import PrivacyUnit
from pillar_cli.randomness import NOT_PRIVATE_NOTE, noise_is_reproducible

BASIS: dict[str, type | tuple[type, ...]] = {
    "trained_on": list,
    "rule": (dict, type(None)),
    "selected": str,
    "cells": int,
    "public_choice": (str, type(None)),
}  # what a statement records of its head's training ("premises", how its
# embeddings fixed their class set and splits, where they record it)
SAID = (
    "delta",
    "accountant",
    "neighbouring",
    "unit",
    "count",
)  # what a statement also states of its guarantee, flat,
# for readers outside pillar: each must say what the guarantee says


def statement_words(statement: dict) -> tuple[list[str], list[str], list[str]]:
    """(covers, not_covered, rests_on) of a statement: made by its guarantee from its basis and mechanism."""
    return Guarantee.from_attrs(statement["guarantee"]).words(StatementBasis.of(statement))


def statement_summary(statement: dict) -> str:
    """The one-line summary a statement shows, made from its numbers and lists (never stored prose alone)."""
    rests_on = statement.get("rests_on") or []
    return (
        f"(ε = {statement['epsilon']:.4g}, δ = {statement['delta']:g})-DP ({statement['accountant']}) for "
        f"{statement['neighbouring']}; covers: {'; '.join(statement['covers'])}; does not cover: "
        f"{'; '.join(statement['not_covered'])}" + (f"; rests on: {'; '.join(rests_on)}" if rests_on else "")
    )


def said_of(guarantee: Guarantee) -> dict:
    """The flat fields a statement states of its guarantee."""
    return {
        "delta": guarantee.delta_total,
        "accountant": guarantee.accountant,
        "neighbouring": guarantee.unit.neighbouring,
        "unit": guarantee.unit.to_attrs(),
        **({} if guarantee.count is None else {"count": guarantee.count.to_dict()}),
    }


def words_problem(statement: dict) -> str | None:
    """What is wrong with a statement's words: lists its record of the training does not give; None if
    nothing."""
    basis = statement.get("basis")
    if not isinstance(basis, dict) or any(
        not isinstance(basis.get(key), kind) for key, kind in BASIS.items()
    ):
        return "has a privacy statement without a readable record of how its head was trained (its basis)"
    try:
        words = statement_words(statement)
    except (KeyError, TypeError, ValueError, AttributeError):
        return "has a privacy statement whose record of how its head was trained is not one pillar reads"
    if words != (statement["covers"], statement["not_covered"], list(statement.get("rests_on") or [])):
        return (
            "has covers, not_covered and rests_on lists that its record of how the head was trained does not "
            "give"
        )
    return None


@dataclass(frozen=True, kw_only=True)
class Statement:
    """A released head's privacy statement (a classifier's `privacy` attribute, an export's metadata) as its
    readers use it; stored as the dict `to_attrs` gives, checked by artifacts/statement_schema.py before it is
    read."""

    # the plan's, for this head: its unit and relation, the count it read, δ, upstream releases
    guarantee: Guarantee
    epsilon: float
    epsilon_target: float
    clip: float
    event: Event  # the DP event tree its ε is recomputed from (the count and the upstream releases in it)
    steps: int
    covers: tuple[str, ...]
    not_covered: tuple[str, ...]
    summary: str
    accountant_description: str = ""
    epsilon_is_upper_bound: bool = True
    mechanism: str = ""
    basis: StatementBasis  # how the head was trained, which the words are made from
    noise: dict | None = None  # where its noise came from
    rests_on: tuple[str, ...] = ()  # what it assumes of the public side (privacy/premises.py), in words
    risk: dict | None = None  # what it allows an attacker (privacy/risk.py Risk.to_attrs); None: not recorded
    risk_target: RiskTarget | None = None  # the risk its ε was calibrated to; None: ε was given

    @property
    def delta(self) -> float:
        """The δ its ε holds at: its guarantee's total (the runs' and every upstream release's)."""
        return self.guarantee.delta_total

    @property
    def accountant(self) -> str:
        return self.guarantee.accountant

    @property
    def unit(self) -> PrivacyUnit:
        """What neighbouring datasets differ by."""
        return self.guarantee.unit

    @property
    def count(self) -> RowCount | None:
        """The row count the head read; None: none."""
        return self.guarantee.count

    @property
    def neighbouring(self) -> str:
        return self.guarantee.unit.neighbouring

    @property
    def risk_sentence(self) -> str | None:
        """The recorded risk in words, for this statement's unit (None where none is recorded)."""
        if not self.risk:
            return None
        said = risk_words(self.risk["tpr_at_fpr"], self.risk["advantage"], self.unit.noun)
        if attribute := self.risk.get("attribute"):
            said += "; " + attribute_words(attribute["prior"], attribute["accuracy"], self.unit.noun)
        if self.risk_target:
            said += (
                f"; ε was calibrated to keep the TPR at or below {100 * self.risk_target.max_tpr:.3g} % at a "
                f"{100 * self.risk_target.at_fpr:.3g} % false-positive rate"
            )
        return said

    @classmethod
    def from_attrs(cls, attrs: dict) -> Statement:
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in attrs.items() if key in known}
        target = attrs.get("risk_target")
        return cls(
            **values
            | {
                "covers": tuple(attrs["covers"]),
                "not_covered": tuple(attrs["not_covered"]),
                "rests_on": tuple(attrs.get("rests_on") or ()),
                "event": event_from_dict(attrs["event"]),
                "guarantee": Guarantee.from_attrs(attrs["guarantee"]),
                "basis": StatementBasis.of(attrs),
                "risk_target": target and RiskTarget.from_attrs(target),
            }
        )

    def to_attrs(self) -> dict:
        attrs = {
            f.name: value
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None and value != ()
        }
        return (
            attrs
            | said_of(self.guarantee)
            | {
                "guarantee": self.guarantee.to_attrs(),
                "covers": list(self.covers),
                "not_covered": list(self.not_covered),
                "event": self.event.to_dict(),
                "basis": self.basis.to_attrs(),
            }
            | ({"rests_on": list(self.rests_on)} if self.rests_on else {})
            | ({} if self.risk_target is None else {"risk_target": self.risk_target.to_attrs()})
        )

    def ledger(self) -> Ledger:
        """The ledger a loaded release or a fit shows as `ledger_` (privacy/ledger.py)."""
        count, reproducible = self.count, noise_is_reproducible({"noise": self.noise})
        training = self.guarantee.own(self.event)
        not_covered = [
            *self.not_covered,
            *([NOT_PRIVATE_NOTE] if reproducible else []),
        ]  # a fit's: a release refuses it
        noise_multiplier, sample_rate = headline(training)
        return Ledger(
            accountant=self.accountant,
            epsilon_target=self.epsilon_target,
            epsilon_spent=self.epsilon,
            delta=self.delta,
            noise_multiplier=noise_multiplier,
            sample_rate=sample_rate,
            steps=self.steps,
            clip=self.clip,
            event=self.event,
            epsilon_is_upper_bound=self.epsilon_is_upper_bound,
            covers="; ".join(self.covers),
            noise_reproducible=reproducible,
            not_covered="; ".join(not_covered),
            count=count,
            unit=self.unit,
            guarantee=self.guarantee,
        )


def make_statement(
    *,
    guarantee: Guarantee,
    event: Event,
    epsilon: float,
    epsilon_target: float,
    steps: int,
    clip: float,
    basis: StatementBasis,
    noise: dict | None,
    risk_target: RiskTarget | None = None,
    prior: float | None = None,
) -> Statement:
    """One head's statement under `guarantee` (the plan's, for that head): its event tree and ε, how it was
    trained (`basis`), its words and the risk its whole tree allows — for a release and for a fit alike;
    `prior`: also the attribute risk at that prevalence (privacy/risk.py attribute_accuracy)."""
    accountant = get_accountant(guarantee.accountant)
    covers, not_covered, rests_on = guarantee.words(basis)
    attrs = {
        "epsilon": epsilon,
        "epsilon_target": epsilon_target,
        "clip": clip,
        "event": event.to_dict(),
        "steps": steps,
        "covers": covers,
        "not_covered": not_covered,
        "rests_on": rests_on,
        "accountant_description": accountant.description,
        "epsilon_is_upper_bound": accountant.upper_bound,
        "mechanism": basis.mechanism,
        "basis": basis.to_attrs(),
        "noise": noise,
        "risk": risk_of(event).to_attrs()
        | (
            {}
            if prior is None
            else {"attribute": {"prior": prior, "accuracy": attribute_accuracy(event, prior)}}
        ),
        "guarantee": guarantee.to_attrs(),
        **said_of(guarantee),
        **({} if risk_target is None else {"risk_target": risk_target.to_attrs()}),
    }
    attrs["summary"] = statement_summary(attrs)
    return Statement.from_attrs(attrs)
