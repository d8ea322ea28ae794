"""Embedding on a Ray cluster with Ray Data (`pillar embed --engine ray`): one streaming pipeline over the
rows of every split. Ray tasks on CPU workers decode the images; a pool of actors, each holding the backbone
(on a GPU each where the cluster has GPUs), embeds them; the features stream back to this process, which
writes each row at its position as a one-process embed does and then writes the same artifact. Ray runs a task
again where its worker or node dies, so a row may arrive twice: the first features of each row are kept, and a
run that leaves a row without any is refused. Every node needs pillar installed and the source readable at the
same path; nothing is written on the nodes.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.names import sibling
from pillar_cli.embedding.extraction import FeatureStore, assembled
from pillar_cli.embedding.job import EmbeddingJob
from pillar_cli.embedding.request import EmbedRequest
from pillar_cli.errors import DataError, UsageError, first_line, param

CONNECT_SECONDS = 5.0  # how long a cluster's address may take to answer before it is called unreachable
_JOBS: dict[str, _WorkerJob] = {}  # per worker process: a request's job, read once


def embed_on_ray(
    request: EmbedRequest,
    job: EmbeddingJob,
    options: dict[str, Any],
    out: Path,
    save: Callable[[Artifact], Artifact],
    *,
    address: str | None,
    actors: int | None,
    device: str,
    batch_size: int,
    on_rows: Callable[[int], None] = lambda rows: None,
) -> Artifact:
    """Embed every split of `job` (the driver's reading of `request`) on the cluster at `address` (None: a Ray
    instance this process started or starts on this machine) with `actors` backbones (None: one a GPU of the
    cluster, else one a CPU but one, left to decoding) and `save` the artifact. `on_rows` hears each batch's
    rows."""
    ray = _ray()
    if not ray.is_initialized():
        _connect(ray, address)
    resources = ray.cluster_resources()
    gpus, cpus = int(resources.get("GPU", 0)), int(resources.get("CPU", 1))
    actors = actors or gpus or max(1, cpus - 1)
    if not gpus and actors >= cpus:
        raise UsageError(
            f"{param('actors')} {actors} leaves none of the cluster's {cpus} CPUs to decode images",
            hint=f"pass at most {param('actors')} {max(1, cpus - 1)}",
        )
    needs = {"num_gpus": 1} if gpus else {"num_cpus": 1}
    recipe, dim = ray.get(ray.remote(**needs)(_recipe).remote(request, job.dataset.inputs.shape[1:], device))
    sizes = {name: len(ids) for name, ids in job.splits.items()}
    pipeline = _pipeline(request, job, actors, needs, device, batch_size)
    store = FeatureStore(sibling(out, ".partial"), options, sizes, dim, resume=False)
    try:
        write_batches(pipeline.iter_batches(batch_size=None, batch_format="numpy"), store, sizes, on_rows)
        artifact = save(assembled(job.dataset, job.splits, recipe, dim, job.plan, store))
    finally:
        store.finish()
    return artifact


def write_batches(
    batches: Iterable[dict[str, np.ndarray]],
    store: FeatureStore,
    sizes: dict[str, int],
    on_rows: Callable[[int], None] = lambda rows: None,
) -> None:
    """Each batch's features (`id`: row numbers over the splits in order, `features`, `error`) at their rows'
    positions. A row that arrives again (from a task Ray ran again) keeps its first features; a batch that
    carries a read error, or a run that leaves a row without features, is refused."""
    names, starts = list(sizes), _starts(sizes.values())
    seen = np.zeros(starts[-1], dtype=bool)
    for batch in batches:
        if batch["error"][0]:
            raise DataError(*str(batch["error"][0]).split("\n", 1))
        fresh = ~seen[batch["id"]]
        order = np.argsort(batch["id"][fresh], kind="stable")
        ids, features = batch["id"][fresh][order], batch["features"][fresh][order]
        seen[ids] = True
        split_of = np.searchsorted(starts, ids, side="right") - 1
        for split in np.unique(split_of):
            rows = split_of == split
            store.write_at(names[split], ids[rows] - starts[split], features[rows])
        on_rows(len(ids))
    if not seen.all():
        raise DataError(f"Ray returned no features for {int((~seen).sum())} of {len(seen)} rows")


def _pipeline(
    request: EmbedRequest, job: EmbeddingJob, actors: int, needs: dict[str, int], device: str, batch_size: int
):
    """Row numbers (split after split) → decoded images (tasks, a CPU each) → features (the actor pool)."""
    import ray.data

    shape = job.dataset.inputs.shape[1:]
    context = ray.data.DataContext.get_current()
    for name in (
        "ray",
        "ray.data",
    ):  # the run reports through pillar's progress line, errors as pillar's one line
        logging.getLogger(name).setLevel(logging.CRITICAL)
    context.enable_progress_bars = context.print_on_execution_start = False
    return (
        ray.data.range(sum(map(len, job.splits.values())))
        # a decoding task reserves the memory of its batch's images: Ray Data fuses operators whose resources
        # agree, and these stay tasks of their own, on the CPUs the actors leave
        .map_batches(
            _decoder(request, job.dataset.fingerprint),
            num_cpus=1,
            memory=batch_size * int(np.prod(shape)) + 2**20,
            batch_size=batch_size,
        )
        .map_batches(
            _backbone(request, shape, device),
            compute=ray.data.ActorPoolStrategy(size=actors),
            batch_size=batch_size,
            **needs,
        )
    )


@dataclass(frozen=True)
class _WorkerJob:
    """What a worker reads from a request: the job (the source read on its node, split as the driver split
    it), the source row of each row number, where each split's row numbers start, and the fingerprint of what
    it read."""

    job: EmbeddingJob
    order: np.ndarray
    starts: np.ndarray
    fingerprint: str

    def images(self, numbers: np.ndarray) -> np.ndarray:
        """The images of consecutive row numbers, read a split at a time (a split's source rows are sorted,
        and a source reads sorted rows of one part: train or test)."""
        split_of = np.searchsorted(self.starts, numbers, side="right") - 1
        pieces = np.split(numbers, np.flatnonzero(np.diff(split_of)) + 1)
        return np.concatenate([self.job.dataset.rows(self.order[piece])[0] for piece in pieces])


def _job(request: EmbedRequest) -> _WorkerJob:
    """The worker's reading of `request`, once per worker process."""
    key = repr(request)
    if key not in _JOBS:
        job = EmbeddingJob.of(request.dataset(), request.plan)
        _JOBS[key] = _WorkerJob(
            job,
            np.concatenate(list(job.splits.values())),
            _starts(map(len, job.splits.values())),
            job.dataset.fingerprint,
        )
    return _JOBS[key]


def _starts(sizes: Iterable[int]) -> np.ndarray:
    """Where each split's row numbers start (and, last, how many rows there are): rows are numbered split
    after split, in the job's order, alike on the driver and on the workers."""
    return np.cumsum([0, *sizes])


def _decoder(
    request: EmbedRequest, fingerprint: str
) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """The task that decodes a batch of row numbers into images; a file that cannot be read, or a source that
    reads otherwise on the worker's node than here (`fingerprint`: the driver's), comes back as its error
    (message, hint). The request travels inside the function (as the actor's does inside its class)."""

    def decoded(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        worker = _job(request)
        try:
            if worker.fingerprint != fingerprint:
                raise DataError(
                    f"the source reads otherwise on a Ray worker's node than on this machine (fingerprint "
                    f"{worker.fingerprint[:12]}, here {fingerprint[:12]})",
                    hint="every node must read the same source at the same path",
                )
            images = np.ascontiguousarray(worker.images(batch["id"]))
        except DataError as err:
            text = err.message if err.hint is None else f"{err.message}\n{err.hint}"
            return {
                "id": batch["id"][:1],
                "images": np.zeros((1, *worker.job.dataset.inputs.shape[1:]), np.uint8),
                "error": np.array([text], dtype=object),
            }
        return {"id": batch["id"], "images": images, "error": np.full(len(images), "", dtype=object)}

    return decoded


def _backbone(request: EmbedRequest, shape: tuple[int, ...], device: str) -> type:
    """The actor class holding the backbone (images → features). What it builds travels inside the class: the
    actor takes no arguments, which Ray would keep in its object store to restart it (and warn about on
    stderr)."""

    class Backbone:
        def __init__(self):
            self.embedder = request.embedder(shape, device)

        def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            features = (
                np.zeros((len(batch["id"]), self.embedder.feature_dim), np.float32)
                if batch["error"][0]
                else self.embedder(batch["images"])
            )
            return {"id": batch["id"], "features": features, "error": batch["error"]}

    return Backbone


def _recipe(request: EmbedRequest, shape: tuple[int, ...], device: str) -> tuple[dict[str, Any], int]:
    """What the artifact records of the backbone as the actors build it (its precision and runtime follow the
    device), and its feature dimension."""
    embedder = request.embedder(shape, device)
    return embedder.info(), embedder.feature_dim


def _connect(ray: Any, address: str | None) -> None:
    """Join the cluster at `address` (or RAY_ADDRESS), or start Ray on this machine. An address nothing
    answers at is one line within CONNECT_SECONDS (Ray itself retries for minutes), as are an address that is
    not one, ray:// without Ray's client and a start that fails."""
    given = address or os.environ.get("RAY_ADDRESS") or None
    if given is not None and given != "auto":
        host, port = _host_port(given)
        if given.startswith("ray://") and importlib.util.find_spec("grpc") is None:
            raise UsageError(
                f"{given} is a Ray client address, which needs Ray's client", hint="pip install 'ray[client]'"
            )
        try:
            socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
        except OSError as err:
            raise UsageError(
                f"no Ray cluster answers at {given} ({err.strerror or err}, within {CONNECT_SECONDS:g} s)",
                hint=f"start Ray's head node there, or leave out {param('address')} and RAY_ADDRESS "
                "to start Ray on this machine",
            ) from None
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    except Exception as err:  # Ray raises many kinds (ConnectionError, RuntimeError, its own)
        where = f"join the cluster at {given}" if given else "start on this machine"
        raise UsageError(f"Ray could not {where}: {first_line(err)}") from None


def _host_port(address: str) -> tuple[str, int]:
    """(host, port) of a Ray address: HOST:PORT or ray://HOST:PORT (the client's default port 10001)."""
    rest = address.removeprefix("ray://")
    host, _, port = rest.rpartition(":")
    if not host:
        host, port = rest, "10001" if address.startswith("ray://") else ""
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c in host for c in "/ "):
        raise UsageError(
            f"'{address}' is not a Ray address: give HOST:PORT (a head node's GCS port, e.g. 10.0.0.5:6379), "
            "ray://HOST:PORT or auto"
        )
    return host.strip("[]"), int(port)


def _ray():
    try:
        import ray
    except ImportError as err:
        raise UsageError(
            "embedding on Ray needs the ray package", hint="pip install 'pillar-cli[ray]'"
        ) from err
    return ray
