"""One embedding run: which rows of which split this process embeds (all of them, or one shard), and the
resumable extraction that turns them into an embeddings (or embedding-shard) artifact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.data import Dataset, SplitPlan, make_splits
from pillar_cli.embedding.extraction import embed_resumably
from pillar_cli.embedding.features import Embedder
from pillar_cli.embedding.shards import as_shard, shard_key, shard_splits


@dataclass(frozen=True)
class EmbeddingJob:
    """The keyed splits of a dataset and the positions of each that shard (i, n) embeds. What the embedder
    reads of the images (their size, where no size is given, and bit depth, where none is declared) is read
    off the first public row: nothing that shapes a release may depend on which private rows exist."""

    dataset: Dataset
    plan: SplitPlan
    shard: tuple[int, int]
    splits: dict[str, np.ndarray]
    positions: dict[str, np.ndarray]

    @classmethod
    def of(cls, dataset: Dataset, plan: SplitPlan, shard: tuple[int, int] = (0, 1)) -> EmbeddingJob:
        plan = plan.for_source(dataset)  # the public fraction set: persons make it one to ask for
        splits = make_splits(dataset, plan)
        probe = splits["public"][0] if "public" in splits else 0
        return cls(dataset.read_as(int(probe)), plan, shard, splits, shard_splits(splits, shard))

    @property
    def rows(self) -> dict[str, np.ndarray]:
        """The source row ids this shard embeds, per split."""
        return {name: ids[self.positions[name]] for name, ids in self.splits.items()}

    def run(
        self,
        embedder: Embedder,
        target: Path,
        options: dict[str, Any],
        save: Callable[[Artifact], Artifact],
        *,
        batch_size: int = 256,
        workers: int = 0,
        resume: bool = False,
        on_batch: Callable[[int], None] = lambda n: None,
    ) -> Artifact:
        """Embed this shard's rows, resumably (scratch file TARGET.partial), and `save` the artifact (a shard
        artifact for a shard of n > 1). `options` identify the run: a resumed run or a sibling shard must give
        the same."""
        sizes = {name: len(ids) for name, ids in self.splits.items()}

        def as_artifact(artifact: Artifact) -> Artifact:
            if self.shard[1] == 1:
                return save(artifact)
            return save(as_shard(artifact, self.shard, self.positions, sizes, shard_key(options)))

        return embed_resumably(
            target,
            options,
            self.dataset,
            self.rows,
            embedder,
            self.plan,
            batch_size,
            workers,
            resume,
            as_artifact,
            on_batch,
        )
