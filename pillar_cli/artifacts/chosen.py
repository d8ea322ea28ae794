"""How a (method, k, ε) cell's run was chosen: what a model's selection and a release's statement record."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from pillar_cli.privacy.basis import ChosenBy


@dataclass(frozen=True, kw_only=True)
class SelectedCell:
    """One (method, k, ε) cell of a model's selection: the runs reported for it (one per seed), the
    hyper-parameters they share (a list where the seeds' choices differ), their mean val accuracy and what
    chose them."""

    method: str
    k: int | str  # "full": all features
    epsilon: float
    run_ids: list[int]
    selected: ChosenBy
    lr: Any = None
    steps: Any = None
    batch_size: Any = None
    ridge: Any = None
    val_accuracy_mean: float = math.nan

    @classmethod
    def from_attrs(cls, record: dict) -> SelectedCell:
        return cls(
            **{
                **{name: record[name] for name in cls.__dataclass_fields__ if name in record},
                "run_ids": [int(i) for i in record["run_ids"]],
                "selected": ChosenBy(record["selected"]),
            }
        )

    def to_attrs(self) -> dict:
        return {**asdict(self), "selected": self.selected.value}

    @property
    def name(self) -> str:
        """How a command names the cell (release --cell)."""
        return f"method={self.method},k={self.k},eps={self.epsilon:g}"

    def matches(self, wanted: dict) -> bool:
        """Whether `wanted` (some of method, k, eps) names this cell."""
        return (
            wanted.get("method", self.method) == self.method
            and wanted.get("k", str(self.k)) == str(self.k)
            and math.isclose(wanted.get("eps", self.epsilon), self.epsilon, rel_tol=1e-9)
        )
