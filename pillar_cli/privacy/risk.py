"""What a guarantee allows an attacker: the trade-off curve of a DP event tree (f-DP; Dong, Roth & Su 2022)
and what it says for one unit — the highest true-positive rate any membership-inference attack reaches at a
false-positive rate it accepts, and the largest advantage (TPR − FPR) any attack has (Kulynych et al., NeurIPS
2024).

A mechanism is (ε, δ(ε))-DP for every ε, and each such pair bounds every test of "was this unit used" by the
line β ≥ 1 − δ(ε) − e^ε·α (and its mirror e^{−ε}·(1 − δ(ε) − α)), where α is the test's false-positive rate
and β its false-negative rate. The trade-off curve β(α) is the upper envelope of those lines over ε; with δ(ε)
exact for every ε it is the mechanism's exact curve, and over a finite grid of ε it lies at or below it — a
TPR bound 1 − β(α) at or above the true one, the safe side. δ(ε) comes from the tree's privacy loss
distribution (dp-accounting, pessimistic discretisation), or exactly for full-batch Gaussian trees (μ-GDP),
or, for a tree the PLD cannot hold (a private selection, one-of trials), from its Rényi DP curve (a looser
bound, still valid); exponential mechanisms composed at the top add their pure ε to every ε. The advantage is
δ(0), the total variation between neighbours.

The curve bounds membership inference of one unit (a row, or a person with all their rows) by an attacker who
knows everything else; it does not bound what public data lets anyone infer of a unit's attributes.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import UsageError, param
from pillar_cli.privacy.events import Event, Segment, gaussian_segments, is_private, pure_parts
from pillar_cli.privacy.gaussian import full_batch

FPRS = (0.001, 0.01, 0.1)  # the false-positive rates a statement quotes
AUDIT_SHARES = (
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
)  # a canary audit's tests: "in" for this share of the highest scores
EPSILONS = np.unique(
    np.concatenate([np.linspace(0.0, 4.0, 8001), np.linspace(4.0, 20.0, 6401), np.linspace(20.0, 60.0, 801)])
)  # the envelope's grid: 1e-6 of the exact curve
# dp-accounting's loss discretisation (pessimistic: coarser only raises a TPR bound, here by ~1e-6)
PLD_INTERVAL = 3e-4


@dataclass(frozen=True)
class Risk:
    """A guarantee's trade-off curve, sampled (`fprs`, `tprs`: the highest TPR at each FPR), and its
    advantage."""

    fprs: tuple[float, ...]
    tprs: tuple[float, ...]
    advantage: float

    def tpr_at(self, fpr: float) -> float:
        """The highest true-positive rate any attack reaches at false-positive rate `fpr`: at a sampled rate
        (FPRS are), else the next sampled rate above's, which bounds it (TPR grows with the FPR accepted)."""
        index = min(int(np.searchsorted(self.fprs, fpr, side="left")), len(self.fprs) - 1)
        return float(self.tprs[index])

    def to_attrs(self) -> dict:
        """What a statement records: the TPR at each of FPRS, and the advantage."""
        return {"tpr_at_fpr": {f"{fpr:g}": self.tpr_at(fpr) for fpr in FPRS}, "advantage": self.advantage}


def risk_words(tpr_at_fpr: dict, advantage: float, unit: str) -> str:
    """The risk in a sentence a reader can act on; `unit` names what is protected ("training row",
    "person")."""
    at_one = tpr_at_fpr["0.01"]
    return (
        f"an attacker who knows everything else and accepts a 1 % false-positive rate tells whether a given "
        f"{unit} was used with probability at most {100 * at_one:.3g} % (at 0.1 %: "
        f"{100 * tpr_at_fpr['0.001']:.3g} %; at 10 %: {100 * tpr_at_fpr['0.1']:.3g} %); no attack does "
        f"better than chance by more than {100 * advantage:.3g} points (its advantage)"
    )


def checked_prior(prior: float) -> float:
    """A prevalence to state the attribute risk at, refused outside (0, 1)."""
    if not 0.0 < prior < 1.0:
        raise UsageError(f"{param('prior')} is a prevalence strictly between 0 and 1, not {prior:g}")
    return prior


def attribute_accuracy(event: Event, prior: float) -> float:
    """The highest accuracy of any attacker who knows everything else and guesses a yes/no attribute of one
    unit held with prevalence `prior` (a condition 5 % of patients have: 0.05): one minus the Bayes risk of
    the guarantee's privacy profile (Kulynych et al. 2025), 1 − m·(1 − δ(ln((1 − m)/m))) with m = min(prior,
    1 − prior), against 1 − m for always guessing the more common answer."""
    m = min(prior, 1.0 - prior)
    delta = float(np.minimum(delta_curve(event)(np.array([math.log((1.0 - m) / m)])), 1.0)[0])
    return 1.0 - m * (1.0 - delta)


def attribute_words(prior: float, accuracy: float, unit: str) -> str:
    """The attribute risk at a prevalence in a sentence (`unit`: what is protected, as in risk_words)."""
    majority = 1.0 - min(prior, 1.0 - prior)
    return (
        f"guessing a yes/no attribute that {100 * prior:.3g} % of them hold, such an attacker is right "
        f"about a given {unit} with probability at most {100 * accuracy:.4g} % (always guessing the more "
        f"common answer: {100 * majority:.4g} %)"
    )


def audit_points(
    scores: np.ndarray, included: np.ndarray, curve: Risk, confidence: float = 0.95
) -> list[dict]:
    """A canary audit on the curve's axes: the membership test "in" for the canaries whose scores are among
    the top share, at each of AUDIT_SHARES, as its FPR and TPR with Clopper–Pearson intervals at `confidence`,
    beside the curve's highest TPR at that FPR (`tpr_bound`). `above_curve`: even the TPR's lower end exceeds
    the bound at the FPR's upper end — a test the guarantee says no attack passes (one of several tests: a
    hint, while the canary audit's ε lower bound is the test with a stated confidence)."""
    from scipy.stats import beta

    order = np.argsort(-np.asarray(scores), kind="stable")
    included = np.asarray(included, dtype=bool)
    positives, negatives = int(included.sum()), int((~included).sum())
    tail = (1 - confidence) / 2
    points = []
    for share in AUDIT_SHARES:
        guessed = np.zeros(len(order), dtype=bool)
        guessed[order[: max(1, round(share * len(order)))]] = True
        point = {"share": share}
        for name, hits, total in (
            ("tpr", int((guessed & included).sum()), positives),
            ("fpr", int((guessed & ~included).sum()), negatives),
        ):
            point[name] = hits / total
            point[f"{name}_low"] = float(beta.ppf(tail, hits, total - hits + 1)) if hits else 0.0
            point[f"{name}_high"] = float(beta.ppf(1 - tail, hits + 1, total - hits)) if hits < total else 1.0
        point["tpr_bound"] = curve.tpr_at(point["fpr"])
        point["above_curve"] = point["tpr_low"] > curve.tpr_at(point["fpr_high"])
        points.append(point)
    return points


@functools.lru_cache(maxsize=256)
def risk_of(event: Event) -> Risk:
    """The trade-off curve of `event` on a grid of false-positive rates (dense near 0), and its advantage."""
    if not is_private(event):
        return Risk((0.0, 1.0), (1.0, 1.0), 1.0)
    deltas = np.minimum(delta_curve(event)(EPSILONS), 1.0)
    fprs = np.unique(np.concatenate([[0.0], FPRS, np.geomspace(1e-6, 1.0, 1000), np.linspace(0, 1, 201)]))
    tprs = 1.0 - trade_off(fprs, EPSILONS, deltas)
    return Risk(tuple(fprs.tolist()), tuple(np.maximum(tprs, fprs).tolist()), float(deltas[0]))


def trade_off(alphas: np.ndarray, epsilons: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """β(α): the upper envelope over the (ε, δ(ε)) pairs of max(0, 1 − δ − e^ε·α, e^{−ε}·(1 − δ − α)), in [0,
    1].

    Each pair gives two lines in α, and 0 is a line too: their upper envelope is convex, so it is built once
    from the lines in order of slope and walked along the sorted α — O(pairs + α), where every line at every α
    took 0.4 s a curve (30,000 lines × 1,200 α)."""
    slopes = np.concatenate([-np.exp(epsilons), -np.exp(-epsilons), [0.0]])
    intercepts = np.concatenate([1 - deltas, np.exp(-epsilons) * (1 - deltas), [0.0]])
    order = np.lexsort((intercepts, slopes))  # by slope, the highest intercept of equal slopes last
    hull: list[tuple[float, float]] = []  # (intercept, slope) of the envelope's lines, slopes increasing
    for a, b in zip(intercepts[order].tolist(), slopes[order].tolist()):
        if hull and hull[-1][1] == b:
            hull.pop()  # a parallel line below this one
        while len(hull) >= 2 and _hidden(hull[-2], hull[-1], (a, b)):
            hull.pop()
        hull.append((a, b))
    betas, line = np.empty(len(alphas)), 0
    for i in np.argsort(alphas, kind="stable").tolist():
        at = float(alphas[i])
        while line + 1 < len(hull) and _value(hull[line + 1], at) >= _value(hull[line], at):
            line += 1  # the envelope's next line has taken over by this α
        betas[i] = _value(hull[line], at)
    return np.clip(betas, 0.0, 1.0)


def _value(line: tuple[float, float], at: float) -> float:
    return line[0] + line[1] * at


def _hidden(first: tuple[float, float], middle: tuple[float, float], last: tuple[float, float]) -> bool:
    """Whether the middle line (slopes increasing) is nowhere above both others: where it would take over from
    the first lies at or beyond where the last does."""
    (a1, b1), (a2, b2), (a3, b3) = first, middle, last
    return (a1 - a3) * (b2 - b1) <= (a1 - a2) * (b3 - b1)


def delta_curve(event: Event):
    """δ as a function of ε (arrays) for the tree: pure parts shift ε; the approximate part by its PLD,
    exactly for full-batch Gaussian segments, or by its Rényi DP curve."""
    pure, approximate = pure_parts(event)
    if approximate is None:
        return lambda eps: np.where(eps >= pure, 0.0, 1.0)
    segments = gaussian_segments(approximate)
    if segments is not None and full_batch(tuple(segments)):
        inner = _gdp_delta(math.sqrt(sum(steps / sigma**2 for sigma, _, steps in segments)))
    elif segments is not None:
        inner = _pld_delta(tuple(segments))
    else:
        inner = _rdp_delta(approximate)
    return lambda eps: inner(np.maximum(np.asarray(eps, dtype=np.float64) - pure, 0.0))


def _gdp_delta(mu: float):
    """δ(ε) of μ-GDP, exactly (privacy/gaussian.py), vectorised."""
    from scipy.special import log_ndtr

    return lambda eps: np.maximum(
        np.exp(log_ndtr(-eps / mu + mu / 2)) - np.exp(eps + log_ndtr(-eps / mu - mu / 2)), 0.0
    )


def _pld_delta(segments: tuple[Segment, ...]):
    """δ(ε) of Poisson-subsampled Gaussian segments composed, from dp-accounting's privacy loss distribution
    (add/remove adjacency, the larger of both directions' δ)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    from pillar_cli.privacy.pld_delta import delta_for_epsilons

    distribution = None
    for sigma, rate, steps in segments:
        part = pld.from_gaussian_mechanism(
            sigma,
            sensitivity=1.0,
            sampling_prob=rate,
            pessimistic_estimate=True,
            value_discretization_interval=PLD_INTERVAL,
        ).self_compose(steps)
        distribution = part if distribution is None else distribution.compose(part)
    return lambda eps: delta_for_epsilons(distribution, eps)


def _rdp_delta(event: Event):
    """δ(ε) from the tree's Rényi DP curve (the conversion dp-accounting uses: Canonne, Kamath & Steinke
    2020)."""
    from pillar_cli.privacy.rdp import ORDERS, event_rdp

    rdp, orders = event_rdp(event), ORDERS
    usable = orders > 1

    def delta(eps: np.ndarray) -> np.ndarray:
        a, r = orders[usable][:, None], rdp[usable][:, None]
        logs = (a - 1) * (r - np.asarray(eps)[None, :] + np.log1p(-1 / a)) - np.log(a)
        return np.minimum(np.exp(np.min(logs, axis=0)), 1.0)

    return delta
