"""Calibrating to a risk target instead of ε: "no membership attack on one unit reaches a true-positive rate above
`max_tpr` at a false-positive rate of `at_fpr`" (privacy/risk.py), the number an ethics board or a data protection
officer can act on.

The target is met through ε: a run's tree at target ε is calibrated as it always is (σ by its accountant, the row
count's release composed in), and TPR at `at_fpr` grows with ε, so the largest ε whose calibrated tree's trade-off
curve stays at or under the target is found by bisection on log ε, starting from the ε of the μ-GDP curve that
passes through the target (Φ(Φ⁻¹(α) + μ) = β), which Poisson-subsampled Gaussian trees approach. The statement then
records the target and the ε it took; the curve's TPR is recomputed from the stored tree by every reader.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from pillar_cli.errors import UsageError, param
from pillar_cli.privacy.events import Event
from pillar_cli.privacy.risk import risk_of

RELATIVE_TOLERANCE = 2e-3  # of ε: TPR moves far less than 5 % within it


@dataclass(frozen=True)
class RiskTarget:
    """At most `max_tpr` true positives at false-positive rate `at_fpr`, for any attack on one unit."""

    max_tpr: float
    at_fpr: float = 0.01

    def __post_init__(self) -> None:
        if not 0 < self.at_fpr < 1:
            raise UsageError(f"{param('at_fpr')} must be in (0, 1) (got {self.at_fpr:g})")
        if not self.at_fpr < self.max_tpr < 1:
            raise UsageError(f"{param('max_tpr')} must be above {param('at_fpr')} ({self.at_fpr:g}: chance) and "
                             f"below 1 (got {self.max_tpr:g})")

    def tpr(self, event: Event) -> float:
        """The highest TPR any attack reaches at `at_fpr` against `event`."""
        return risk_of(event).tpr_at(self.at_fpr)

    def gaussian_epsilon(self, delta: float) -> float:
        """ε at δ of the μ-GDP mechanism whose curve passes through the target: where the bisection starts."""
        from scipy.stats import norm

        from pillar_cli.privacy.gaussian import gaussian_epsilon

        mu = float(norm.ppf(self.max_tpr) - norm.ppf(self.at_fpr))
        return max(gaussian_epsilon(((1 / mu, 1.0, 1),), delta), 1e-3)

    def largest_epsilon(self, event_at: Callable[[float], Event], start: float) -> float:
        """The largest ε (to RELATIVE_TOLERANCE) whose tree `event_at(ε)` meets the target."""
        low, high = start, start
        while self.tpr(event_at(low)) > self.max_tpr:
            low /= 2
            if low < 1e-4:
                raise UsageError(f"no ε meets {self.describe()}: the row count's release alone exceeds it",
                                 hint=f"raise {param('max_tpr')}, or declare the row count public")
        while self.tpr(event_at(high)) <= self.max_tpr:
            low, high = high, high * 2
            if high > 1e3:
                return low
        while math.log(high / low) > RELATIVE_TOLERANCE:
            middle = math.sqrt(low * high)
            low, high = (middle, high) if self.tpr(event_at(middle)) <= self.max_tpr else (low, middle)
        return low

    def describe(self) -> str:
        return f"TPR ≤ {self.max_tpr:g} at FPR {self.at_fpr:g}"

    def to_attrs(self) -> dict:
        return {"max_tpr": self.max_tpr, "at_fpr": self.at_fpr}
