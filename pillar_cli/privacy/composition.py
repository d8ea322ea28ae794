"""Composing a model's training with the DP release that chose its public data (DP-GSD, recorded in the ledger of
the GSD artifact the projection was fitted from): one event tree and one total (ε, δ) per run.

The run's tree and the release's compose as one tree, accounted at δ_total = δ_run + δ_release by the run's
accountant: a Gaussian release joins the run's Gaussian segments, a pure ε release (the Bingham exponential
mechanism) adds its ε, and a run with a private selection in it composes through its Rényi DP curve.
"""

from __future__ import annotations

from pillar_cli.privacy.accountants import spent_epsilon
from pillar_cli.privacy.events import Event, composed, event_from_dict


def composed_with_release(event: Event, accountant: str, delta: float, release: dict) -> tuple[Event, float]:
    """(the run and the release as one event tree, its ε at δ_total) for one run at δ and the release's ledger."""
    total = composed(event, event_from_dict(release["event"]))
    return total, spent_epsilon(accountant, total, delta + float(release["delta"]))
