"""The theory variant of PILLAR (the paper's Algorithms 1–2) for binary tasks: boosted projected noisy SGD.

Labels y ∈ {−1, +1}; rows are L2-normalised (‖x‖ = 1) and weights kept in the unit ball, so the ζ-scaled hinge
loss ℓ(w; x, y) = max(0, 1 − y⟨w, x⟩/ζ) is L = 1/ζ Lipschitz and takes values in [0, 1 + 1/ζ].
- One run (the noisy SGD of Bassily, Smith, Thakurta 2014): T steps (n² unless `steps` says otherwise), each w
  ← Π(w − η_t (n·Σ_{i∈S_t} ∇ℓ(w; x_i, y_i) + b_t)), b_t ~ N(0, σ²I), with the step size η_t = R / √(t (n²L² +
  pσ²)) of their Lipschitz-convex analysis (R = 1, the ball's radius).
- Deviation, for tight accounting: S_t is a Poisson sample of rate 1/n (one example in expectation) instead of
  one uniform draw, and σ = z·nL is calibrated by pillar's accountant for T Poisson-sampled Gaussian steps
  (add/remove adjacency, sensitivity nL) instead of BST's closed-form bound.
- Every n above (the rate, T = n², the scale n·L, the step size) is the released row count ñ
  (privacy/count.py), whose release composes into the run's ε: the exact n is private.
- Boosting: m = ⌈ln(1/β)⌉ independent runs, whose m·T Poisson-sampled steps together are calibrated to (ε/2,
  δ) by the accountant, then the exponential mechanism (ε/2; the summed loss changes by at most 1 + 1/ζ when
  one example is added or removed) picks the run with the smallest private hinge loss. The run's event tree
  composes the two: the output is (ε, δ)-DP.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from pillar_cli.errors import UsageError, check_positive, check_probability
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Cannot, Cell, Method, Run, each_run, option
from pillar_cli.privacy import Event, ExponentialEvent, composed, dp_sgd_event
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.events import SelfComposedEvent
from pillar_cli.projection import project

MECHANISM = (
    "noisy-sgd: m runs of T Poisson-sampled (rate 1/n) noisy SGD steps, together at (ε/2, δ), then "
    "exponential-mechanism selection at ε/2"
)
# steps are drawn (samples, noise) in chunks of about this many noise values: 8 MiB of noise, and the padded
# samples take that times the largest sample of the chunk (Binomial(n, 1/n): rarely above 7)
CHUNK_VALUES = 2**20


@dataclass(frozen=True)
class NoisySGDOptions:
    zeta: float = option(
        0.1, "margin scale ζ of the hinge loss (check-assumptions reports ζ = γ(1 − ξ − 0.1γ))."
    )
    beta: float = option(0.05, "failure probability; ⌈ln 1/β⌉ boosted runs.")

    def __post_init__(self) -> None:
        check_positive("zeta", self.zeta)
        check_probability("beta", self.beta)


@dataclass(frozen=True)
class NoisySGDResult:
    head: LinearHead
    event: Event  # the m runs composed with the exponential mechanism that chose among them
    runs: int
    epsilon_spent: float  # of the event with what it rests on composed in (the count, upstream releases)


def train_noisy_sgd(
    features: np.ndarray,
    labels: np.ndarray,
    steps: int,
    rng: np.random.Generator,
    epsilon: float,
    options: NoisySGDOptions,
    count: RowCount,
    noise: Callable[[float, float, int], float],
    spent_epsilon: Callable[[Event], float],
) -> NoisySGDResult:
    """Algorithms 1–2: boosted noisy SGD runs and an exponential-mechanism choice among them; `rng` is secret
    (every sample, noise draw and the choice); `count`: what n the run reads; `noise(ε, rate, steps)`: σ of
    the Gaussian steps whose composition with what the head rests on spends ε (the exponential mechanism takes
    the other half); `spent_epsilon`: the ε of an event with what it rests on."""
    classes = np.unique(labels)
    if len(classes) > 2 or set(classes) - {0, 1}:
        raise UsageError(
            f"method 'noisy-sgd' is the theory variant for binary tasks; these labels have "
            f"{len(classes)} classes"
        )
    n, rate = count.value, count.sample_rate(1)
    x = features / np.maximum(np.linalg.norm(features, axis=1, keepdims=True), 1e-12)
    y = 2.0 * labels - 1.0
    runs, lipschitz = math.ceil(math.log(1 / options.beta)), 1.0 / options.zeta
    private = not math.isinf(epsilon)
    multiplier = noise(epsilon / 2, rate, runs * steps) if private else 0.0
    event = composed(
        SelfComposedEvent(dp_sgd_event(multiplier, rate, steps), runs), ExponentialEvent(epsilon / 2)
    )
    weights = _noisy_sgd(x, y, steps, multiplier * n * lipschitz, runs, options.zeta, rng, count)
    losses = _losses(weights, x, y, options.zeta)
    if not private:
        return NoisySGDResult(_as_head(weights[np.argmin(losses)]), event, runs, math.inf)
    scores = -(epsilon / 2) * losses / (2 * (1 + lipschitz))
    probabilities = np.exp(scores - scores.max())
    chosen = rng.choice(runs, p=probabilities / probabilities.sum())
    return NoisySGDResult(_as_head(weights[chosen]), event, runs, spent_epsilon(event))


def _noisy_sgd(
    x: np.ndarray,
    y: np.ndarray,
    steps: int,
    sigma: float,
    runs: int,
    zeta: float,
    rng: np.random.Generator,
    count: RowCount,
) -> np.ndarray:
    """(runs, p) weights of `runs` independent projected noisy SGD runs, advanced together; `count` is the n
    that the rate 1/n, the scale n and the step size read."""
    n, rate, dim = count.value, count.sample_rate(1), x.shape[1]
    weights = np.zeros((runs, dim))
    signed_rows = y[:, None] * x  # the hinge reads a row only as y·x
    variance_term = n * n / zeta**2 + dim * sigma**2
    chunk = max(1, CHUNK_VALUES // (runs * dim))
    for start in range(0, steps, chunk):
        now = min(chunk, steps - start)
        samples = PoissonSamples(len(x), rate, now, runs, rng)
        noise = sigma * rng.standard_normal((now, runs, dim))
        rates = 1.0 / np.sqrt((start + np.arange(1, now + 1)) * variance_term)
        _advance(weights, samples.padded(signed_rows), noise, rates, n / zeta, zeta)
    return weights


def _advance(
    weights: np.ndarray, signed: np.ndarray, noise: np.ndarray, rates: np.ndarray, scale: float, zeta: float
) -> None:
    """Steps w ← Π(w − η_t (n·Σ_i ∇ℓ(w; x_i, y_i) + b_t)) in place, one per leading index of `signed` (steps,
    runs, slots, p): the y·x of each run's sampled rows, zero rows in unused slots (their margin 0 < ζ puts
    them inside the hinge, where their gradient −y·x/ζ is zero). `noise` is scratch: each step's update is
    built in it."""
    for signed_rows, update, rate in zip(signed, noise, rates):
        inside = ((signed_rows @ weights[:, :, None])[..., 0] < zeta).astype(float)  # (runs, slots)
        update -= scale * (inside[:, None, :] @ signed_rows)[:, 0]  # n·Σ ∇ℓ = −(n/ζ)·Σ_inside y·x
        weights -= rate * update
        weights /= np.maximum(1.0, np.sqrt(np.square(weights).sum(axis=1, keepdims=True)))


class PoissonSamples:
    """Poisson samples of rate q of n rows for steps × runs: each a Binomial(n, q) count of distinct uniform
    rows (a uniform subset of that size), stored flat in (step, run) order."""

    def __init__(self, n: int, rate: float, steps: int, runs: int, rng: np.random.Generator):
        self.shape = (steps, runs)
        counts = rng.binomial(n, rate, steps * runs)
        starts = np.cumsum(counts) - counts
        self.group = np.repeat(np.arange(steps * runs), counts)  # the (step, run) of each sampled row, flat
        self.slot = np.arange(len(self.group)) - np.repeat(starts, counts)
        self.rows = rng.integers(0, n, len(self.group))
        while len(repeated := self._groups_with_repeats(n)):  # a collision has probability ≈ count²/2n
            for group in repeated:
                self.rows[starts[group] : starts[group] + counts[group]] = rng.integers(0, n, counts[group])

    def padded(self, values: np.ndarray) -> np.ndarray:
        """(steps, runs, slots, …): values[row] of each sampled row, zeros in the unused slots."""
        slots = int(self.slot.max(initial=0)) + 1
        out = np.zeros((self.shape[0] * self.shape[1], slots, *values.shape[1:]))
        out[self.group, self.slot] = values[self.rows]
        return out.reshape(self.shape + out.shape[1:])

    def _groups_with_repeats(self, n: int) -> np.ndarray:
        keys = np.sort(self.group * n + self.rows)
        return np.unique(keys[1:][keys[1:] == keys[:-1]] // n)


def _losses(weights: np.ndarray, x: np.ndarray, y: np.ndarray, zeta: float) -> np.ndarray:
    """Summed ζ-scaled hinge loss of each run's weights on the private rows."""
    return np.maximum(0.0, 1.0 - y[:, None] * (x @ weights.T) / zeta).sum(axis=0)


def _as_head(w: np.ndarray) -> LinearHead:
    """sign(⟨w, x⟩) as a two-class linear head: class 1 (y = +1) scores ⟨w, x⟩/2, class 0 scores −⟨w, x⟩/2."""
    return LinearHead(np.stack([-w / 2, w / 2], axis=1).astype(np.float32), np.zeros(2, np.float32))


class NoisySGD(Method):
    """The theory variant as a sweep method: binary tasks, its own step count (Algorithm 1: n²), no lr or
    batch."""

    name = "noisy-sgd"
    family = "noisy-SGD"
    options = NoisySGDOptions
    description = (
        "theory variant (Algorithms 1-2): binary tasks, ζ-scaled hinge loss, boosted projected noisy SGD "
        "on the top-k public components"
    )
    steps_rule = "Algorithm 1's n²"
    # its step size is the schedule's, its batch one row in expectation
    request_fields = frozenset({"k", "steps"})
    mechanism_description = MECHANISM
    cannot = MappingProxyType(
        {
            Cannot.BE_SELECTED: "it already selects among its boosted runs privately (Algorithm 2), "
            "inside its ε",
            Cannot.BE_AUDITED: "binary ζ-hinge runs with their own private selection",
            Cannot.BOUND_A_PERSON: "it bounds one row's contribution",
        }
    )

    def configs(
        self, *, steps: list[int] | None, seeds: list[int], rows: float, **_: object
    ) -> list[RunConfig]:
        """One example per step in expectation; the step size is the schedule's; n² steps unless given."""
        return [RunConfig(0.0, t, 1, s) for t in steps or [self.default_steps(rows)] for s in seeds]

    def default_steps(self, n: float) -> int:
        return max(1, round(n * n))

    def train_cell(self, cell: Cell) -> list[Run]:
        train_z = project(cell.mapping, cell.data.private_x, cell.k)

        def noise(epsilon: float, rate: float, steps: int) -> float:
            return replace(cell, epsilon=epsilon).noise_multiplier(rate, steps)

        trained = [
            each_run(
                cell,
                c,
                functools.partial(
                    train_noisy_sgd,
                    train_z,
                    cell.data.private_y,
                    c.steps,
                    cell.randomness.child("run", c).numpy(),
                    cell.epsilon,
                    cell.options,
                    cell.rows,
                    noise,
                    cell.spent_epsilon,
                ),
            )
            for c in cell.configs
        ]
        return [Run(head=t.head, event=t.event, epsilon_spent=t.epsilon_spent) for t in trained]

    def model_attrs(self, options: NoisySGDOptions) -> dict:
        return {
            "noisy_sgd": {
                "mechanism": MECHANISM,
                "zeta": options.zeta,
                "beta": options.beta,
                "boosted_runs": math.ceil(math.log(1 / options.beta)),
                "per_run": "for noisy-sgd rows, runs/event composes the m boosted runs and the exponential "
                "mechanism; runs/epsilon_spent is its ε, selection included",
            }
        }


NOISY_SGD = NoisySGD()
