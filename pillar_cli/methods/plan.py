"""A sweep's plan: everything decided before any mechanism reads a private row, whoever calls (the CLI's
train-private, `sweep()`, `DPLinearClassifier.fit`).

1. The request (methods/request.py, checked against its declared constraints) is checked against the data: the
   budget for the count, each method's k and data, the selection.
2. The row count: where a private cell derives anything from the number of training rows — its method (a
   sampling rate, an update's scale, class sizes) or the request (the default rule's k, lr, steps; a full
   batch) — the count is released once with Gaussian noise for the smallest such target ε (privacy/count.py),
   unless the caller declares n public. Cells that read it compose its release into their ε; the others never
   see it.
3. The grids: the request set for that count, one per ε where the default rule sets k, lr or steps; δ < 1/ñ.

The privacy unit is decided first (privacy/guarantee.py): the person where the request asks for it, or by
default where the training rows name their persons; the count is then of persons, and every method must bound
a person.

What the labelled val split does is decided before, where the sweep's data is arranged
(methods/arrangement.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from pillar_cli.artifacts.stored_rows import all_finite, data_digest
from pillar_cli.devices import resolve_device
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.memory import return_large_buffers
from pillar_cli.methods.base import Cannot, Method
from pillar_cli.methods.catalog import bounding_persons, get_method
from pillar_cli.methods.constraints import check_lr
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.methods.grid import SweepGrid, check_grid
from pillar_cli.methods.request import SweepOptions, SweepRequest
from pillar_cli.methods.rules import ruled_grids
from pillar_cli.privacy import Event, dp_sgd_event, require_disjoint, validate_budget
from pillar_cli.privacy.count import RowCount, count_for, default_delta
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.release import DPRelease
from pillar_cli.privacy.risk_target import RiskTarget
from pillar_cli.privacy.unit import PrivacyUnit


@dataclass(frozen=True)
class SweepPlan:
    """The grids a sweep runs (one per ε where the default rule sets values), the guarantee every run is of
    (its unit, the row count the grids were set for, the upstream releases composed in), and the methods whose
    cells read that count (their ε covers its release)."""

    grids: list[SweepGrid]
    guarantee: Guarantee
    readers: frozenset[str]
    request: SweepRequest
    preview: bool = False  # made from the exact n to be printed (--dry-run): it never trains
    risk_target: RiskTarget | None = None  # what the request's ε was calibrated to, where it asked for a risk

    @property
    def count(self) -> RowCount:
        """The count the plan released (or took as exact): every plan's guarantee holds one."""
        if self.guarantee.count is None:
            raise ValueError("a sweep plan's guarantee holds the count it released")
        return self.guarantee.count

    @property
    def unit(self) -> PrivacyUnit:
        """What neighbouring datasets differ by: a row, or a person."""
        return self.guarantee.unit

    @property
    def privacy(self) -> PrivacySettings:
        return replace(self.request.privacy(), unit=self.unit)

    @property
    def options(self) -> SweepOptions:
        return self.request.options()

    def total_steps(self) -> int:
        """DP-SGD steps of the runs of the request's shard."""
        return sum(grid.total_steps(self.request.shard) for grid in self.grids)

    def runs(self) -> list[dict]:
        """Every run of the request's shard as the plan sets it: method, k, ε, lr, steps, batch size, the
        sampling rate q and, for the Gaussian methods calibrated as DP-SGD, the noise multiplier σ (for the
        whole tree the run rests on: the count's release where the cell reads it, the upstream releases); NaN
        where a method draws its own (a boosted or exponential mechanism)."""
        rows = []
        for grid in self.grids:
            for (method, k, epsilon), config in grid.points(self.request.shard):
                head = self.guarantee.for_head(method in self.readers)
                rate, steps = get_method(method).mechanism(config, head.count or self.count)
                own = not get_method(method).can(Cannot.BE_SELECTED) or not math.isfinite(epsilon)
                sigma = math.nan if own else head.noise(epsilon, rate, steps)
                rows.append(
                    {
                        "method": method,
                        "k": "full" if k is None else k,
                        "epsilon": epsilon,
                        "lr": config.lr,
                        "steps": config.steps,
                        "batch_size": config.batch_size,
                        "sample_rate": rate,
                        "noise_multiplier": 0.0 if math.isinf(epsilon) else sigma,
                    }
                )
        return rows


def reads_count(method: Method, grid: SweepGrid) -> bool:
    """Whether a cell of `method` in the request `grid` derives anything from the number of private rows: the
    method itself, or a field of the request it reads that n sets (the default rule's k, lr or steps; a batch
    of every row). A single-cell method reads no k."""
    derived = set(grid.rules) | ({"batch_size"} if None in grid.batch_sizes else set())
    used = method.request_fields - ({"k"} if method.single_cell else set())
    return method.reads_count or bool(derived & used)


def plan_sweep(data: SweepData, request: SweepRequest, preview: bool = False) -> SweepPlan:
    """Check the request against the data (everything that needs no private value first), release the row
    count where a private cell reads it — once per dataset, reused by every later run — and set the grids and
    δ for it; build the guarantee every run is of. `preview`: release nothing; plan with the exact n, for the
    data holder to read (the plan never trains)."""
    unit = privacy_unit(data, request)
    if problems := [p for name in request.method for p in get_method(name).problems(data, request)]:
        raise problems[0].error()
    target = request.risk_target
    if target is not None:  # provisionally at the Gaussian curve's ε: the count's share, the rule's values
        request = replace(request, epsilon=(target.gaussian_epsilon(request.planning_delta),), max_tpr=None)
    grid, privacy, options = request.grid(), request.privacy(), request.options()
    resolve_device(options.device)
    return_large_buffers()  # the accountants' FFTs and the projection's blocks: no heap high-water mark
    for epsilon in grid.epsilons:
        validate_budget(epsilon, privacy.delta)
    # refuses what it
    provisional = guarantee_of(unit, request.accountant, privacy.delta, upstream_releases(data))
    # cannot account before any private value is drawn
    check_data(data, grid, options)
    readers = frozenset(name for name in grid.methods if reads_count(get_method(name), grid))
    count = count_for(
        data.units.bounded_by(unit).count,
        grid.epsilons if readers else [],
        privacy.delta,
        privacy.noise,
        privacy.n_public,
        privacy.count_share,
        preview,
        unit.counted,
        rows_named(data, unit),
    )
    delta = request.planning_delta if request.delta_given else default_delta(count)
    guarantee = replace(provisional, count=count, delta=delta, delta_by_count=not request.delta_given)
    request = replace(request, delta=delta)
    grids = ruled_grids(grid.for_rows(count), len(data.pca.components_))
    if target is not None:
        request = replace(request, epsilon=(risk_epsilon(target, grids, guarantee, readers, request),))
        grid = request.grid()
        grids = ruled_grids(grid.for_rows(count), len(data.pca.components_))
    for planned in grids:
        check_sweep(data, planned, replace(privacy, delta=delta), count, set_by_rule=grid.rules)
    return SweepPlan(grids, guarantee, readers, request, preview, target)


def guarantee_of(
    unit: PrivacyUnit,
    accountant: str,
    delta: float,
    upstream: tuple[DPRelease, ...] = (),
    count: RowCount | None = None,
) -> Guarantee:
    """The guarantee runs are of — a sweep's, a fine-tuning's, an audit's file —, made here only: it refuses a
    composition it cannot account (a release per row under a person unit, a relation the accountants do
    not)."""
    return Guarantee(unit=unit, count=count, accountant=accountant, delta=delta, upstream=upstream)


def upstream_releases(data: SweepData) -> tuple[DPRelease, ...]:
    """The DP releases of private data the runs rest on: the DP-GSD that chose the public data, the
    projection's (a DP-PCA of the private rows)."""
    choice = () if data.public_choice is None else (data.public_choice,)
    return choice + (() if data.pca.release_ is None else (data.pca.release_,))


def rows_named(data: SweepData, unit: PrivacyUnit) -> str:
    """A digest of the training rows' content and units, which names the count released for them: the rows a
    file records by its own digest, rows given as arrays by their bytes."""
    named = data.rows_named or data_digest(data.private_x, data.private_y, data.units.ids)
    return f"{named}|{unit.kind}"


def risk_epsilon(
    target: RiskTarget,
    grids: list[SweepGrid],
    guarantee: Guarantee,
    readers: frozenset[str],
    request: SweepRequest,
) -> float:
    """The largest ε at which every planned head's whole tree (its noise calibrated for that ε, the count's
    release where it reads the count, every upstream release) meets the risk target
    (privacy/risk_target.py)."""
    shapes = set()  # each method's problems() refused one that draws its own mechanism
    count = guarantee.count
    if count is None:
        raise ValueError("a risk target is calibrated for the count the plan released")
    for grid in grids:
        for (method, _, _), config in grid.points(request.shard):
            head = guarantee.for_head(method in readers)
            shapes.add((*get_method(method).mechanism(config, head.count or count), head))
    start = grids[0].epsilons[0]

    def meets(rate: float, steps: int, head: Guarantee) -> float:
        def event_at(epsilon: float) -> Event:
            return head.compose(dp_sgd_event(head.noise(epsilon, rate, steps), rate, steps))

        return target.largest_epsilon(event_at, start)

    return min(meets(*shape) for shape in sorted(shapes, key=lambda shape: shape[:2]))


def privacy_unit(data: SweepData, request: SweepRequest) -> PrivacyUnit:
    """The unit the request asks for on these rows; with the person, every method, the engine and an accounted
    selection's val rows must bound one."""
    unit = PrivacyUnit.resolve(request.privacy_unit, data.units.named_by)
    if unit.is_person:
        if unbounded := [name for name in request.method if not get_method(name).can(Cannot.BOUND_A_PERSON)]:
            raise UsageError(
                f"method '{unbounded[0]}' bounds one row's contribution, not one person's: with the "
                f"person as the privacy unit train {', '.join(bounding_persons())}",
                hint=f"or pass {param('privacy_unit')} row (the guarantee is then per row)",
            )
        val_units = data.val_units
        if request.selection is not None and val_units is not None and not val_units.grouped:
            raise UsageError(
                f"{param('select')} accounted with the person as the privacy unit weights each val row "
                f"by its person: {param('groups_val')} must name the val rows' persons"
            )
        if request.engine != "fast":
            raise UsageError(
                f"{param('engine')} {request.engine} clips rows, not persons: with the person as the "
                "privacy unit use the fast engine"
            )
    return unit


def check_data(data: SweepData, grid: SweepGrid, options: SweepOptions) -> None:
    """Everything that must hold before any private value is drawn: the k asked for, the rows (finite, two
    classes, disjoint from the public ones), each method's data, an accounted selection's inputs."""
    check_grid(grid, data.pca, data.num_classes)
    if not all_finite(data.private_x):  # a block at a time: no N × D mask, rows on disk stay there
        raise DataError(f"NaN or Inf in the features of {data.name}")
    if len(np.unique(data.private_y)) < 2:
        raise DataError(f"{data.name} holds one class; a classifier needs at least two")
    if data.private_index is not None and data.public_index is not None:
        require_disjoint(data.private_index, data.public_index, data.source or "the private data")
    for name in grid.methods:
        get_method(name).check_data(data, options.of(get_method(name)))
    if options.selection is not None:  # how many configurations a cell holds does not depend on n
        for ruled in ruled_grids(grid.for_rows(RowCount.exact(1)), len(data.pca.components_)):
            check_accounted(data, ruled, options)


def check_sweep(
    data: SweepData,
    grid: SweepGrid,
    privacy: PrivacySettings,
    count: RowCount,
    set_by_rule: frozenset[str] = frozenset(),
) -> None:
    """What the grid the rule set for the released count must satisfy (`set_by_rule`: the fields the default
    rule set, which a refusal names as the rule's, not the user's); no refusal shows the count."""
    check_grid(grid, data.pca, data.num_classes)
    for epsilon in grid.epsilons:
        validate_budget(epsilon, privacy.delta, count)
    for lr in grid.lrs:
        check_lr(lr, "lr" in set_by_rule)


def check_accounted(data: SweepData, grid: SweepGrid, options: SweepOptions) -> None:
    selecting = {
        cell[0] for cell in grid.cells() if options.selects_privately(cell[2], grid.configs(cell[0]))
    }
    if not selecting:
        raise UsageError(
            f"{param('select')} accounted needs a private cell with at least two configurations to "
            "choose from; a single configuration needs no selection"
        )
    for name in sorted(selecting):
        if reason := get_method(name).cannot.get(Cannot.BE_SELECTED):
            raise UsageError(f"{param('select')} accounted cannot wrap method '{name}': {reason}")
    if options.shard != (0, 1):
        raise UsageError(
            f"{param('select')} accounted sees every configuration of a cell: it cannot be sharded"
        )
    if data.val_x is None:
        raise UsageError(f"{param('select')} accounted scores its trials on the val split, which is missing")
