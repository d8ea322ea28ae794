"""Embedding a split source into an embeddings artifact: batched extraction, one split at a time."""

from __future__ import annotations

from typing import Callable

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.backbones import Embedder
from pillar_cli.data import Dataset, SplitPlan
from pillar_cli.data.splits import SPLIT_ROLES


def extract(embedder: Embedder, dataset: Dataset, ids: np.ndarray, batch_size: int,
            on_batch: Callable[[int], None] = lambda n: None) -> np.ndarray:
    """Features of the rows `ids`, read one batch at a time (lazy sources never load a whole split)."""
    features = np.empty((len(ids), embedder.feature_dim), dtype=np.float32)
    for start in range(0, len(ids), batch_size):
        batch, _ = dataset.rows(ids[start:start + batch_size])
        features[start:start + len(batch)] = embedder(batch)
        on_batch(len(batch))
    return features


def embed_splits(dataset: Dataset, splits: dict[str, np.ndarray], embedder: Embedder, plan: SplitPlan,
                 batch_size: int, on_batch: Callable[[int], None] = lambda n: None) -> Artifact:
    """Features per split; the public split is stored without labels (it is the unlabelled public set)."""
    arrays: dict[str, np.ndarray] = {}
    for name, ids in splits.items():
        arrays[f"splits/{name}/features"] = extract(embedder, dataset, ids, batch_size, on_batch)
        arrays[f"splits/{name}/index"] = ids
        if name != "public":
            arrays[f"splits/{name}/labels"] = dataset.labels_of(ids)
    attrs = {
        **embedder.info(),
        "source": dataset.name,
        "source_fingerprint": dataset.fingerprint,
        "class_names": dataset.class_names,
        "splits": list(splits),
        "split_roles": {name: SPLIT_ROLES[name] for name in splits},
        "split_seed": plan.seed,
        "public_fraction": plan.public_fraction,
        "val_fraction": plan.val_fraction,
        "test_from": "source test part" if dataset.test_inputs is not None else f"seeded fraction {plan.test_fraction}",
        "feature_dim": embedder.feature_dim,
    }
    return Artifact("embeddings", arrays, attrs)
