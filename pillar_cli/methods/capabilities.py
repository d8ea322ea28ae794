"""What a method declares of itself for the plan to check: what it reads besides the private rows, what it
cannot be put through, and the problems it reports (methods/base.py Method.problems)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from pillar_cli.errors import UsageError


class Reads(Enum):
    """What a method may read besides the private rows: the entry points load it only for such a method."""

    PUBLIC_ROWS = "the public split"
    LABELLED_PUBLIC_ROWS = "a labelled public split"


class Cannot(Enum):
    """What a method may be unable to be put through; it says why in its `cannot`."""

    BE_SELECTED = "be wrapped in an accounted selection or calibrated to a risk target"  # it selects itself
    BE_AUDITED = "be audited with input canaries"
    BOUND_A_PERSON = "bound one person's contribution"


@dataclass(frozen=True)
class Problem:
    """Why a method cannot run on some rows under a request, as its refusal says it (opacus'
    ModuleValidator.validate lists a model's problems alike)."""

    message: str
    hint: str | None = None

    def error(self) -> UsageError:
        return UsageError(self.message, hint=self.hint)


class Asked(Protocol):
    """What of a sweep's request (methods/request.py SweepRequest) a method's problems read."""

    @property
    def ema(self) -> Any: ...
    @property
    def risk_target(self) -> Any: ...
