"""The evaluation artifact: one row per (method, k, ε) with its metrics over seeds, the title and notes that
qualify them, and the ledger of the models evaluated (what `pillar report` compares across datasets)."""

from __future__ import annotations

import numpy as np

from pillar_cli.artifacts.core import Artifact


def evaluation_artifact(rows: list[dict], split: str, title: str, notes: list[str], dataset: str | None,
                        n_private: int, private_fraction: float, ledger: dict, overlap: int = 0,
                        public: dict | None = None, feature_dim: int | None = None) -> Artifact:
    """`overlap`: evaluated rows that were training or validation rows, allowed explicitly (0 otherwise); `public`:
    what the models' projection was fitted on (Table 2 of the paper compares public data); `feature_dim`: the
    dimension of the features the models read (Example 1 of the paper varies it)."""
    return Artifact("evaluation", {"accuracy_mean": np.array([r["accuracy_mean"] for r in rows])},
                    {"rows": rows, "split": split, "title": title, "notes": notes, "dataset": dataset,
                     "n_private": n_private, "private_fraction": private_fraction, "ledger": ledger,
                     "overlap_rows": overlap, **({"public": public} if public is not None else {}),
                     **({"feature_dim": feature_dim} if feature_dim is not None else {})})
