"""What a training method is, for a sweep: how it maps features to its k dimensions, which configurations it
runs, and how it trains one (method, k, ε) cell into heads, each with the DP event it spent.

A method is one module holding a `Method` subclass and its registration (catalog.py for the built-in methods,
a `pillar.methods` entry point for a plugin): it declares its options, its display family and what it reads,
and the sweep, the CLI, the reports and the audit never ask for a method by name.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

import numpy as np

from pillar_cli.artifacts.model import RunKey
from pillar_cli.artifacts.stored_rows import Rows
from pillar_cli.errors import param
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.capabilities import Asked, Cannot, Problem, Reads
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.privacy import Event, calibrate_noise, spent_epsilon
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.file_guarantee import ReleasedHead
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.relation import ROW_RELATIONS, Relation
from pillar_cli.privacy.unit import PrivacyUnit, Units
from pillar_cli.projection import LinearMap, PublicPCA, project
from pillar_cli.randomness import NoiseSource

Trained = TypeVar("Trained")  # what a method's training of one configuration returns
DEFAULT_STEPS = 500  # DP-SGD steps of a sweep that gives none


def option(default: Any, help: str) -> Any:
    """A field of a method's options dataclass: its default and the line `--help` shows for its flag
    (--<name with dashes>)."""
    return dataclasses.field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class OptionSpec:
    """One option of a method as a command shows it: the field, its type, default and help."""

    name: str
    type: type
    default: Any
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Cell:
    """One (method, k, ε) cell of a sweep and the configurations to train in it."""

    data: SweepData
    mapping: LinearMap
    k: int | None
    epsilon: float
    configs: list[RunConfig]
    privacy: PrivacySettings
    engine: str
    device: str
    options: Any = None  # the method's options (an instance of its `options` dataclass; None: it has none)
    on_steps: Callable[[int], None] = lambda n: None  # hears of steps done, summed over configurations
    # σ by (sample rate, steps) when a private selection sets it
    noise: Callable[[float, int], float] | None = None
    # the plan's, as this cell's heads rest on it (None: a run alone, as an audit
    guarantee: Guarantee | None = None
    # trains it: nothing upstream, the exact count)

    @property
    def rows(self) -> RowCount:
        """The count of units (rows, or persons) this cell's mechanisms read: the sweep's noisy count when the
        method reads one."""
        count = None if self.guarantee is None else self.guarantee.count
        return count or RowCount.exact(self.units.count, of=self.privacy.unit.counted)

    @functools.cached_property
    def units(self) -> Units:
        """The training rows' units as this cell's mechanisms bound them: the persons with the person as the
        privacy unit, else each row (Units.weights: each row's weight in a released sum)."""
        return self.data.units.bounded_by(self.privacy.unit)

    @property
    def randomness(self) -> NoiseSource:
        """The source of this cell's private draws: fresh OS entropy, or (experiments only) labelled by k and
        ε."""
        return self.privacy.noise.child(self.k, self.epsilon)

    def noise_multiplier(self, sample_rate: float, steps: int) -> float:
        """σ of a run with this sample rate and step count: calibrated to the cell's (ε, δ) by its accountant,
        or set by the selection the run is a trial of; 0 for ε = inf (non-private)."""
        if self.noise is not None:
            return self.noise(sample_rate, steps)
        if math.isinf(self.epsilon):
            return 0.0
        if self.guarantee is None:
            return calibrate_noise(
                self.privacy.accountant, self.epsilon, self.privacy.delta, sample_rate, steps
            )
        return self.guarantee.noise(self.epsilon, sample_rate, steps)

    def own_budget(self) -> float:
        """The ε a head's own pure-ε mechanism may spend: the cell's, less what the head rests on."""
        return self.epsilon if self.guarantee is None else self.guarantee.own_budget(self.epsilon)

    def compose(self, event: Event) -> Event:
        """A run's tree with everything it rests on: the row count it read and the upstream releases."""
        return event if self.guarantee is None else self.guarantee.compose(event)

    def spent_epsilon(self, event: Event) -> float:
        """A run's ε by the cell's accountant, everything it rests on composed in (at δ_total); NaN for a
        trial of a private selection, whose ε is the selection's."""
        if self.noise is not None:
            return math.nan
        if self.guarantee is None:
            return spent_epsilon(self.privacy.accountant, event, self.privacy.delta)
        return self.guarantee.epsilon(self.guarantee.compose(event))


@dataclass(frozen=True, kw_only=True)
class Run:
    """One head from training to the file: what a method's `train_cell` returns (head, event, ε, shared
    batches), which the sweep completes with its key, its val accuracy and how its draws compose with the
    file's other heads (`released`); artifacts.model.RunRecord is the same run as the file stores it."""

    head: LinearHead  # in the cell's feature space (k projected dimensions, or all standardised features)
    event: Event  # what the run's mechanisms were, as a DP event tree
    epsilon_spent: float
    # runs of a cell with the same key drew their Poisson batches together (None: own)
    batches: tuple | None = None
    key: RunKey | None = None  # set by the sweep: the run's cell and hyper-parameters
    val_accuracy: float = math.nan  # set by the sweep (NaN: no val split)
    released: ReleasedHead | None = None  # set by the sweep


@dataclass(frozen=True, kw_only=True)
class SweptRun(Run):
    """A run as the sweep completes it: its key, its val accuracy (NaN: no val split), how its draws compose
    with the file's other heads."""

    key: RunKey
    val_accuracy: float
    released: ReleasedHead

    @classmethod
    def of(
        cls,
        run: Run,
        *,
        key: RunKey,
        event: Event,
        epsilon_spent: float,
        val_accuracy: float,
        released: ReleasedHead,
    ) -> SweptRun:
        return cls(
            head=run.head,
            event=event,
            epsilon_spent=epsilon_spent,
            batches=run.batches,
            key=key,
            val_accuracy=val_accuracy,
            released=released,
        )


def head_rows(mapping: LinearMap, x: Rows, k: int | None, unit_rows: bool) -> np.ndarray:
    """Standardised, projected on k dimensions (None: all), scaled to unit norm when `unit_rows`."""
    rows = project(mapping, x, k)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12) if unit_rows else rows


class Method:
    """A training method's defaults: DP-SGD configurations over lr × steps × batch size × seed, k
    components."""

    name: str = ""
    description: str = ""
    family: str = ""  # the name the result tables give it (the paper's, where it has one); empty: its name
    family_unprojected: str | None = None  # the family of its runs at k = full, when that is another method's
    # its options: a frozen dataclass of `option(...)` fields, validated on creation
    options: type | None = None
    projects: bool = True  # heads live in the span of k basis vectors (recorded as bases/<method>/<k>)
    single_cell: bool = False  # one cell at k = full whatever k the sweep lists
    # what it reads besides the private rows, and what for (the refusal's words where it is not given)
    reads: Mapping[Reads, str] = MappingProxyType({})
    # what it cannot be put through, and why (the refusal's words); by default it bounds a row, not a person
    cannot: Mapping[Cannot, str] = MappingProxyType(
        {Cannot.BOUND_A_PERSON: "it bounds one row's contribution"}
    )
    # how it bounds one person's contribution, in words (where `cannot` holds no BOUND_A_PERSON)
    person_bound: str = ""
    needs_public_basis: bool = True  # its projection is fitted on public rows (jl's and dpsgd's are not)
    steps_rule: str | None = None  # a method with its own step count (default_steps) names it here
    normalises_rows: bool = False  # its head reads the k-dimensional rows scaled to unit norm
    averages_iterates: bool = False  # its DP-SGD engine can release a moving average of the iterates (ema)
    # it derives something from the number of private rows (a sampling rate, a scale)
    reads_count: bool = True
    # what its configurations read
    request_fields: frozenset[str] = frozenset({"k", "lr", "steps", "batch_size"})
    mechanism_description: str = "DP-SGD: Poisson sampling, per-row clipping to C, Gaussian noise σ·C"
    relations: tuple[Relation, ...] = ROW_RELATIONS  # the neighbouring relations its analysis holds under

    def mechanism_words(self, unit: PrivacyUnit) -> str:
        """Its mechanism in words with the unit: what it releases, its relation, how it bounds a person."""
        return unit.mechanism(self.mechanism_description, self.relations, self.person_bound or None)

    def can(self, what: Cannot) -> bool:
        return what not in self.cannot

    def problems(self, data: SweepData, request: Asked) -> list[Problem]:
        """Why it cannot run on these rows under this request, each as its refusal says it (none: it can),
        before anything private is drawn; what it reads of the rows' values is `check_data`'s, and whether it
        bounds the unit the plan resolves is the plan's (methods/plan.py privacy_unit)."""
        found = []
        if Reads.PUBLIC_ROWS in self.reads and data.public_x is None:
            found.append(
                Problem(f"method '{self.name}' needs the public split {self.reads[Reads.PUBLIC_ROWS]}")
            )
        if Reads.LABELLED_PUBLIC_ROWS in self.reads and data.public_labelled is None:
            found.append(
                Problem(
                    f"method '{self.name}' needs a labelled public split "
                    f"{self.reads[Reads.LABELLED_PUBLIC_ROWS]}",
                    f"pass {param('public_labelled')} FILE:SPLIT (a separately embedded labelled public set)",
                )
            )
        if request.ema and not self.averages_iterates:
            found.append(
                Problem(f"{param('ema')} averages DP-SGD iterates; method '{self.name}' has none to average")
            )
        # an accounted selection that wraps it is refused where the plan knows which cells select
        if not self.can(Cannot.BE_SELECTED) and request.risk_target is not None:
            found.append(
                Problem(
                    f"method '{self.name}' draws its own mechanism, which a risk target cannot calibrate",
                    f"give it {param('epsilon')} instead of {param('max_tpr')}",
                )
            )
        return found

    def family_of(self, k: int | None) -> str:
        """The table row a run at k (None: full) belongs to."""
        if k is None and self.family_unprojected:
            return self.family_unprojected
        return self.family or self.name

    def option_specs(self) -> list[OptionSpec]:
        """Its options as flags of train-private and keywords of the Python API."""
        if self.options is None:
            return []
        types = typing.get_type_hints(self.options)
        return [
            OptionSpec(f.name, types[f.name], f.default, f.metadata["help"])
            for f in dataclasses.fields(self.options)
        ]

    def options_or_defaults(self, given: Any) -> Any:
        """Its options as given, or (None) its defaults."""
        return self.make_options() if given is None else given

    def make_options(self, values: dict[str, Any] | None = None) -> Any:
        """Its options from values by field name (the missing ones at their defaults); None if it has none."""
        if self.options is None:
            return None
        names = {f.name for f in dataclasses.fields(self.options)}
        return self.options(**{key: value for key, value in (values or {}).items() if key in names})

    def linear_map(self, pca: PublicPCA) -> LinearMap:
        return pca

    def check_data(self, data: SweepData, options: Any) -> None:
        """Fail before any training if this method cannot read these rows (beyond what every method
        checks)."""

    def check_k(self, k: int, pca: PublicPCA, num_classes: int) -> None:
        """Fail before any training if this k cannot work."""
        if self.projects:
            self.linear_map(pca).basis(k)

    def configs(
        self,
        *,
        lrs: list[float],
        steps: list[int] | None,
        batch_sizes: list[int],
        seeds: list[int],
        momentum: float,
        weight_decay: float,
        ridges: tuple[float | None, ...],
        rows: float,
    ) -> list[RunConfig]:
        """The configurations of each of its cells, from a sweep request's fields (SweepGrid.configs passes
        them all by name; a method reads those it uses): steps None = its default, batch sizes for `rows`
        private rows."""
        return [
            RunConfig(lr, t, b, s, momentum, weight_decay)
            for lr, t, b, s in itertools.product(lrs, steps or [DEFAULT_STEPS], batch_sizes, seeds)
        ]

    def features(self, mapping: LinearMap, x: Rows, k: int | None) -> np.ndarray:
        """The rows the head reads: standardised, projected on k dimensions (when the method projects), and
        scaled to unit norm when the method normalises rows."""
        return head_rows(mapping, x, k if self.projects else None, self.normalises_rows)

    def mechanism(self, config: RunConfig, count: RowCount) -> tuple[float, int]:
        """(sample rate, steps) of the Gaussian mechanism a configuration runs, its rate read from the row
        count."""
        return count.sample_rate(config.batch_size), config.steps

    def default_steps(self, n: float) -> int | None:
        """The step count the method runs for a row count n when none is given (None: the sweep's --steps)."""
        return None

    def train_cell(self, cell: Cell) -> list[Run]:
        raise NotImplementedError

    def model_attrs(self, options: Any) -> dict:
        """What a model artifact holding this method's runs must state beyond DP-SGD's ledger."""
        return {}


def each_run(cell: Cell, config: RunConfig, train: Callable[[], Trained]) -> Trained:
    """`train()` for one configuration of a method that trains runs one by one, its steps then reported."""
    result = train()
    cell.on_steps(config.steps)
    return result
