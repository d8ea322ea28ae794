"""Semi-private learning of disjunctions (§3.1 of Hu, Pinto, Yang, Sanyal): the exponential mechanism on the
private empirical error, over two hypothesis classes.

- `em-components`: the disjunctions that are unions of the PUBLIC split's connected components (`fit-pca
  --components`): 2^Z candidates, Z the number of components, whatever the dimension d.
- `em-disjunctions`: the baseline the theorem improves on, every disjunction of at most L variables
  (`--literals`): Σ_{j≤L} C(d, j) candidates, which grows with d.

A candidate's score is minus its number of errors on the private rows: one row changes it by at most 1 (Δ =
1), so one exponential mechanism is ε-DP (δ = 0). Errors are counted for millions of candidates from bitsets
(one bit per private row and variable: a disjunction's positive rows are the OR of its variables' bits),
scored in chunks and sampled by report-noisy-max with Gumbel noise. The chosen disjunction is a linear head on
the raw 0/1 rows: class 1 scores Σ_{i∈S} x_i, class 0 the constant ½.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Cannot, Cell, Method, Run, each_run, option
from pillar_cli.methods.data import SweepData
from pillar_cli.privacy import ExponentialEvent
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.exponential import exponential_mechanism
from pillar_cli.privacy.relation import Relation
from pillar_cli.projection.components import PublicComponents, check_boolean_rows

SENSITIVITY = 1.0
# scoring is ~0.1 µs per candidate and private row / 64: beyond this, minutes per seed
MAX_CANDIDATES = 2 * 10**8
CHUNK_BYTES = 2**26


@dataclass(frozen=True)
class DisjunctionOptions:
    literals: int = option(3, "the most variables of a candidate disjunction.")

    def __post_init__(self) -> None:
        if self.literals < 1:
            raise UsageError(f"{param('literals')} must be at least 1 (got {self.literals})")


class ExponentialMechanismDisjunctions(Method):
    """One exponential mechanism per seed over a finite class of disjunctions on the raw 0/1 rows."""

    projects = False
    single_cell = True
    cannot = MappingProxyType(
        {
            Cannot.BE_SELECTED: "one exponential mechanism per seed: there is nothing to select among",
            Cannot.BE_AUDITED: "its head is a disjunction chosen by the exponential mechanism, not "
            "trained by gradients",
            Cannot.BOUND_A_PERSON: "it bounds one row's contribution",
        }
    )
    reads_count = False  # its score counts errors: nothing in it is a function of n
    request_fields = frozenset()  # one mechanism per seed: no k, lr, steps or batch
    mechanism_description = (
        "the exponential mechanism over the candidates, score minus the errors on the private "
        "rows (sensitivity 1): pure ε-DP"
    )
    relations = (Relation.ADD_OR_REMOVE_ONE, Relation.REPLACE_ONE)

    def configs(self, *, seeds: list[int], **_: object) -> list[RunConfig]:
        """One mechanism per seed."""
        return [RunConfig.one_release(seed) for seed in seeds]

    def mechanism(self, config: RunConfig, count: RowCount) -> tuple[float, int]:
        return 1.0, 1

    def check_data(self, data: SweepData, options: DisjunctionOptions | None) -> None:
        if data.num_classes != 2:
            raise DataError(
                f"method '{self.name}' learns a disjunction: it needs two classes (found {data.num_classes})"
            )
        if np.any(data.pca.mean_ != 0) or np.any(data.pca.scale_ != 1):
            raise UsageError(
                f"method '{self.name}' reads the raw 0/1 rows, but the projection standardises them",
                hint=f"fit the public structure as components (fit-pca's {param('components', True)})",
            )
        check_boolean_rows(np.asarray(data.private_x), data.name)  # rows left on disk are read whole here
        if data.val_x is not None:
            check_boolean_rows(np.asarray(data.val_x), "the val split")
        self.candidate_count(data, options)

    def candidate_count(self, data: SweepData, options: DisjunctionOptions | None) -> int:
        raise NotImplementedError

    def candidates(self, cell: Cell) -> tuple[np.ndarray, Iterator[np.ndarray]]:
        """The variable groups candidates are unions of ((m, D) 0/1) and the candidates as chunks of (N, L)
        group indices, −1 padded."""
        raise NotImplementedError

    def train_cell(self, cell: Cell) -> list[Run]:
        event = ExponentialEvent(cell.own_budget())  # pure ε whatever the number of candidates
        spent = cell.spent_epsilon(event)
        return [
            each_run(cell, config, functools.partial(self._run, cell, config, event, spent))
            for config in cell.configs
        ]

    def _run(self, cell: Cell, config: RunConfig, event: ExponentialEvent, spent: float) -> Run:
        groups, chunks = self.candidates(cell)
        rows, labels = np.asarray(cell.data.private_x), cell.data.private_y
        counter = ErrorCounter(rows @ groups.T > 0, labels)
        kept: list[np.ndarray] = []

        def scores() -> Iterator[np.ndarray]:
            for chunk in chunks:
                kept.append(chunk)
                yield -counter.errors(chunk).astype(np.float64)

        rng = cell.randomness.child("exponential", config).numpy()
        chosen, _ = exponential_mechanism(scores(), event.epsilon, SENSITIVITY, rng)
        members = np.concatenate(kept)[chosen]
        variables = groups[members[members >= 0]].sum(axis=0) > 0
        return Run(head=disjunction_head(variables, steps_run=1), event=event, epsilon_spent=spent)

    def model_attrs(self, options: DisjunctionOptions | None) -> dict:
        return {
            "exponential_mechanism": {
                "methods": ["em-components", "em-disjunctions"],
                "score": "minus the errors on the private rows",
                "sensitivity": SENSITIVITY,
                "epsilon": "runs/event: one exponential mechanism at ε, δ = 0",
                **({} if options is None else {"literals": options.literals}),
            }
        }


def disjunction_head(variables: np.ndarray, steps_run: int | None = None) -> LinearHead:
    """The disjunction of `variables` ((D,) bool) as a two-class linear head: class 1 iff some variable is
    1."""
    weights = np.zeros((len(variables), 2), np.float32)
    weights[variables, 1] = 1.0
    return LinearHead(weights, np.array([0.5, 0.0], np.float32), steps_run)


class ErrorCounter:
    """Errors of disjunctions of variable groups on labelled rows, from one bitset per group."""

    def __init__(self, active: np.ndarray, labels: np.ndarray):
        # last row: padding, never active
        bits = _bitsets(np.vstack([active.T, np.zeros((1, len(labels)), bool)]))
        self.bits, self.padding = bits, len(bits) - 1
        masks = _bitsets(np.vstack([labels == 1, labels == 0]))
        self.positive, self.negative = masks[0], masks[1]

    def errors(self, members: np.ndarray) -> np.ndarray:
        """(N,) errors of the N disjunctions whose groups are the rows of `members` (−1 pads)."""
        covered = np.bitwise_or.reduce(self.bits[np.where(members >= 0, members, self.padding)], axis=1)
        missed = np.bitwise_count(~covered & self.positive).sum(axis=1, dtype=np.int64)
        false = np.bitwise_count(covered & self.negative).sum(axis=1, dtype=np.int64)
        return missed + false


def _bitsets(indicators: np.ndarray) -> np.ndarray:
    """(m, n) bool → (m, ⌈n/64⌉) uint64, bit j of row i set iff indicators[i, j]."""
    packed = np.packbits(indicators, axis=1, bitorder="little")
    padded = np.zeros((len(packed), -(-packed.shape[1] // 8) * 8), np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view(np.uint64)


def _combination_chunks(dim: int, literals: int, rows: int) -> Iterator[np.ndarray]:
    """Every set of at most `literals` of `dim` variables, in chunks of at most `rows` (−1 padded to
    `literals`)."""
    for size in range(literals + 1):
        combinations = itertools.combinations(range(dim), size)
        while True:
            flat = np.fromiter(itertools.chain.from_iterable(itertools.islice(combinations, rows)), np.int64)
            if size and not len(flat):
                break
            count = len(flat) // size if size else 1
            chunk = np.full((count, literals), -1, np.int64)
            chunk[:, :size] = flat.reshape(count, size)
            yield chunk
            if not size or count < rows:
                break


def _subset_chunks(groups: int, rows: int) -> Iterator[np.ndarray]:
    """Every subset of `groups` groups (bit i of the subset's number: group i), in chunks of at most
    `rows`."""
    positions = np.arange(max(groups, 1))
    for start in range(0, 2**groups, rows):
        masks = np.arange(start, min(start + rows, 2**groups), dtype=np.int64)
        yield np.where((masks[:, None] >> positions) & 1, positions, -1)


def _rows_per_chunk(width: int, n: int) -> int:
    return max(1, CHUNK_BYTES // (max(width, 1) * 8 * (-(-n // 64) + 1)))


class ComponentDisjunctions(ExponentialMechanismDisjunctions):
    name = "em-components"
    description = (
        "exponential mechanism over the unions of the PUBLIC split's connected components (2^Z "
        "candidates; fit-pca --components)"
    )

    def candidate_count(self, data: SweepData, options: DisjunctionOptions | None) -> int:
        if not isinstance(data.pca, PublicComponents):
            raise UsageError(
                f"method '{self.name}' needs the public component graph as its projection",
                hint=f"fit it on the public split with fit-pca's {param('components', True)}",
            )
        count = 2 ** len(data.pca.components_)
        if count > MAX_CANDIDATES:
            raise DataError(
                f"the public rows split the variables into {len(data.pca.components_)} components: "
                f"2^{len(data.pca.components_)} candidates are too many to score",
                hint="more public rows join components; or use a denser public split",
            )
        return count

    def candidates(self, cell: Cell) -> tuple[np.ndarray, Iterator[np.ndarray]]:
        groups = cell.data.pca.components_
        return groups, _subset_chunks(len(groups), _rows_per_chunk(len(groups), len(cell.data.private_x)))


class AllDisjunctions(ExponentialMechanismDisjunctions):
    name = "em-disjunctions"
    options = DisjunctionOptions
    description = (
        "baseline: exponential mechanism over every disjunction of at most --literals variables "
        "(Σ C(d, j) candidates)"
    )
    needs_public_basis = False

    def candidate_count(self, data: SweepData, options: DisjunctionOptions | None) -> int:
        literals = (options or DisjunctionOptions()).literals
        dim = data.private_x.shape[1]
        count = sum(math.comb(dim, j) for j in range(literals + 1))
        if count > MAX_CANDIDATES:
            raise UsageError(
                f"{count:.3g} disjunctions of at most {literals} of {dim} variables are too many to "
                f"score (limit {MAX_CANDIDATES:.0e})",
                hint=f"use a smaller {param('literals')}",
            )
        return count

    def candidates(self, cell: Cell) -> tuple[np.ndarray, Iterator[np.ndarray]]:
        literals, dim = cell.options.literals, cell.data.private_x.shape[1]
        return np.eye(dim), _combination_chunks(
            dim, literals, _rows_per_chunk(literals, len(cell.data.private_x))
        )


EM_COMPONENTS = ComponentDisjunctions()
EM_DISJUNCTIONS = AllDisjunctions()
