"""What a user asks a sweep to train — train-private's options, `sweep()`'s and `DPLinearClassifier`'s
arguments — as one frozen, keyword-only value, checked once against the constraints methods/constraints.py
declares for every field (as scikit-learn declares an estimator's parameter constraints), whoever builds it.
The plan (methods/plan.py) decides what needs the data."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pillar_cli.errors import UsageError, param
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.accounted import AccountedSelection
from pillar_cli.methods.base import Method
from pillar_cli.methods.catalog import DEFAULT_METHOD, get_method
from pillar_cli.methods.constraints import CONSTRAINTS
from pillar_cli.methods.data import PrivacySettings
from pillar_cli.methods.grid import AUTO, DEFAULT_BATCH, SweepGrid
from pillar_cli.privacy.count import COUNT_SHARE, DEFAULT_DELTA
from pillar_cli.privacy.risk_target import RiskTarget
from pillar_cli.randomness import NoiseSource

LISTS = (
    "method",
    "k",
    "epsilon",
    "lr",
    "steps",
    "batch_size",
    "seed",
    "ridge",
)  # one run of the grid per value
WORDS = ("k", "lr", "steps")  # lists that also take a word for the whole list ("auto": the default rule)

DEFAULT_EPSILON = (1.0,)  # the target ε where neither ε nor a risk target is given


@dataclass(frozen=True)
class SweepOptions:
    """How a sweep runs: which shard of its points, on which engine and device, with which method options and
    selection."""

    shard: tuple[int, int] = (0, 1)
    engine: str = "fast"
    device: str = "auto"
    method_options: dict[str, Any] = field(default_factory=dict)  # by method name (absent: its defaults)
    selection: AccountedSelection | None = None  # None: every configuration is trained, the choice is on val

    def of(self, method: Method) -> Any:
        """The method's options: as given, or its defaults."""
        return method.options_or_defaults(self.method_options.get(method.name))

    def selects_privately(self, epsilon: float, configs: list[RunConfig]) -> bool:
        """A private cell with more than one candidate per seed runs an accounted selection."""
        return (
            self.selection is not None
            and math.isfinite(epsilon)
            and len(configs) > len({config.seed for config in configs})
        )


@dataclass(frozen=True, kw_only=True)
class SweepRequest:
    """Every (method, k, ε) × (lr, steps, batch size, seed, ridge) to train, and how. k, lr and steps "auto":
    the default rule (methods/rules.py); k None: all features; steps None: each method's default; batch size
    None: every row in every step. `select` "val", "accounted" or an `AccountedSelection`; `val` what the
    labelled val rows do (methods/plan.py, `val_role`); `noise_seed` makes noise reproducible and the result
    NOT private; `n_public` declares the number of training rows public knowledge (no noisy count);
    `privacy_unit` what neighbouring datasets differ by: a row, a person (all their rows;
    privacy/guarantee.py), or auto (the person where the rows name one)."""

    method: tuple[str, ...] = (DEFAULT_METHOD,)
    k: tuple[int | None, ...] | str = AUTO
    epsilon: tuple[float, ...] | None = None  # None: DEFAULT_EPSILON, or what a risk target (max_tpr) sets
    # auto: DEFAULT_DELTA, or DELTA_SHARE/ñ where smaller (privacy/count.py default_delta)
    delta: float | str = AUTO
    accountant: str = "prv"
    clip: float = 1.0
    lr: tuple[float, ...] | str = AUTO
    steps: tuple[int, ...] | str | None = AUTO
    batch_size: tuple[int | None, ...] = (DEFAULT_BATCH,)
    seed: tuple[int, ...] = (0,)
    momentum: float = 0.0
    weight_decay: float = 0.0
    ridge: tuple[float | None, ...] = (None,)
    ema: float = 0.0
    select: str | AccountedSelection = "val"
    val: str = "auto"
    engine: str = "fast"
    device: str = "auto"
    shard: tuple[int, int] = (0, 1)
    method_options: Mapping[str, Any] = field(default_factory=dict)  # by method name (absent: its defaults)
    noise_seed: int | None = None
    n_public: bool = False
    count_share: float = COUNT_SHARE  # the noisy count's share of the smallest target's μ² (privacy/count.py)
    privacy_unit: str = "auto"
    # instead of ε: calibrate to at most this TPR of any membership attack at at_fpr
    max_tpr: float | None = None
    at_fpr: float = 0.01

    def __post_init__(self) -> None:
        for (
            name
        ) in LISTS:  # any sequence given becomes a tuple, one value a tuple of one: the request is a value
            value = getattr(self, name)
            if value is None or (isinstance(value, str) and name in WORDS):
                continue
            listed = isinstance(value, (list, tuple, range)) or (
                hasattr(value, "__iter__") and not isinstance(value, (str, bytes))
            )
            object.__setattr__(self, name, tuple(value) if listed else (value,))
        # each asked method's options, at their defaults where none are given
        given = dict(self.method_options)
        object.__setattr__(
            self,
            "method_options",
            {
                name: get_method(name).options_or_defaults(given.get(name))
                for name in self.method
                if get_method(name).options is not None
            },
        )
        for name, check in CONSTRAINTS.items():
            check(name, getattr(self, name))
        for name in LISTS:
            values = getattr(self, name)
            if not isinstance(values, tuple):
                continue
            if repeated := sorted({str(v) for v in values if values.count(v) > 1}):
                raise UsageError(
                    f"{param(name)} lists {repeated[0]} twice: each value names one run of the grid"
                )
        if self.max_tpr is not None:
            self._check_risk_target()

    def _check_risk_target(self) -> None:
        """A risk target replaces the ε list, and needs one mechanism per head that ε calibrates."""
        self.risk_target  # noqa: B018  # made, so that a target out of range is refused here
        if self.epsilon is not None:
            raise UsageError(
                f"give {param('epsilon')} or {param('max_tpr')}, not both: the risk target sets ε"
            )
        if self.selection is not None:
            raise UsageError(
                f"{param('max_tpr')} calibrates each head's own mechanism; {param('select')} accounted "
                "composes a selection around it: choose on val, or give ε"
            )

    @property
    def risk_target(self) -> RiskTarget | None:
        """The membership-inference risk to calibrate to instead of ε (None: the ε list is the target)."""
        return None if self.max_tpr is None else RiskTarget(self.max_tpr, self.at_fpr)

    def grid(self) -> SweepGrid:
        """The grid of runs asked for (not yet set for a row count)."""
        return SweepGrid.with_auto(
            ks=self.k if isinstance(self.k, str) else list(self.k),
            lrs=self.lr if isinstance(self.lr, str) else list(self.lr),
            steps=self.steps if self.steps is None or isinstance(self.steps, str) else list(self.steps),
            methods=list(self.method),
            epsilons=list(DEFAULT_EPSILON if self.epsilon is None else self.epsilon),
            seeds=list(self.seed),
            batch_sizes=list(self.batch_size),
            ridges=self.ridge,
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            ema=self.ema,
        )

    @property
    def delta_given(self) -> bool:
        """Whether δ was given (else the plan sets it from the released count)."""
        return not isinstance(self.delta, str)

    @property
    def planning_delta(self) -> float:
        """The δ the checks and the count's noise are planned at before δ is set: the one given, else the
        default's largest value (the default never exceeds it)."""
        return float(self.delta) if self.delta_given else DEFAULT_DELTA

    def privacy(self) -> PrivacySettings:
        return PrivacySettings(
            self.planning_delta,
            self.clip,
            self.accountant,
            NoiseSource(self.noise_seed),
            self.n_public,
            self.count_share,
        )

    @property
    def selection(self) -> AccountedSelection | None:
        """The accounted selection asked for, or None (the choice per cell is made on val, outside ε)."""
        if isinstance(self.select, AccountedSelection):
            return self.select
        return AccountedSelection() if self.select == "accounted" else None

    def options(self) -> SweepOptions:
        return SweepOptions(self.shard, self.engine, self.device, dict(self.method_options), self.selection)
