"""The evaluation artifact: one row per (method, k, ε) with its metrics over seeds, the title and notes that
qualify them, and the ledger of the models evaluated — one typed record, read and written here (what `pillar
report` compares across datasets and an export's model card quotes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from pillar_cli.artifacts.core import Artifact
from pillar_cli.privacy.count import RowCount


@dataclass(frozen=True, kw_only=True)
class Accounting:
    """How the evaluated models' runs were accounted, as tables and figures qualify them: the accountant, the
    δ their ε holds at (their guarantee's total) and the clip norm."""

    accountant: str
    delta: float
    clip: float


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """`rows`: one per (method, k, ε) cell, its metrics' means and stds over seeds; `count`: the training row
    count the models' runs read as it was released (noisy, or declared public; None where no mechanism
    released one: an evaluation, which is what gets published, never copies the exact n of a model's working
    file); `overlap_rows`: evaluated rows that were training or validation rows, allowed explicitly (0
    otherwise); `public`: what the models' projection was fitted on (Table 2 of the paper compares public
    data); `feature_dim`: the dimension of the features the models read (Example 1 of the paper varies it).
    Files written before `count` stated the exact n as `n_private`, which is no longer read."""

    rows: list[dict]
    split: str
    title: str
    notes: list[str]
    dataset: str | None
    count: RowCount | None = None
    private_fraction: float
    ledger: Accounting  # how the models' runs were accounted (accountant, δ, clip)
    overlap_rows: int = 0
    public: dict | None = None
    feature_dim: int | None = None
    path: str | None = None  # the file it was read from (None before it is written)

    @classmethod
    def of(cls, artifact: Artifact) -> Evaluation:
        attrs = artifact.attrs
        values = {f.name: attrs[f.name] for f in fields(cls) if f.name in attrs}
        count = attrs.get("count")
        ledger = attrs["ledger"]
        accounting = Accounting(
            accountant=ledger["accountant"], delta=float(ledger["delta"]), clip=float(ledger["clip"])
        )
        return cls(
            **values | {"ledger": accounting, "count": None if count is None else RowCount.from_dict(count)},
            path=artifact.path,
        )

    def artifact(self) -> Artifact:
        attrs = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "path"} | {
            "ledger": asdict(self.ledger),
            "count": None if self.count is None else self.count.to_dict(),
        }
        for optional in ("public", "feature_dim", "count"):
            if attrs[optional] is None:
                del attrs[optional]
        return Artifact(
            "evaluation", {"accuracy_mean": np.array([r["accuracy_mean"] for r in self.rows])}, attrs
        )

    @property
    def private_rows(self) -> str:
        return rows_as_released(self.count)

    @property
    def public_share(self) -> float | None:
        """The share of the source's train part the projection's rows were drawn at, where recorded."""
        return (self.public or {}).get("public_share")

    def cell(self, method: str, k: int | str, epsilon: float) -> dict | None:
        """The row of the (method, k, ε) cell, or None if the evaluation holds none."""
        return next(
            (
                row
                for row in self.rows
                if row["method"] == method and row["k"] == k and float(row["epsilon"]) == epsilon
            ),
            None,
        )


def rows_as_released(count: RowCount | None) -> str:
    """The training rows as tables and figures state them: the count as it was released, never an exact n."""
    if count is None:
        return "private rows: no count released"
    if count.noisy:
        return f"private rows ñ = {count.value:,.1f} (released with noise)"
    return f"private rows n = {count.value:,.0f} (declared public)"
