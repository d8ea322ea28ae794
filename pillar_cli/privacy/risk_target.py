"""Calibrating to a risk target instead of ε: "no membership attack on one unit reaches a true-positive rate
above `max_tpr` at a false-positive rate of `at_fpr`" (privacy/risk.py), the number an ethics board or a data
protection officer can act on.

The target is met through ε: a run's tree at target ε is calibrated as it always is (σ by its accountant, the
row count's release composed in), and TPR at `at_fpr` grows with ε, so the largest ε whose calibrated tree's
trade-off curve stays at or under the target is found on log ε (regula falsi, safeguarded by bisection),
starting from the ε of the μ-GDP curve that passes through the target (Φ(Φ⁻¹(α) + μ) = β), which
Poisson-subsampled Gaussian trees approach. The statement then records the target and the ε it took; the
curve's TPR is recomputed from the stored tree by every reader.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pillar_cli.errors import UsageError, param
from pillar_cli.privacy.events import Event
from pillar_cli.privacy.risk import risk_of

RELATIVE_TOLERANCE = 2e-3  # of ε: TPR moves far less than 5 % within it


@dataclass(frozen=True)
class RiskTarget:
    """At most `max_tpr` true positives at false-positive rate `at_fpr`, for any attack on one unit."""

    max_tpr: float
    at_fpr: float = 0.01
    KEYS = ("max_tpr", "at_fpr")  # as files store it

    def __post_init__(self) -> None:
        if not 0 < self.at_fpr < 1:
            raise UsageError(f"{param('at_fpr')} must be in (0, 1) (got {self.at_fpr:g})")
        if not self.at_fpr < self.max_tpr < 1:
            raise UsageError(
                f"{param('max_tpr')} must be above {param('at_fpr')} ({self.at_fpr:g}: chance) and "
                f"below 1 (got {self.max_tpr:g})"
            )

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
        """The largest ε (to RELATIVE_TOLERANCE) whose tree `event_at(ε)` meets the target: a bracket [meets,
        fails] found by halving and doubling from `start`, then closed on log ε (`_closed`)."""
        excesses: dict[float, float] = {}

        def excess(epsilon: float) -> float:  # ≤ 0 where the target is met; each ε calibrated once
            if epsilon not in excesses:
                excesses[epsilon] = math.log(self.tpr(event_at(epsilon)) / self.max_tpr)
            return excesses[epsilon]

        low, high = start, start
        while (below := excess(low)) > 0:
            low /= 2
            if low < 1e-4:
                raise UsageError(
                    f"no ε meets {self.describe()}: the row count's release alone exceeds it",
                    hint=f"raise {param('max_tpr')}, or declare the row count public",
                )
        while (above := excess(high)) <= 0:
            low, below, high = high, above, high * 2
            if high > 1e3:
                return low
        return _closed(excess, (math.log(low), below), (math.log(high), above))

    def describe(self) -> str:
        return f"TPR ≤ {self.max_tpr:g} at FPR {self.at_fpr:g}"

    def to_attrs(self) -> dict:
        return {"max_tpr": self.max_tpr, "at_fpr": self.at_fpr}

    @classmethod
    def from_attrs(cls, attrs: dict) -> RiskTarget:
        return cls(float(attrs["max_tpr"]), float(attrs["at_fpr"]))

    @classmethod
    def readable(cls, attrs: object) -> bool:
        """Whether a file's record of a target is one `from_attrs` reads: numbers, a TPR above an FPR in (0,
        1)."""
        if not isinstance(attrs, dict) or any(
            isinstance(attrs.get(key), bool) or not isinstance(attrs.get(key), (int, float))
            for key in cls.KEYS
        ):
            return False
        try:
            cls.from_attrs(attrs)
        except UsageError:
            return False
        return True


def _closed(excess: Callable[[float], float], low: tuple[float, float], high: tuple[float, float]) -> float:
    """The largest ε that meets, to RELATIVE_TOLERANCE, from a bracket of (log ε, excess) with excess ≤ 0 at
    the low end and > 0 at the high end. Regula falsi with the Illinois rule (the end kept twice has its
    excess halved), each point at least half the tolerance inside the bracket, and a bisection after two steps
    that did not halve it: near the target TPR is smooth in log ε, so a handful of calibrations (each the
    costly part) instead of the nine a bisection from a factor of 2 takes, never many more."""
    (x_low, f_low), (x_high, f_high) = low, high
    kept, slow = 0, 0
    while x_high - x_low > RELATIVE_TOLERANCE:
        width, margin = x_high - x_low, RELATIVE_TOLERANCE / 2
        x = (x_low + x_high) / 2 if slow >= 2 else x_high - f_high * width / (f_high - f_low)
        x = min(max(x, x_low + margin), x_high - margin)
        if (f := excess(math.exp(x))) <= 0:
            x_low, f_low = x, f
            f_high, kept = (f_high / 2 if kept == 1 else f_high), 1
        else:
            x_high, f_high = x, f
            f_low, kept = (f_low / 2 if kept == -1 else f_low), -1
        slow = 0 if x_high - x_low <= width / 2 else slow + 1
    return math.exp(x_low)
