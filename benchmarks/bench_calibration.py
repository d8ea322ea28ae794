"""Noise calibration, side by side: accountant evaluations and seconds per calibration of the secant the
solver starts with against Brent's method alone (the solver with no secant step), over every accountant × ε,
for a ImageNet-like (q = 1024/45000, 500 steps) and an API-like (q = 256/1100, 300 steps) run, δ = 1e-5. Every
σ either way spends within 1 % below its target (checked here as it runs). The evaluations are the cost: each
is an FFT composition (PRV, PLD) or an RDP curve. Run: python benchmarks/bench_calibration.py [--accountants
prv,rdp,pld] [--eps 0.1,0.7,1,2,8]
"""

from __future__ import annotations

import argparse
import time

from pillar_cli.privacy import calibration
from pillar_cli.privacy.accountants import get_accountant
from pillar_cli.privacy.rdp_series import remember_rdp_terms

DELTA = 1e-5
RUNS = ((1024 / 45000, 500), (256 / 1100, 300))


def calibrate_counted(accountant: str, epsilon: float, rate: float, steps: int) -> tuple[int, float]:
    """(accountant evaluations, seconds) of one uncached calibration — no σ, and none of opacus' RDP terms
    (privacy/rdp_series.py remembers them) left from a calibration before; its σ checked against the band."""
    from opacus.accountants.analysis import rdp

    remember_rdp_terms()
    rdp._compute_rdp.cache_clear()
    evaluations = [0]

    def eps_of(sigma: float) -> float:
        evaluations[0] += 1
        return get_accountant(accountant).epsilon(((sigma, rate, steps),), DELTA)

    start = time.perf_counter()
    sigma = calibration.solve_noise(
        eps_of, epsilon, lambda goal: calibration._bracket_guess(goal, rate, steps, DELTA)
    )
    seconds = time.perf_counter() - start
    spent = get_accountant(accountant).epsilon(((sigma, rate, steps),), DELTA)
    assert 0.99 * epsilon <= spent <= epsilon, (accountant, epsilon, rate, steps, sigma, spent)
    return evaluations[0], seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accountants", default="prv,rdp,pld")
    parser.add_argument("--eps", default="0.1,0.7,1,2,8")
    args = parser.parse_args()
    cases = [
        (a, float(e), q, t) for a in args.accountants.split(",") for e in args.eps.split(",") for q, t in RUNS
    ]
    totals = {}
    for name, secant_steps in (("secant, then Brent", calibration.SECANT_STEPS), ("Brent alone", 0)):
        calibration.SECANT_STEPS = secant_steps
        counted = [calibrate_counted(*case) for case in cases]
        totals[name] = (sum(n for n, _ in counted), sum(s for _, s in counted))
        print(
            f"{name:>20}: {totals[name][0]} evaluations, {totals[name][1]:.1f} s over {len(cases)} "
            f"calibrations (at most {max(n for n, _ in counted)} evaluations in one)",
            flush=True,
        )
    (fast, fast_s), (slow, slow_s) = totals["secant, then Brent"], totals["Brent alone"]
    print(f"ratio: {slow / fast:.2f}x fewer evaluations, {slow_s / fast_s:.2f}x less time")


if __name__ == "__main__":
    main()
