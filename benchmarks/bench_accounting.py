"""Accounting kernels every release and calibration runs, side by side with the computation they replace:

- a guarantee's trade-off curve (privacy/risk.py `trade_off`): the upper envelope of the (ε, δ(ε)) pairs'
  lines, built once and walked along the sorted FPRs, against every line evaluated at every FPR (the direct
  formula);
- a PRV ε (privacy/accountants.py): each truncated PRV's mean integrated over its CDF in floats and its CDF
  evaluated once at the cells' edges, against opacus' own truncated PRV (whose quadrature evaluates the CDF as
  numpy expressions on 0-d arrays) and discretisation (the CDF at both ends of every cell) — the same
  accountant on the same FFT-friendly domain otherwise;
- δ(ε) of a privacy loss distribution at the risk view's ε (privacy/pld_delta.py): two cumulative sums in
  numpy, against dp-accounting's `get_delta_for_epsilon` on the same distribution (one Python loop).

Each row prints both times, their ratio and the largest difference of the results.
Run: python benchmarks/bench_accounting.py [--repeats 3]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import timed

from pillar_cli.privacy.accountants import _fast_prv_accountant
from pillar_cli.privacy.calibration import _bracket_guess, solve_noise
from pillar_cli.privacy.events import GaussianEvent, composed, dp_sgd_event
from pillar_cli.privacy.pld_delta import delta_for_epsilons
from pillar_cli.privacy.rdp_series import remember_rdp_terms
from pillar_cli.privacy.risk import EPSILONS, PLD_INTERVAL, delta_curve, trade_off

DELTA = 1e-5
FPRS = np.unique(
    np.concatenate([[0.0, 0.001, 0.01, 0.1], np.geomspace(1e-6, 1.0, 1000), np.linspace(0, 1, 201)])
)
CURVES = {
    "Gaussian σ = 1": GaussianEvent(1.0),
    "DP-SGD q = 0.23, 300 steps + a count": composed(GaussianEvent(40.0), dp_sgd_event(1.1, 256 / 1100, 300)),
}
PRVS = {
    "σ = 1.1, q = 0.23, 300 steps": ((1.1, 256 / 1100, 300),),
    "+ the count's release": ((1.1, 256 / 1100, 300), (40.0, 1.0, 1)),
    "σ = 1, q = 0.02, 2,000 steps": ((1.0, 0.02, 2000),),
    "σ = 15.7, q = 64/45,000, 40,000 steps": ((15.7, 64 / 45000, 40000),),
}
CALIBRATIONS = {f"σ for ε = {epsilon:g}, q = 0.23, 300 steps + a count": epsilon for epsilon in (0.1, 1.0)}
COUNT = (40.0, 1.0, 1)  # the noisy row count's release, composed into every head that reads it
PLDS = {
    "σ = 1.1, q = 0.23, 300 steps": (1.1, 256 / 1100, 300),
    "σ = 1, q = 0.01, 1,000 steps": (1.0, 0.01, 1000),
}


def every_line(alphas: np.ndarray, epsilons: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """β(α) as the maximum of every pair's two lines and 0 at every α (blocks of ε bound the memory)."""
    betas = np.zeros(len(alphas))
    for start in range(0, len(epsilons), 2000):
        eps, delta = epsilons[start : start + 2000, None], deltas[start : start + 2000, None]
        lines = np.maximum(
            1 - delta - np.exp(eps) * alphas[None, :], np.exp(-eps) * (1 - delta - alphas[None, :])
        )
        betas = np.maximum(betas, lines.max(axis=0))
    return np.clip(betas, 0.0, 1.0)


def prv_epsilon(segments: tuple, opacus_mean: bool) -> float:
    """ε at DELTA as accountants.py asks (a rough ε, then an error of 0.5 % of it), with either truncated
    PRV."""
    from opacus.accountants import PRVAccountant

    accountant = _fast_prv_accountant()()
    accountant.history = list(segments)
    dprv = PRVAccountant._get_dprv if opacus_mean else type(accountant)._get_dprv

    def epsilon(error: float) -> float:
        return float(
            dprv(accountant, eps_error=error, delta_error=DELTA / 1000).compute_epsilon(
                DELTA, DELTA / 1000, error
            )[2]
        )

    rough = epsilon(0.01)
    return rough if rough > 2 else epsilon(max(0.005 * rough, 1e-4))


def calibrated(epsilon: float, opacus_mean: bool) -> float:
    """σ for ε at q = 256/1100 over 300 steps with the count composed in, by calibration.py's solver,
    uncached: no σ nor any of opacus' RDP terms (accountants.py remembers them) left from a run before."""
    from opacus.accountants.analysis import rdp

    rdp._compute_rdp.cache_clear()
    rate, steps = 256 / 1100, 300
    return solve_noise(
        lambda sigma: prv_epsilon(((sigma, rate, steps), COUNT), opacus_mean),
        epsilon,
        lambda goal: _bracket_guess(goal, rate, steps, DELTA, (COUNT,)),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    remember_rdp_terms()  # as every PRV ε pillar computes
    print(f"{'kernel':<52} {'before s':>9} {'now s':>8} {'ratio':>6} {'max |difference|':>17}")
    for name, event in CURVES.items():
        deltas = np.minimum(delta_curve(event)(EPSILONS), 1.0)
        before, reference = timed(lambda: every_line(FPRS, EPSILONS, deltas), repeats)
        now, envelope = timed(lambda: trade_off(FPRS, EPSILONS, deltas), repeats)
        print(
            f"{'trade-off curve, ' + name:<52} {before:9.3f} {now:8.3f} {before / now:6.1f} "
            f"{np.abs(reference - envelope).max():17.2e}"
        )
    for name, segments in PRVS.items():
        # opacus' RDP terms of these segments remembered for both (accountants.py)
        prv_epsilon(segments, False)
        before, reference = timed(lambda: prv_epsilon(segments, True), repeats)
        now, floats = timed(lambda: prv_epsilon(segments, False), repeats)
        print(
            f"{'PRV ε, ' + name:<52} {before:9.3f} {now:8.3f} {before / now:6.1f} "
            f"{abs(reference - floats):17.2e}"
        )
    for name, (sigma, rate, steps) in PLDS.items():
        from dp_accounting.pld import privacy_loss_distribution as pld

        distribution = pld.from_gaussian_mechanism(
            sigma, sampling_prob=rate, pessimistic_estimate=True, value_discretization_interval=PLD_INTERVAL
        ).self_compose(steps)
        epsilons = np.sort(EPSILONS)  # dp-accounting takes them sorted
        before, reference = timed(lambda: np.asarray(distribution.get_delta_for_epsilon(epsilons)), repeats)
        now, sums = timed(lambda: delta_for_epsilons(distribution, epsilons), repeats)
        print(
            f"{'PLD δ(ε), ' + name:<52} {before:9.3f} {now:8.3f} {before / now:6.1f} "
            f"{np.abs(reference - sums).max():17.2e}"
        )
    for name, epsilon in CALIBRATIONS.items():
        before, reference = timed(lambda: calibrated(epsilon, True), 1)
        now, floats = timed(lambda: calibrated(epsilon, False), 1)
        print(f"{name:<52} {before:9.3f} {now:8.3f} {before / now:6.1f} {abs(reference - floats):17.2e}")


if __name__ == "__main__":
    main()
