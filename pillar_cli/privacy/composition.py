"""Composing a model's training with the DP release that chose its public data (DP-GSD, recorded in the ledger of
the GSD artifact the projection was fitted from): one total (ε, δ) per run.

A Gaussian release (Analyze-Gauss: noise multiplier σ on a sensitivity-clip² Gram matrix) composes with a DP-SGD
or closed-form run's Gaussian events under Google's dp-accounting PLD, at δ_total = δ_run + δ_release; a pure ε
release (the Bingham exponential mechanism), or a run whose ε is not one Gaussian event (accounted selection,
noisy-sgd), adds its ε by basic composition, which is valid for any pair and stated as such.
"""

from __future__ import annotations

import functools
import math

from pillar_cli.privacy.accountants import DPEvent

PLD_INTERVAL = 2e-5


def composed_with_release(event: DPEvent, epsilon_run: float, release: dict, single_event: bool) -> tuple[float, str]:
    """(total ε at δ_run + δ_release, how it was composed) for one run and the release's ledger."""
    if math.isinf(epsilon_run) or event.noise_multiplier == 0:
        return math.inf, "non-private run"
    if single_event and "noise_multiplier" in release:
        total = _pld(event.noise_multiplier, event.sample_rate, event.steps, float(release["noise_multiplier"]),
                     event.delta + float(release["delta"]))
        return total, "PLD composition (dp-accounting) of the run's events and the release"
    return epsilon_run + float(release["epsilon"]), "basic composition: the run's ε plus the release's ε"


@functools.lru_cache(maxsize=1024)
def _pld(sigma: float, rate: float, steps: int, release_sigma: float, delta: float) -> float:
    from dp_accounting import dp_event, pld

    accountant = pld.PLDAccountant(value_discretization_interval=PLD_INTERVAL)
    step = dp_event.GaussianDpEvent(sigma)
    accountant.compose(step if rate >= 1 else dp_event.PoissonSampledDpEvent(rate, step), steps)
    accountant.compose(dp_event.GaussianDpEvent(release_sigma))
    return float(accountant.get_epsilon(delta))
