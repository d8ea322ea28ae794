"""An independent check of a model's ledger: every run's ε recomputed from its stored DP event tree by
Google's dp-accounting alone, through its public API (the tree converted to its own events; PLD, or its RDP
accountant for a tree with a private selection in it), not by the accountant that calibrated it; and the steps
each engine counted as it ran them against the steps it accounted.

One step has no dp-accounting counterpart: a selection's trial runs ONE of its candidates, whose RDP is at
most the largest candidate's at every order. Where one candidate's curve is the largest at every order, the
trial is accounted as that candidate (public API only); otherwise the pointwise maximum goes through
dp-accounting's repeat-and-select formula, the one private function the check calls, and the check says so.

A run is flagged when the recomputed ε exceeds the claimed one by more than 1 % (the accountants' own
discretisation and conversion errors stay below that), or when it ran more steps than it accounted.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.classifier import classifier_of
from pillar_cli.artifacts.model import UNCOUNTED, run_rows
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.statement import Statement
from pillar_cli.privacy import Event, GaussianEvent, event_from_dict
from pillar_cli.privacy.events import (
    ComposedEvent,
    OneOfEvent,
    RepeatAndSelectEvent,
    is_private,
    pure_parts,
    to_dp_accounting,
)
from pillar_cli.privacy.rdp import ORDERS
from pillar_cli.privacy.relation import ACCOUNTED

TOLERANCE = 0.01


@dataclass(frozen=True)
class LedgerCheck:
    run: int
    method: str
    k: str
    epsilon_target: float
    seed: int | None  # None: a release, which does not record it
    epsilon_claimed: float
    epsilon_recomputed: float
    how: str  # which accountant recomputed it
    steps_accounted: int
    steps_run: int  # -1: the method does not count its steps

    @property
    def problems(self) -> list[str]:
        found = []
        if self.epsilon_recomputed > self.epsilon_claimed * (1 + TOLERANCE):
            found.append(f"ε recomputed {self.epsilon_recomputed:.4g} > claimed {self.epsilon_claimed:.4g}")
        if self.steps_run != UNCOUNTED and self.steps_run > self.steps_accounted:
            found.append(f"ran {self.steps_run} steps, accounted {self.steps_accounted}")
        return found


def check_ledger(model: Artifact) -> list[LedgerCheck]:
    """Every run of a model artifact, its claim against an independent recomputation; a classifier (a
    release): its statement's ε, from the event tree it holds and nothing else."""
    if model.kind == "classifier":
        classifier = classifier_of(model)
        return [_check_statement(classifier.privacy, classifier.head)]
    delta_total = ModelRecord.of(model).delta_total
    checks = []
    for i, row in enumerate(run_rows(model)):
        key = row.key
        recomputed, how = recomputed_epsilon(event_from_dict(row.event), delta_total)
        checks.append(
            LedgerCheck(
                i,
                key.method,
                "full" if key.k is None else str(key.k),
                key.epsilon,
                key.seed,
                row.epsilon_spent,
                recomputed,
                how,
                key.steps,
                UNCOUNTED if row.steps_run is None else row.steps_run,
            )
        )
    return checks


def _check_statement(statement: Statement, head: dict) -> LedgerCheck:
    recomputed, how = recomputed_epsilon(statement.event, statement.delta)
    return LedgerCheck(
        0,
        head["method"],
        str(head["k"]),
        statement.epsilon_target,
        None,
        statement.epsilon,
        recomputed,
        how,
        statement.steps,
        UNCOUNTED,
    )


def recomputed_epsilon(event: Event, delta: float) -> tuple[float, str]:
    """(ε at δ of the tree by dp-accounting, which of its accountants)."""
    if not is_private(event):
        return math.inf, "non-private"
    pure, event = pure_parts(event)
    plus = f" + {pure:g} (exponential mechanism, pure ε)" if pure else ""
    if event is None:
        return pure, "exponential mechanism: pure ε"
    if _holds(event, RepeatAndSelectEvent):
        trial = _dominant(event)
        if trial is None:
            return (
                pure + _rdp_with_maximum(event, delta),
                "dp-accounting RDP, repeat-and-select of the candidates' maximum" + plus,
            )
        return pure + _rdp(to_dp_accounting(trial), delta), "dp-accounting RDP, repeat-and-select" + plus
    return pure + _pld(event, delta), "dp-accounting PLD" + plus


def _holds(event: Event, kind: type) -> bool:
    return isinstance(event, kind) or any(_holds(child, kind) for child in _children(event))


def _children(event: Event) -> tuple[Event, ...]:
    if isinstance(event, (ComposedEvent, OneOfEvent)):
        return event.events
    inner = getattr(event, "event", None)
    return () if inner is None else (inner,)


def _dominant(event: Event) -> Event | None:
    """The tree with every one-of node replaced by its candidate whose RDP is the largest at every order; None
    when some one-of node has no such candidate."""
    if isinstance(event, OneOfEvent):
        curves = [_curve(to_dp_accounting(candidate)) for candidate in event.events]
        top = np.max(curves, axis=0)
        return next(
            (candidate for candidate, curve in zip(event.events, curves) if np.array_equal(curve, top)), None
        )
    children = _children(event)
    if not children:
        return event
    replaced = [_dominant(child) for child in children]
    if any(child is None for child in replaced):
        return None
    if isinstance(event, ComposedEvent):
        return ComposedEvent(tuple(replaced))
    return dataclasses.replace(event, event=replaced[0])


def _rdp_accountant(event):
    """dp-accounting's RDP accountant at ORDERS, `event` (one of its own) composed."""
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(list(ORDERS), ACCOUNTED.to_dp_accounting())
    accountant.compose(event)
    return accountant


def _curve(event) -> np.ndarray:
    return np.asarray(_rdp_accountant(event).rdp)


def _rdp(event, delta: float) -> float:
    return float(_rdp_accountant(event).get_epsilon(delta))


def _rdp_with_maximum(event: Event, delta: float) -> float:
    """RDP of the tree with each one-of node's curve the pointwise maximum of its candidates' (dp-accounting's
    repeat-and-select formula applied to it)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    def curve(node: Event) -> np.ndarray:
        if isinstance(node, OneOfEvent):
            return np.max([curve(candidate) for candidate in node.events], axis=0)
        if isinstance(node, ComposedEvent):
            return np.sum([curve(part) for part in node.events], axis=0)
        if isinstance(node, RepeatAndSelectEvent):
            return rdp._compute_rdp_repeat_and_select(list(ORDERS), curve(node.event), node.mean, node.shape)
        return _curve(to_dp_accounting(node))

    return float(rdp.compute_epsilon(list(ORDERS), curve(event), delta)[0])


@functools.lru_cache(maxsize=1024)
def _pld(event: Event, delta: float) -> float:
    from dp_accounting import pld

    # a finer grid for one release, whose ε is read off a single discretised loss distribution
    interval = 1e-5 if isinstance(event, GaussianEvent) else 2e-5
    accountant = pld.PLDAccountant(ACCOUNTED.to_dp_accounting(), value_discretization_interval=interval)
    accountant.compose(to_dp_accounting(event))
    return float(accountant.get_epsilon(delta))
