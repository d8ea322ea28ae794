"""The one-run canary audit of one training configuration on real private rows.

m canaries, each included in the private training set independently with probability ½ (seeded). Canary j is a
row whose audited features are zero except one coordinate of its own, appended to the configuration's features
(k components, or all standardised features) and zero for every real row, with a random label: an input canary
whose every gradient (DP-SGD) or released statistic (closed-form heads) lands where nothing else does, so its
influence on the head is the clearest one input can have. The head is trained with the configuration's own
method, sampling rate, steps, clip and calibrated noise; each canary is scored by how much lower its loss is
than that of the same label on an all-zero row (its label's share of the bias taken out, which would otherwise
rank the labels); the auditor guesses "in" for the `guesses` highest scores and "out" for the `guesses` lowest
(numbers fixed in advance), and bound.py turns the correct guesses into ε_lb. The noise can be scaled by a
planted factor (tests of the audit's power only); the claimed ε is always that of the calibrated, unscaled
noise.

With `rows_per_canary` r > 1 every canary is a person of r identical rows, included or left out whole: with
the person as the privacy unit the head bounds each person's contribution (linear/persons.py) and the bound
must stay below the claim; with the row as the unit it does not, and the audit can find more than the per-row
ε claims.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.audit.bound import epsilon_lower_bound
from pillar_cli.errors import UsageError, check_one_of, param
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Cannot, Cell, Method
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.privacy import Event, calibrate_noise, dp_sgd_event, spent_epsilon, validate_budget
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.risk import audit_points, risk_of
from pillar_cli.privacy.unit import PERSON, ROW, PrivacyUnit, Units
from pillar_cli.projection import LinearMap, project

CANARY_VALUE = 10.0  # the canary's coordinate: its clipped gradient is 99.5 % in that coordinate, 10 % bias
CANARY_KIND = (
    "input: one feature coordinate of its own (zero for every real row), a random label; scored by its "
    "loss under the trained head below that of its label on an all-zero row"
)


@dataclass(frozen=True)
class AuditSettings:
    canaries: int = 1000
    guesses: int | None = None  # per side; None: a tenth of the canaries
    confidence: float = 0.95
    seed: int = 0
    noise_scale: float = 1.0  # a planted bug for tests of the audit: 0 skips the noise, 0.1 scales it
    clip_scale: float = 1.0  # another: the clipping norm scaled up (the noise's absolute scale kept)
    rows_per_canary: int = 1  # r > 1: each canary is a person of r identical rows
    unit: str = "row"  # the privacy unit the audited training runs with: row or person

    def __post_init__(self) -> None:
        if self.canaries < 10:
            raise UsageError(f"{param('canaries')} must be at least 10 (got {self.canaries})")
        if self.rows_per_canary < 1:
            raise UsageError(f"{param('canary_rows')} must be at least 1 (got {self.rows_per_canary})")
        check_one_of((ROW, PERSON))("privacy_unit", self.unit)
        if not 0 < self.confidence < 1:
            raise UsageError(f"{param('confidence')} must be in (0, 1) (got {self.confidence})")
        if not 1 <= self.per_side <= self.canaries // 2:
            raise UsageError(
                f"{param('guesses')} must be between 1 and half the canaries (got {self.per_side})"
            )

    @property
    def per_side(self) -> int:
        return self.canaries // 10 if self.guesses is None else self.guesses


@dataclass(frozen=True)
class AuditResult:
    included: np.ndarray  # (m,) bool: which canaries were in the training set
    labels: np.ndarray  # (m,) their labels
    scores: np.ndarray  # (m,) minus their loss under the trained head
    guesses: int  # in + out
    correct: int
    epsilon_claimed: float
    epsilon_lower_bound: float
    event: Event


class CanaryMap:
    """Rows [x | c] ↦ [the audited map of x | c]: the configuration's k features (or all standardised ones)
    and one coordinate per canary after them; its basis at the full width is the identity."""

    def __init__(self, inner: LinearMap, k: int | None, canaries: int):
        self.inner, self.k, self.canaries = inner, k, canaries
        self.dim = inner.dim + canaries

    def standardized(self, x: np.ndarray) -> np.ndarray:
        base = project(self.inner, x[:, : self.inner.dim], self.k)
        return np.hstack([base, x[:, self.inner.dim :]]).astype(np.float32)

    def basis(self, k: int) -> np.ndarray:
        return np.eye(k, dtype=np.float32)

    def width(self) -> int:
        return (self.inner.dim if self.k is None else self.k) + self.canaries


def run_audit(
    method: Method,
    data: SweepData,
    k: int | None,
    epsilon: float,
    config: RunConfig,
    privacy: PrivacySettings,
    settings: AuditSettings,
    device: str = "cpu",
    options: Any = None,
) -> AuditResult:
    """Train the configuration once with canaries and bound ε from how well their scores tell who was in;
    `options`: the method's options (None: its defaults)."""
    if reason := method.cannot.get(Cannot.BE_AUDITED):
        raise UsageError(f"method '{method.name}' cannot be audited with input canaries: {reason}")
    if not math.isfinite(epsilon):
        raise UsageError(f"an audit needs a private configuration: {param('epsilon')} must be finite")
    validate_budget(epsilon, privacy.delta, len(data.private_x))
    if k is not None and method.projects:  # before the canaries widen the rows
        method.check_k(k, data.pca, data.num_classes)
    canaries = Canaries.plant(method, data, k, settings)
    privacy = replace(privacy, unit=PrivacyUnit.resolve(settings.unit, canaries.data.units.named_by))
    if privacy.unit.is_person and not method.can(Cannot.BOUND_A_PERSON):
        raise UsageError(
            f"method '{method.name}' bounds one row's contribution, not one person's: audit it with "
            f"{param('privacy_unit')} row"
        )
    audited, mapping, canary_rows = canaries.data, canaries.mapping, canaries.rows
    config, included, labels, m = (
        canaries.scaled(config, privacy.unit),
        canaries.included,
        canaries.labels,
        settings.canaries,
    )
    units = RowCount.exact(audited.units.bounded_by(privacy.unit).count)  # the auditor's own rows or persons
    rate, steps = method.mechanism(config, units)
    sigma = calibrate_noise(privacy.accountant, epsilon, privacy.delta, rate, steps)
    if settings.clip_scale != 1 and method.normalises_rows:
        raise UsageError(f"method '{method.name}' scales its rows to unit norm: it has no clipping to skip")
    # noise σ·clip: σ scaled down to match
    planted = replace(privacy, clip=privacy.clip * settings.clip_scale)
    cell = Cell(
        audited,
        mapping,
        mapping.width(),
        epsilon,
        [config],
        planted,
        "fast",
        device,
        method.options_or_defaults(options),
        noise=lambda rate, steps: settings.noise_scale * sigma / settings.clip_scale,
    )
    (run,) = method.train_cell(cell)
    rows = method.features(mapping, canary_rows, mapping.width())
    scores = _losses(run.head, np.zeros_like(rows), labels) - _losses(run.head, rows, labels)
    correct = correct_guesses(scores, included, settings.per_side)
    event = dp_sgd_event(sigma, rate, steps)
    claimed = spent_epsilon(privacy.accountant, event, privacy.delta)
    bound = epsilon_lower_bound(m, 2 * settings.per_side, correct, privacy.delta, settings.confidence)
    return AuditResult(included, labels, scores, 2 * settings.per_side, correct, claimed, bound, event)


@dataclass(frozen=True)
class Canaries:
    """The audited training set: the real private rows (padded with the canaries' coordinates) and the
    included canaries (r rows each), and how many units (rows, or persons) there were before them."""

    data: SweepData
    mapping: CanaryMap
    rows: np.ndarray  # (m, D + m) every canary's row, in or out
    included: np.ndarray
    labels: np.ndarray
    real: SweepData

    def scaled(self, config: RunConfig, unit: PrivacyUnit) -> RunConfig:
        """The configuration with its batch size scaled so that its sampling rate over the unit stays (0: all
        stays)."""
        audited, real = (data.units.bounded_by(unit).count for data in (self.data, self.real))
        batch = config.batch_size and max(1, round(config.batch_size * audited / real))
        return replace(config, batch_size=batch)

    @classmethod
    def plant(cls, method: Method, data: SweepData, k: int | None, settings: AuditSettings) -> Canaries:
        # The auditor's design, not a mechanism's draw: which canaries go in and their labels (stored in the
        # audit artifact, as the bound needs them). The training run's batches and noise come from
        # privacy.noise (secret).
        rng = np.random.default_rng([settings.seed, 0xA0D17])
        m, num_classes = settings.canaries, data.num_classes
        included, labels = rng.random(m) < 0.5, rng.integers(num_classes, size=m)
        rows = np.hstack([np.tile(data.pca.mean_, (m, 1)), CANARY_VALUE * np.eye(m)]).astype(np.float32)
        r, inside = settings.rows_per_canary, np.flatnonzero(included)
        private = np.vstack([_pad(data.private_x, m), np.repeat(rows[inside], r, axis=0)])
        real = data.units.ids
        persons = np.concatenate([real, real.max(initial=-1) + 1 + np.repeat(np.arange(len(inside)), r)])
        grouped = settings.unit == PERSON or r > 1 or data.units.grouped
        units = (
            Units.of(persons, len(persons), f"the private rows' persons and {r} rows a canary")
            if grouped
            else Units.rows(len(persons))
        )
        audited = replace(  # the real rows, padded, and the canaries: nothing else of the real data
            data,
            private_x=private,
            private_y=np.concatenate([data.private_y, np.repeat(labels[inside], r)]),
            val_x=None,
            val_y=None,
            val_units=None,
            public_x=None if data.public_x is None else _pad(data.public_x, m),
            units=units,
            private_index=None,
            val_index=None,
            rows_named=None,
        )
        return cls(
            audited, CanaryMap(data.pca, k if method.projects else None, m), rows, included, labels, data
        )


def _pad(rows: np.ndarray, canaries: int) -> np.ndarray:
    return np.hstack([rows, np.zeros((len(rows), canaries), dtype=rows.dtype)])


def _losses(head: LinearHead, rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
    logits = head.logits(rows).astype(np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    return np.log(np.exp(shifted).sum(axis=1)) - shifted[np.arange(len(labels)), labels]


def correct_guesses(scores: np.ndarray, included: np.ndarray, per_side: int) -> int:
    """'In' for the highest scores, 'out' for the lowest; ties broken by canary order (fixed before
    training)."""
    order = np.argsort(-scores, kind="stable")
    return int(included[order[:per_side]].sum() + (~included[order[-per_side:]]).sum())


def audit_summary(
    result: AuditResult, settings: AuditSettings, method: str, delta: float, planted: str | None = None
) -> str:
    """The audit in one line: what was audited, how many guesses were right, and the lower bound against the
    claim."""
    flag = "" if planted is None else f" [PLANTED BUG: {planted}]"
    return (
        f"{method} at claimed ε = {result.epsilon_claimed:.4g} (δ = {delta:g}){flag}: {result.correct} of "
        f"{result.guesses} guesses right over {settings.canaries} canaries → ε ≥ "
        f"{result.epsilon_lower_bound:.3f} "
        f"at {settings.confidence:.0%} confidence ({result.epsilon_lower_bound / result.epsilon_claimed:.2f} "
        "of the claim)"
    )


def audit_artifact(
    result: AuditResult, settings: AuditSettings, configuration: dict, planted: str | None = None
) -> Artifact:
    """The canaries (who was in, their labels and scores), the guesses and the bound, what was audited, and
    its tests on the axes of the claimed guarantee's trade-off curve (`points`, privacy/risk.py)."""
    ratio = result.epsilon_lower_bound / result.epsilon_claimed
    points = audit_points(result.scores, result.included, risk_of(result.event), settings.confidence)
    attrs = {
        "canaries": settings.canaries,
        "guesses": result.guesses,
        "correct": result.correct,
        "confidence": settings.confidence,
        "epsilon_lower_bound": result.epsilon_lower_bound,
        "epsilon_claimed": result.epsilon_claimed,
        "ratio": ratio,
        "configuration": configuration,
        "event": result.event.to_dict(),
        "canary_kind": CANARY_KIND,
        "bound": "Steinke, Nasr & Jagielski (NeurIPS 2023), Theorem 5.2, δ included",
        "planted_bug": planted or "none",
        "points": points,
    }
    arrays = {
        "canaries/included": result.included,
        "canaries/labels": result.labels.astype(np.int64),
        "canaries/scores": result.scores,
    }
    return Artifact("audit", arrays, attrs)
