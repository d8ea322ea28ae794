"""Hyper-parameter sweeps over (method, k, ε) × (lr, steps, batch size, seed) and the choice of a run per
cell.

A sweep runs a plan (methods/plan.py: the checks, the row count every value derived from n reads, the grids).
Every run is calibrated for its sample rate and step count, with the count's release where it reads it,
trained, and its spent ε recomputed from its DP event tree. By default the choice per (method, k, ε) uses the
val split's labels, which the ε does NOT account for; every artifact that holds such a selection says so. With
an `AccountedSelection` each private cell instead runs the private selection of methods/accounted.py and its ε
covers the choice. A sweep selected on val can be cut into shards (`shard=(i, n)`) whose runs are merged and
selected later from their stored run tables.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.model import RunKey, RunRecord, model_artifact
from pillar_cli.artifacts.model_record import ModelLedger, ModelRecord
from pillar_cli.errors import PrivacyError
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.accounted import select_privately
from pillar_cli.methods.base import Cell, SweptRun
from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.methods.grid import SweepGrid
from pillar_cli.methods.plan import SweepPlan, plan_sweep
from pillar_cli.methods.request import SweepOptions, SweepRequest
from pillar_cli.methods.selection import select_on_val, selection_note
from pillar_cli.privacy import ExponentialEvent, gaussian_segments, get_accountant
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.file_guarantee import ReleasedHead, whole_file
from pillar_cli.privacy.rdp import ORDERS
from pillar_cli.privacy.release import DPRelease
from pillar_cli.projection import PublicPCA
from pillar_cli.randomness import NOT_PRIVATE_NOTE


@dataclass(kw_only=True)
class SweepResult:
    plan: SweepPlan  # what was run: the grids, the guarantee (the count, upstream releases), readers
    runs: list[SweptRun] = field(default_factory=list)
    bases: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    accounted: bool = False  # private cells hold the runs their accounted selections released
    selection_ledger: list[dict] = field(default_factory=list)  # each accounted selection as DP events

    @property
    def releases(self) -> tuple[DPRelease, ...]:
        """The upstream DP releases composed into every run (a DP-GSD choice's, a DP-PCA's)."""
        return self.plan.guarantee.upstream

    @property
    def count(self) -> RowCount:
        """The row count the plan released (or took as exact)."""
        return self.plan.count

    @property
    def count_read(self) -> bool:
        """Some private run's ε covers the count's release."""
        return self.count.noisy and any(
            math.isfinite(run.key.epsilon) and run.key.method in self.plan.readers for run in self.runs
        )

    @property
    def selection(self) -> list[SelectedCell]:
        return select_on_val([r.key for r in self.runs], [r.val_accuracy for r in self.runs], self.accounted)


def run_sweep(
    data: SweepData, request: SweepRequest, on_steps: Callable[[int], None] = lambda done: None
) -> SweepResult:
    """Plan the sweep (methods/plan.py: checks, the row count, the grids), then run the plan."""
    return run_plan(data, plan_sweep(data, request), on_steps)


def run_plan(
    data: SweepData, plan: SweepPlan, on_steps: Callable[[int], None] = lambda done: None
) -> SweepResult:
    """Train the plan's grid points (those of its shard) on the projected private split; score them on val.
    `on_steps(n)` hears of n more DP-SGD steps done (of the plan's `total_steps()`)."""
    if plan.preview:
        raise ValueError(
            "a preview plan (made from the exact number of rows) cannot train: plan the sweep "
            "without preview=True"
        )
    result = SweepResult(plan=plan, accounted=plan.options.selection is not None)
    for planned in plan.grids:
        _run_grid(data, planned, on_steps, result)
    return result


def _run_grid(data: SweepData, grid: SweepGrid, on_steps: Callable[[int], None], result: SweepResult) -> None:
    """Train one grid's points into `result` (its runs, bases and accounted selections)."""
    plan = result.plan
    privacy, options = plan.privacy, plan.options
    by_cell: dict[tuple, list[RunConfig]] = defaultdict(list)
    for point, config in grid.points(options.shard):
        by_cell[point].append(config)
    for (name, k, epsilon), configs in by_cell.items():
        method = get_method(name)
        mapping = method.linear_map(data.pca)
        projected = k if method.projects else None
        if projected is not None:
            result.bases[(name, k)] = mapping.basis(k)
        val_z = None if data.val_x is None else method.features(mapping, data.val_x, k)
        cell = Cell(
            data,
            mapping,
            k,
            epsilon,
            configs,
            privacy,
            options.engine,
            options.device,
            options.of(method),
            on_steps,
            guarantee=(rested := plan.guarantee.for_head(name in plan.readers)),
        )
        if (
            options.selection is not None
            and options.selects_privately(epsilon, configs)
            and val_z is not None
            and data.val_y is not None
        ):  # the plan refused a selection without val rows
            released, records = select_privately(method, cell, val_z, data.val_y, options.selection)
            result.selection_ledger.extend(records)
            chosen = [(r.config, r.run, r.score) for r in released]
        else:
            chosen = [
                (
                    config,
                    run,
                    math.nan if val_z is None or data.val_y is None else run.head.accuracy(val_z, data.val_y),
                )
                for config, run in zip(configs, method.train_cell(cell))
            ]
        for config, run, val_accuracy in chosen:
            # recomputed from the whole tree: the count and upstream releases
            spent = cell.spent_epsilon(run.event)
            # one Gaussian segment: composes with its stream
            joint = len(gaussian_segments(run.event) or ()) == 1
            pure = isinstance(cell.compose(run.event), ExponentialEvent)  # no Gaussian part: no δ
            draws = ReleasedHead(
                run.event,
                spent,
                run.batches and (name, k, epsilon, *run.batches),
                joint,
                0.0 if pure else rested.delta_total,
            )
            if spent > epsilon * (1 + 1e-9) and rested.private:
                raise PrivacyError(
                    f"run spent ε = {spent:.4g} above its target {epsilon:g}; refusing to write it"
                )
            key = RunKey.of(name, k, epsilon, config)
            result.runs.append(
                SweptRun.of(
                    run,
                    key=key,
                    event=cell.compose(run.event),
                    epsilon_spent=spent,
                    val_accuracy=val_accuracy,
                    released=draws,
                )
            )


def sweep_artifact(
    result: SweepResult,
    pca: PublicPCA,
    privacy: PrivacySettings,
    num_classes: int,
    n_private: int,
    options: SweepOptions = SweepOptions(),
    rows: dict[str, np.ndarray] | None = None,
    person_ids: dict[str, np.ndarray] | None = None,
    **recorded: Any,
) -> Artifact:
    """Every run's head and ledger row, the bases that map heads back to the standardised space, the
    selection, and the plan's guarantee, stored as it is; `rows`: the source row ids trained on (`private`)
    and selected on (`val`), so that no stage tests on them; `person_ids`: the persons of those rows where
    they name them (and `recorded["persons"]` where they came from), so that no stage tests on a training
    person's other rows; `recorded`: what the model records of its inputs, as `ModelRecord` fields (the public
    data and a GSD's choice of it; how the features were made; the source; the private fraction)."""
    runs, guarantee = (
        result.runs,
        result.plan.guarantee,
    )  # each run's event and ε composed through it (_run_grid)
    records = [
        RunRecord(
            key=r.key,
            event=r.event.to_dict(),
            epsilon_spent=r.epsilon_spent,
            val_accuracy=r.val_accuracy,
            row_normalised=get_method(r.key.method).normalises_rows,
            steps_run=r.head.steps_run,
            weights=r.head.weights,
            bias=r.head.bias,
            **RunRecord.headline_of(r.released.event),
        )
        for r in runs
    ]
    methods = [get_method(name) for name in sorted({r.key.method for r in runs})]
    noise = _noise(privacy, guarantee.upstream)
    record = ModelRecord(
        num_classes=num_classes,
        n_private=n_private,
        guarantee=guarantee,
        row_l2_normalised=pca.second_moment,
        shard=options.shard,
        feature_space="standardised with the public mean/scale; full-space weights = bases/<method>/<k> · "
        "weights",
        ledger=ModelLedger(
            clip=privacy.clip,
            accountant_description=get_accountant(privacy.accountant).description,
            epsilon_is_upper_bound=get_accountant(privacy.accountant).upper_bound,
            protected_split="private",
            per_run=PER_RUN,
        ),
        max_epsilon_spent=max((r.epsilon_spent for r in runs), default=0.0),
        mechanisms={method.name: method.mechanism_words(privacy.unit) for method in methods},
        method_notes={
            key: value for method in methods for key, value in method.model_attrs(options.of(method)).items()
        },
        selection=result.selection,
        selection_mode="accounted" if result.accounted else "val",
        selection_note=selection_note(result.selection, result.accounted),
        risk_target=result.plan.risk_target,  # what every run's ε was calibrated to
        count_read_by=tuple(sorted(result.plan.readers)),
        noise=noise,
        whole_file=_whole_file(result, privacy, noise["reproducible"]),
        selection_ledger=_selection_ledger(result) if result.accounted else None,
        **recorded,
    )
    artifact = model_artifact(records, result.bases, pca.mean_, pca.scale_, record)
    artifact.arrays.update({f"rows/{name}": ids for name, ids in (rows or {}).items()})
    artifact.arrays.update({f"persons/{name}": ids for name, ids in (person_ids or {}).items()})
    return artifact


PER_RUN = (
    "runs/event (the DP event tree, JSON) and runs/epsilon_spent, the accountant's ε of it; "
    "runs/noise_multiplier and runs/sample_rate for tables; runs/steps_run: the steps the engine counted as "
    "it ran them (-1: not counted)"
)


def _selection_ledger(result: SweepResult) -> dict:
    return {
        "theorem": "Papernot & Steinke (ICLR 2022): Theorem 2 (truncated negative binomial) or 6 (Poisson) "
        "on one trial's RDP (largest candidate's training + score), converted to (ε, δ) as dp-accounting",
        "orders": ORDERS.tolist(),
        "selections": result.selection_ledger,
    }


def _noise(privacy: PrivacySettings, releases: tuple[DPRelease, ...]) -> dict:
    """Where the file's noise came from; a release the runs rest on (the DP-GSD that chose the public data, a
    DP-PCA) with reproducible noise makes the whole file reproducible too."""
    for release in releases:
        if not privacy.noise.reproducible and release.reproducible:
            return {
                "source": "seeded",
                "reproducible": True,
                "note": f"{NOT_PRIVATE_NOTE} (a DP release the runs rest on: {release.mechanism})",
            }
    return privacy.noise.describe()


def _whole_file(result: SweepResult, privacy: PrivacySettings, reproducible: bool) -> dict:
    """What the file is and the guarantee of all its heads together, composed with the count and the upstream
    releases as each run is."""
    scored = any(not math.isnan(run.val_accuracy) for run in result.runs)
    guarantee = result.plan.guarantee
    count = guarantee.count.segments if result.count_read and guarantee.count is not None else ()
    upstream = tuple(release.event for release in guarantee.upstream)
    return whole_file(
        [run.released for run in result.runs],
        guarantee.delta_total,
        reproducible,
        scored,
        count,
        upstream,
        noisy_scores=result.accounted,
    )
