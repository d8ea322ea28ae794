"""A trained classifier's privacy ledger: what it spent, as its DP event tree, the accountant's ε of it and what that ε
covers — read from a fit, or from a release's privacy statement."""

from __future__ import annotations

from dataclasses import dataclass

from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.events import Event, event_from_dict, headline


@dataclass(frozen=True)
class Ledger:
    """What a trained classifier spent: its DP event tree and the accountant's ε of it."""

    accountant: str
    epsilon_target: float
    epsilon_spent: float
    delta: float
    noise_multiplier: float  # of a run that is one Poisson-subsampled Gaussian segment (NaN otherwise)
    sample_rate: float
    steps: int
    clip: float  # DP-SGD's clip norm
    event: Event
    epsilon_is_upper_bound: bool
    covers: str  # what the ε covers
    noise_reproducible: bool = False  # fitted with noise_seed: NOT differentially private
    not_covered: str = ""  # what the ε does not cover (a release says: e.g. a choice made on val labels)
    count: RowCount | None = None  # the row count the sampling rate and the rule read (noisy, or declared public)

    @classmethod
    def from_statement(cls, statement: dict) -> Ledger:
        """The ledger of a released classifier, from its privacy statement."""
        event = event_from_dict(statement["event"])
        training = RowCount.from_dict(statement["count"]).without_count(event) if "count" in statement else event
        return cls(statement["accountant"], float(statement["epsilon_target"]), float(statement["epsilon"]),
                   float(statement["delta"]), *headline(training), int(statement["steps"]), float(statement["clip"]),
                   event, bool(statement["epsilon_is_upper_bound"]), "; ".join(statement["covers"]), False,
                   "; ".join(statement["not_covered"]), RowCount.from_dict(statement["count"]) if "count" in statement
                   else None)
