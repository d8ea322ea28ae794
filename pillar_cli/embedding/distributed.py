"""Embedding under torchrun: every rank embeds its shard (positions rank, rank + n, ...) into its own file,
then rank 0 merges the files once all ranks are done. Ranks meet over gloo, only at that barrier: no tensors
cross ranks, and NCCL would refuse two ranks on one GPU.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pillar_cli.artifacts import Artifact, read
from pillar_cli.embedding.shards import SHARD_KIND, merge_shards
from pillar_cli.lazy import torch


def torchrun_shard() -> tuple[int, int] | None:
    """(rank, world size) when launched by torchrun with more than one process, else None."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    return (int(os.environ["RANK"]), world) if world > 1 else None


def rank_file(out: Path, rank: int, world: int) -> Path:
    return out.with_name(f"{out.name}.shard{rank}-of-{world}")


def rank_device(device: str, distributed: tuple[int, int] | None) -> str:
    """Under torchrun, `auto` means this rank's GPU: LOCAL_RANK modulo the GPUs there are (ranks share GPUs
    when there are more ranks than GPUs)."""
    if distributed is None or device != "auto" or not torch.cuda.is_available():
        return device
    return f"cuda:{int(os.environ.get('LOCAL_RANK', '0')) % torch.cuda.device_count()}"


def merge_ranks(out: Path, rank: int, world: int, write: Callable[[Path, Artifact], object]) -> bool:
    """Wait for every rank's shard file; rank 0 merges them with `write(out, merged)` and removes them.
    True on rank 0."""
    import torch.distributed as dist

    dist.init_process_group("gloo")
    try:
        dist.barrier()
        if rank == 0:
            files = [rank_file(out, r, world) for r in range(world)]
            write(out, merge_shards([read(path, SHARD_KIND) for path in files]))
            for path in files:
                path.unlink()
        dist.barrier()
    finally:
        dist.destroy_process_group()
    return rank == 0
