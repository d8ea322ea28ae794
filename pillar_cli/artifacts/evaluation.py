"""The evaluation artifact: one row per (method, k, ε) with its metrics over seeds, the title and notes that
qualify them, and the ledger of the models evaluated — one typed record, read and written here (what `pillar
report` compares across datasets and an export's model card quotes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from pillar_cli.artifacts.core import Artifact
from pillar_cli.artifacts.model_record import ModelLedger


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """`rows`: one per (method, k, ε) cell, its metrics' means and stds over seeds; `overlap_rows`: evaluated rows
    that were training or validation rows, allowed explicitly (0 otherwise); `public`: what the models' projection
    was fitted on (Table 2 of the paper compares public data); `feature_dim`: the dimension of the features the
    models read (Example 1 of the paper varies it)."""

    rows: list[dict]
    split: str
    title: str
    notes: list[str]
    dataset: str | None
    n_private: int
    private_fraction: float
    ledger: ModelLedger  # how the models' runs were accounted (accountant, δ, clip)
    overlap_rows: int = 0
    public: dict | None = None
    feature_dim: int | None = None
    path: str | None = None  # the file it was read from (None before it is written)

    @classmethod
    def of(cls, artifact: Artifact) -> Evaluation:
        attrs = artifact.attrs
        values = {f.name: attrs[f.name] for f in fields(cls) if f.name in attrs}
        return cls(**values | {"ledger": ModelLedger.from_attrs(attrs["ledger"])}, path=artifact.path)

    def artifact(self) -> Artifact:
        attrs = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "path"} | {
            "ledger": asdict(self.ledger)}
        for optional in ("public", "feature_dim"):
            if attrs[optional] is None:
                del attrs[optional]
        return Artifact("evaluation", {"accuracy_mean": np.array([r["accuracy_mean"] for r in self.rows])}, attrs)

    @property
    def public_share(self) -> float | None:
        """The share of the source's train part the projection's rows were drawn at, where recorded."""
        return (self.public or {}).get("public_share")

    def cell(self, method: str, k: int | str, epsilon: float) -> dict | None:
        """The row of the (method, k, ε) cell, or None if the evaluation holds none."""
        return next((row for row in self.rows if row["method"] == method and row["k"] == k
                     and float(row["epsilon"]) == epsilon), None)
