"""Scale-out of `embed`: shards embedded by separate processes (torchrun ranks or separate jobs), then merged.

Shard i of n takes positions i, i+n, i+2n, ... of every split and stores those positions with its rows. Unlike
a DistributedSampler, nothing is padded, and merging writes each row at its recorded position: a row can
neither be duplicated nor dropped, which the merge checks (each position covered exactly once). Shards must
come from one command (same options but the shard); the merged artifact has the unsharded artifact's content
hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.embedding.extraction import options_digest
from pillar_cli.errors import ArtifactError

SHARD_KIND = "embedding-shard"
PER_ROW_FIELDS = ("features", "index", "labels", "persons")


@dataclass(frozen=True, kw_only=True)
class ShardHeader:
    """What a shard artifact records of its place: shard `index` of `count`, the command it belongs to (`key`)
    and the size of every split of the whole run."""

    index: int
    count: int
    key: str
    split_sizes: dict[str, int]

    @classmethod
    def of(cls, artifact: Artifact) -> ShardHeader:
        attrs = artifact.attrs
        index, count = (int(n) for n in attrs["shard"])
        return cls(
            index=index,
            count=count,
            key=str(attrs["shard_key"]),
            split_sizes={name: int(size) for name, size in attrs["split_sizes"].items()},
        )

    def to_attrs(self) -> dict[str, Any]:
        return {
            "shard": [self.index, self.count],
            "shard_key": self.key,
            "split_sizes": dict(self.split_sizes),
        }

    @property
    def name(self) -> str:
        return f"{self.index}/{self.count}"


def shard_splits(splits: dict[str, np.ndarray], shard: tuple[int, int]) -> dict[str, np.ndarray]:
    """The positions of every split that shard (i, n) embeds."""
    index, count = shard
    return {name: np.arange(index, len(ids), count) for name, ids in splits.items()}


def shard_key(options: dict[str, Any]) -> str:
    """Identifies the command a shard belongs to: its options without the shard and the output path."""
    return options_digest({k: v for k, v in options.items() if k not in ("shard", "out")})


def as_shard(
    artifact: Artifact,
    shard: tuple[int, int],
    positions: dict[str, np.ndarray],
    sizes: dict[str, int],
    key: str,
) -> Artifact:
    """The embeddings of one shard's positions, as a shard artifact (which no stage but the merge reads)."""
    arrays = dict(artifact.arrays) | {f"splits/{name}/positions": p for name, p in positions.items()}
    header = ShardHeader(index=shard[0], count=shard[1], key=key, split_sizes=sizes)
    return Artifact(SHARD_KIND, arrays, dict(artifact.attrs) | header.to_attrs())


def merge_shards(shards: list[Artifact]) -> Artifact:
    """One embeddings artifact from all n shards of one command, each row at its position."""
    first, headers = shards[0], [ShardHeader.of(shard) for shard in shards]
    for shard, header in zip(shards[1:], headers[1:]):
        if header.key != headers[0].key:
            raise ArtifactError(
                f"{shard.path} was embedded with other options than {first.path}; shards of one command only"
            )
    count = headers[0].count
    seen = sorted(header.index for header in headers)
    if any(header.count != count for header in headers) or len(set(seen)) != len(seen):
        raise ArtifactError(
            f"shards {', '.join(header.name for header in headers)} overlap: each shard i/n must be "
            "given once"
        )
    missing = sorted(set(range(count)) - set(seen))
    if missing:
        raise ArtifactError(f"{len(missing)} of {count} shards missing (e.g. shard {missing[0]}/{count})")
    arrays: dict[str, np.ndarray] = {}
    for split, size in headers[0].split_sizes.items():
        covered = np.zeros(size, int)
        for shard in shards:
            covered[shard.array(f"splits/{split}/positions")] += 1
        if not (covered == 1).all():
            raise ArtifactError(
                f"split '{split}': {int((covered != 1).sum())} rows are not covered exactly once"
            )
        for field in PER_ROW_FIELDS:
            name = f"splits/{split}/{field}"
            if name in first.arrays:
                arrays[name] = _scatter(shards, split, field, size)
    attrs = {k: v for k, v in first.attrs.items() if k not in headers[0].to_attrs()}
    return Artifact("embeddings", arrays, attrs)


def _scatter(shards: list[Artifact], split: str, field: str, size: int) -> np.ndarray:
    sample = shards[0].array(f"splits/{split}/{field}")
    merged = np.empty((size, *sample.shape[1:]), sample.dtype)
    for shard in shards:
        merged[shard.array(f"splits/{split}/positions")] = shard.array(f"splits/{split}/{field}")
    return merged
