"""An independent check of a model's ledger: every run's ε recomputed from its recorded events with Google's
dp-accounting (PLD for single runs, its RDP accountant for accounted selections), not with the accountant that
calibrated it (an exponential mechanism by its direct formula, ε = 2Δ / Gumbel scale); and the steps each engine
counted as it ran them against the steps it accounted.

A run is flagged when the recomputed ε exceeds the claimed one by more than 1 % (the accountants' own
discretisation and conversion errors stay below that), or when it ran more steps than it accounted.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.model import UNCOUNTED

TOLERANCE = 0.01


@dataclass(frozen=True)
class LedgerCheck:
    run: int
    method: str
    k: str
    epsilon_target: float
    seed: int
    epsilon_claimed: float
    epsilon_recomputed: float
    how: str  # which accountant recomputed it
    steps_accounted: int
    steps_run: int  # -1: the method does not count its steps

    @property
    def problems(self) -> list[str]:
        found = []
        if self.epsilon_recomputed > self.epsilon_claimed * (1 + TOLERANCE):
            found.append(f"ε recomputed {self.epsilon_recomputed:.4g} > claimed {self.epsilon_claimed:.4g}")
        if self.steps_run != UNCOUNTED and self.steps_run > self.steps_accounted:
            found.append(f"ran {self.steps_run} steps, accounted {self.steps_accounted}")
        return found


def check_ledger(model: Artifact) -> list[LedgerCheck]:
    """Every run of a model artifact, its claim against an independent recomputation."""
    runs = {name: model.array(f"runs/{name}") for name in ("method", "k", "projected", "epsilon_target",
                                                           "epsilon_spent", "noise_multiplier", "sample_rate",
                                                           "steps", "seed")}
    count = len(runs["method"])
    steps_run = model.arrays.get("runs/steps_run", np.full(count, UNCOUNTED))
    delta = float(model.attrs["ledger"]["delta"])
    selection_ledger = model.attrs.get("selection_ledger", {})
    selections = {(s["method"], str(s["k"]), float(s["epsilon_target"]), int(s["seed"])): s
                  for s in selection_ledger.get("selections", [])}
    boosted = model.attrs.get("noisy_sgd", {}).get("boosted_runs")
    release = (model.attrs.get("public_choice") or {}).get("release")
    exponential = set(model.attrs.get("exponential_mechanism", {}).get("methods", []))
    checks = []
    for i in range(count):
        method, target, seed = str(runs["method"][i]), float(runs["epsilon_target"][i]), int(runs["seed"][i])
        k = str(int(runs["k"][i])) if runs["projected"][i] else "full"
        sigma, rate, steps = float(runs["noise_multiplier"][i]), float(runs["sample_rate"][i]), int(runs["steps"][i])
        single = False
        if (selection := selections.get((method, k, target, seed))) is not None:
            recomputed = _selection_epsilon(selection, selection_ledger["orders"])
            how = "dp-accounting RDP, repeat-and-select"
        elif method in exponential:
            recomputed = math.inf if sigma == 0 else 2.0 / sigma
            how = "exponential mechanism: ε = 2Δ / Gumbel scale (direct formula)"
        elif method == "noisy-sgd" and boosted:
            recomputed = boosted * _pld_epsilon(sigma, rate, steps, delta / boosted) + target / 2
            how = "dp-accounting PLD per boosted run + ε/2 selection"
        else:
            single = True
            recomputed, how = _pld_epsilon(sigma, rate, steps, delta), "dp-accounting PLD"
        if release is not None and math.isfinite(recomputed):
            recomputed, how = _with_release(recomputed, how, single, sigma, rate, steps, delta, release)
        checks.append(LedgerCheck(i, method, k, target, seed, float(runs["epsilon_spent"][i]), recomputed, how,
                                  steps, int(steps_run[i])))
    return checks


def _with_release(recomputed: float, how: str, single: bool, sigma: float, rate: float, steps: int, delta: float,
                  release: dict) -> tuple[float, str]:
    """The DP-GSD release that chose the public data, composed in: PLD for a Gaussian release and a single run,
    else its ε added (basic composition)."""
    if single and "noise_multiplier" in release:
        return (_pld_epsilon(sigma, rate, steps, delta + release["delta"], release["noise_multiplier"]),
                "dp-accounting PLD of the run and the DP-GSD release")
    return recomputed + release["epsilon"], how + " + the DP-GSD release's ε"


@functools.lru_cache(maxsize=1024)
def _pld_epsilon(sigma: float, rate: float, steps: int, delta: float, release_sigma: float | None = None) -> float:
    if sigma == 0:
        return math.inf
    from dp_accounting import dp_event, pld

    accountant = pld.PLDAccountant(value_discretization_interval=2e-5 if steps > 1 else 1e-5)
    step = dp_event.GaussianDpEvent(sigma)
    accountant.compose(step if rate >= 1 else dp_event.PoissonSampledDpEvent(rate, step), steps)
    if release_sigma is not None:
        accountant.compose(dp_event.GaussianDpEvent(release_sigma))
    return float(accountant.get_epsilon(delta))


def _selection_epsilon(record: dict, orders: list[float]) -> float:
    """The RDP of one trial (the largest candidate's training, each by dp-accounting's RDP accountant at the
    recorded orders, plus the noisy score), through dp-accounting's repeat-and-select formula."""
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    curves = []
    for candidate in record["trial"]["candidates"]:
        mechanism = candidate["mechanism"]
        accountant = rdp.RdpAccountant(orders=list(orders))
        step = dp_event.GaussianDpEvent(mechanism["noise_multiplier"])
        accountant.compose(step if mechanism["sample_rate"] >= 1
                           else dp_event.PoissonSampledDpEvent(mechanism["sample_rate"], step),
                           int(mechanism["compositions"]))
        accountant.compose(dp_event.GaussianDpEvent(record["trial"]["score"]["noise_multiplier"]))
        curves.append(np.asarray(accountant._rdp))  # the RDP curve: what repeat-and-select reads
    count = record["trial_count"]
    selected = rdp._compute_rdp_repeat_and_select(orders, np.max(curves, axis=0), count["mean"], count["shape"])
    return float(rdp.compute_epsilon(orders, selected, record["delta"])[0])
