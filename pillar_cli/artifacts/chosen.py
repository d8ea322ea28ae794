"""How a (method, k, ε) cell's run was chosen: what a model's selection and a release's statement record."""

from __future__ import annotations

from enum import Enum


class ChosenBy(str, Enum):
    """What chose a cell's run (the value is what tables and statements print)."""

    ACCOUNTED = "in ε"  # a private selection released it; ε covers the choice
    VAL = "on val, outside ε"  # the best mean val accuracy: private labels, not accounted
    NOTHING = "none (one configuration)"  # one configuration: nothing was chosen

    def __str__(self) -> str:
        return self.value
