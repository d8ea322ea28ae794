"""A trained classifier's privacy ledger: what it spent, as its DP event tree, the accountant's ε of it and
what that ε covers — read from a fit, or from a release's privacy statement (artifacts/statement.py
Statement.ledger)."""

from __future__ import annotations

from dataclasses import dataclass

from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.events import Event
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.unit import PrivacyUnit


@dataclass(frozen=True, kw_only=True)
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
    # the row count the sampling rate and the rule read (noisy, or declared public)
    count: RowCount | None = None
    unit: PrivacyUnit = PrivacyUnit()  # what neighbouring datasets differ by: a row, or a person
    guarantee: Guarantee | None = None  # the one record it is a statement of (privacy/guarantee.py)

    def risk(self):
        """What the guarantee allows an attacker (privacy/risk.py): the highest TPR of any
        membership-inference attack on one unit at each false-positive rate, and the largest advantage."""
        from pillar_cli.privacy.risk import risk_of

        return risk_of(self.event)

    def attribute_accuracy(self, prior: float) -> float:
        """The highest accuracy of an attacker guessing a yes/no attribute of one unit held with prevalence
        `prior` (privacy/risk.py attribute_accuracy), as `pillar release --prior` states it."""
        from pillar_cli.privacy.risk import attribute_accuracy, checked_prior

        return attribute_accuracy(self.event, checked_prior(prior))
