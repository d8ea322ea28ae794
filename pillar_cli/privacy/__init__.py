"""Privacy accounting: DP events as values, the accountants registry, noise calibration and its cache, and the
invariants every entry point shares (ε > 0, δ < 1/n, public rows disjoint from private rows).

Training, GSD and the CLI build on it; the accountants are opacus' and dp-accounting's.

May import: `errors`, `randomness`, `version` (the program's name, for its cache directory).
"""

from pillar_cli.privacy.accountants import ACCOUNTANTS, RDP_ORDERS, Accountant, get_accountant, spent_epsilon
from pillar_cli.privacy.calibration import calibrate, calibrate_noise
from pillar_cli.privacy.events import (
    Event,
    ExponentialEvent,
    GaussianEvent,
    composed,
    dp_sgd_event,
    event_from_dict,
    gaussian_segments,
    headline,
)
from pillar_cli.privacy.invariants import (
    require_disjoint,
    require_persons_apart,
    require_public_start,
    validate_budget,
)

__all__ = [
    "ACCOUNTANTS",
    "RDP_ORDERS",
    "Accountant",
    "Event",
    "ExponentialEvent",
    "GaussianEvent",
    "calibrate",
    "calibrate_noise",
    "composed",
    "dp_sgd_event",
    "event_from_dict",
    "gaussian_segments",
    "get_accountant",
    "headline",
    "require_disjoint",
    "require_persons_apart",
    "require_public_start",
    "spent_epsilon",
    "validate_budget",
]
