"""Privacy accounting: DP events as values, the accountants registry, noise calibration and its cache, and the
invariants every entry point shares (ε > 0, δ < 1/n, public rows disjoint from private rows).

Training, GSD and the CLI build on it; the accountants are opacus' and dp-accounting's.

May import: `errors`, `randomness`.
"""

from pillar_cli.privacy.accountants import (
                                            ACCOUNTANTS,
                                            RDP_ORDERS,
                                            Accountant,
                                            DPEvent,
                                            exponential_mechanism_event,
                                            get_accountant,
                                            spent_epsilon,
)
from pillar_cli.privacy.rules import require_disjoint, require_public_start, validate_budget
from pillar_cli.privacy.calibration import calibrate, calibrate_noise

__all__ = ["ACCOUNTANTS", "RDP_ORDERS", "Accountant", "DPEvent", "calibrate", "calibrate_noise",
           "exponential_mechanism_event", "get_accountant", "require_disjoint", "require_public_start", "spent_epsilon",
           "validate_budget"]
