"""Embedding on a Ray cluster (`pillar embed --engine ray`): the rows split into n shards as `--shard i/n` splits
them, each shard embedded by one Ray task (one GPU each where the cluster has GPUs: the images are decoded and
embedded on the node that runs it), its shard artifact handed back through Ray's object store, and the shards merged
as `--merge` merges them. A task whose worker dies is run again by Ray from the start of its shard, and the driver
keeps one result per shard: the merge then checks that every position of every split is covered exactly once. Every
node needs pillar installed and the source readable at the same path; nothing is written on the nodes but
scratch files.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from pillar_cli.artifacts import Artifact, read, write
from pillar_cli.embedding.job import EmbeddingJob
from pillar_cli.embedding.request import EmbedRequest
from pillar_cli.embedding.shards import SHARD_KIND, merge_shards
from pillar_cli.errors import UsageError

RETRIES = 3  # runs of a shard after the first, where its worker or node dies


def embed_on_ray(request: EmbedRequest, options: dict[str, Any], out: Path, save: Callable[[Artifact], Artifact], *,
                 address: str | None, tasks: int | None, device: str, batch_size: int,
                 on_shard: Callable[[int], None] = lambda rows: None) -> Artifact:
    """Embed every split on the cluster at `address` (None: a Ray instance this process started or starts on this
    machine) in `tasks` shards (None: one a GPU of the cluster, else one a CPU) and `save` the merged artifact.
    `on_shard` hears the rows of each shard as it arrives."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    gpus = int(ray.cluster_resources().get("GPU", 0))
    count = tasks or max(1, gpus or int(ray.cluster_resources().get("CPU", 1)))
    run = ray.remote(num_gpus=1 if gpus else 0, num_cpus=1, max_retries=RETRIES)(embed_shard)
    pending = [run.remote(request, options, (index, count), device, batch_size) for index in range(count)]
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.ray-", dir=out.parent) as scratch:
        files = []
        while pending:
            (done,), pending = ray.wait(pending, num_returns=1)
            index, rows, payload = ray.get(done)
            files.append(Path(scratch) / f"shard{index}-of-{count}.h5")
            files[-1].write_bytes(payload)
            on_shard(rows)
        return save(merge_shards([read(path, SHARD_KIND) for path in files]))


def embed_shard(request: EmbedRequest, options: dict[str, Any], shard: tuple[int, int], device: str,
                batch_size: int) -> tuple[int, int, bytes]:
    """(shard index, rows, the shard artifact's bytes): one shard embedded on the node that runs the task, the
    source read there."""
    job = EmbeddingJob.of(request.dataset(), request.plan, shard)
    embedder = request.embedder(job.dataset, device)
    with tempfile.TemporaryDirectory(prefix="pillar-ray-shard-") as scratch:
        target = Path(scratch) / "shard.h5"
        job.run(embedder, target, options, lambda artifact: write(target, artifact, config=options),
                batch_size=batch_size)
        return shard[0], sum(len(ids) for ids in job.rows.values()), target.read_bytes()


def _ray():
    try:
        import ray
    except ImportError as err:
        raise UsageError("embedding on Ray needs the ray package", hint="pip install 'pillar-cli[ray]'") from err
    return ray
