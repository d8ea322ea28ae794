"""The constraints of every field of a sweep request (methods/request.py), declared once, as scikit-learn
declares an estimator's `_parameter_constraints`: each field's checker refuses a value in one line naming the
field. What needs the data (k against the projection, δ against the released count, a method's own data
checks) is the plan's (methods/plan.py)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping

from pillar_cli.errors import (
    UsageError,
    check_fraction,
    check_non_negative,
    check_one_of,
    check_positive,
    check_probability,
    param,
)
from pillar_cli.methods.accounted import AccountedSelection
from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.grid import AUTO
from pillar_cli.privacy.accountants import get_accountant
from pillar_cli.privacy.invariants import check_epsilon
from pillar_cli.privacy.unit import UNITS

ENGINES = ("fast", "opacus")
VAL_ROLES = ("auto", "train", "hold-out")
SELECTIONS = ("val", "accounted")
MAX_LR = 1e4  # above it a clipped step moves a logit by more than float32 resolves next to the others

Check = Callable[[str, object], None]


def check_lr(lr: float, set_by_rule: bool) -> None:
    """A positive learning rate no larger than MAX_LR; one the default rule set is said to be the rule's."""
    check_positive("lr", lr)
    if lr > MAX_LR and set_by_rule:  # not the user's value: say who set it
        raise UsageError(
            f"the default rule sets {param('lr')} {lr:g} for these rows and ε, above {MAX_LR:,.0f}: "
            "steps that large leave the head's float32 logits no precision",
            hint=f"give {param('lr')} (and {param('steps')}), or a smaller {param('epsilon')}",
        )
    if lr > MAX_LR:
        raise UsageError(
            f"{param('lr')} must be at most {MAX_LR:,.0f} (got {lr:g}): steps that large leave "
            "the head's float32 logits no precision"
        )


def whole(minimum: int) -> Check:
    """A whole number (not a bool) at least `minimum`."""

    def check(name: str, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
            raise UsageError(f"{param(name)} takes whole numbers ≥ {minimum} (got {value!r})")

    return check


def optional(check: Check) -> Check:
    """None, or a value `check` accepts."""
    return lambda name, value: None if value is None else check(name, value)


def each(check: Check, word: bool = False) -> Check:
    """A list field: every value passes `check`; with `word`, the whole list may be 'auto' (the default
    rule)."""

    def check_all(name: str, values: object) -> None:
        if word and isinstance(values, str):
            if values != AUTO:
                raise UsageError(f"{param(name)} takes a list of values or '{AUTO}'; got '{values}'")
            return
        for value in values:  # type: ignore[attr-defined]  # the request made every list a tuple
            check(name, value)

    return check_all


def _selection(name: str, value: object) -> None:
    """An accounted selection's settings, or one of SELECTIONS."""
    if not isinstance(value, AccountedSelection):
        check_one_of(SELECTIONS)(name, value)


def _delta(name: str, value: object) -> None:
    """A finite number below 1/2 (checked against the count by the plan), or auto."""
    if isinstance(value, str) and value != AUTO:
        raise UsageError(f"{param(name)} takes a number or '{AUTO}'; got '{value}'")
    if not isinstance(value, str) and not math.isfinite(float(value)):  # type: ignore[arg-type]
        raise UsageError(f"{param(name)} must be a finite number (got {value})")
    if not isinstance(value, str) and 0.5 <= float(value) < 1:  # type: ignore[arg-type]
        # refused before the count is read: no dataset of two rows or more has 1/n above it
        raise UsageError(f"{param(name)} {value:g} is not below 1/n for any dataset of two rows or more")


def _shard(name: str, value: object) -> None:
    """(i, n): shard i of n, 0 ≤ i < n."""
    index, count = value if isinstance(value, tuple) and len(value) == 2 else (None, None)
    if not (isinstance(index, int) and isinstance(count, int) and 0 <= index < count):
        raise UsageError(f"{param(name)} must be i/n with 0 ≤ i < n (got {index}/{count})")


def _kind(kind: type, said: str) -> Check:
    def check(name: str, value: object) -> None:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise UsageError(f"{param(name)} must be {said} (got {value!r})")

    return check


def _method(name: str, value: object) -> None:
    get_method(str(value))  # a registered method, else one line listing them


def _accountant(name: str, value: object) -> None:
    get_accountant(str(value))


def _epsilon(name: str, value: object) -> None:
    check_epsilon(float(value))  # type: ignore[arg-type]


def _lr(name: str, value: object) -> None:
    check_lr(float(value), set_by_rule=False)  # type: ignore[arg-type]


def _risk(name: str, value: object) -> None:
    """A number; its range against at_fpr is the risk target's (privacy/risk_target.py)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise UsageError(f"{param(name)} must be a number (got {value!r})")


CONSTRAINTS: dict[str, Check] = {
    "method": each(_method),
    "k": each(optional(whole(1)), word=True),
    "epsilon": optional(each(_epsilon)),
    "delta": _delta,
    "accountant": _accountant,
    "clip": check_positive,  # type: ignore[dict-item]
    "lr": each(_lr, word=True),
    "steps": optional(each(whole(1), word=True)),
    "batch_size": each(optional(whole(1))),
    "seed": each(whole(0)),
    "momentum": check_fraction,  # type: ignore[dict-item]
    "weight_decay": check_non_negative,  # type: ignore[dict-item]
    "ridge": each(optional(check_positive)),  # type: ignore[arg-type]
    "ema": check_fraction,  # type: ignore[dict-item]
    "select": _selection,
    "val": check_one_of(VAL_ROLES),
    "engine": check_one_of(ENGINES),
    "device": _kind(str, "a device name (auto, cpu, cuda, cuda:1, …)"),
    "shard": _shard,
    "method_options": _kind(Mapping, "a mapping of method names to their options"),
    "noise_seed": optional(whole(0)),
    "n_public": _kind(bool, "True or False"),
    "count_share": check_probability,  # type: ignore[dict-item]
    "privacy_unit": check_one_of(UNITS),
    "max_tpr": _risk,
    "at_fpr": check_probability,  # type: ignore[dict-item]
}  # every field of SweepRequest, each with its checker
