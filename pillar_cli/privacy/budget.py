"""Privacy invariants every entry point shares: a usable (ε, δ) for n private rows, disjoint public and private rows.
"""

from __future__ import annotations

import numpy as np

from pillar_cli.errors import PrivacyError, UsageError


def validate_budget(epsilon: float, delta: float, n_private: int, flags: tuple[str, str] = ("--eps", "--delta")
                    ) -> None:
    """ε > 0 and 0 < δ < 1/n; `flags` name the options the user set them with."""
    eps_flag, delta_flag = flags
    if not epsilon > 0:
        raise UsageError(f"{eps_flag} must be > 0 (got {epsilon})" +
                         ("; use 'inf' for non-private training" if eps_flag == "--eps" else ""))
    if not 0 < delta < 1:
        raise UsageError(f"{delta_flag} must be in (0, 1) (got {delta})")
    if delta >= 1.0 / n_private:
        raise PrivacyError(f"{delta_flag} {delta:g} is not below 1/n = {1.0 / n_private:.3g} for n = {n_private} "
                           "private rows: such a δ permits releasing individual records",
                           hint=f"use a smaller {delta_flag}")


def require_disjoint(private_index: np.ndarray, public_index: np.ndarray, source: str) -> None:
    """Public rows must never be private rows: a row in both would be fitted on outside the DP guarantee."""
    shared = np.intersect1d(private_index, public_index)
    if len(shared):
        raise PrivacyError(f"{source}: {len(shared)} rows of the public split also appear in the private split",
                           hint="re-embed: the splits of one source must be disjoint")
