"""Networks trained per (ε, seed) into one model artifact: DP fine-tuning of a pre-trained network
(`finetune`) or of a random one (`scratch`) on the private split, and non-private pre-training on a public
labelled split (`pretrain`), whose network a fine-tuning run may start from once it is shown to hold no
private row."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pillar_cli.artifacts import Artifact, Split, shared_rows
from pillar_cli.artifacts.model import RunKey, RunRecord
from pillar_cli.artifacts.model_record import ModelLedger, ModelRecord
from pillar_cli.artifacts.network import network_artifact
from pillar_cli.embedding.networks import (
    NetworkSpec,
    as_images,
    build_network,
    load_state,
    network_logits,
    pretrained_network,
    state_arrays,
)
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.finetune.training import FinetuneConfig, finetune
from pillar_cli.gsd.probes import stored_image_shape
from pillar_cli.lazy import torch
from pillar_cli.methods.plan import guarantee_of
from pillar_cli.privacy import event_from_dict, get_accountant, require_public_start, validate_budget
from pillar_cli.privacy.count import RowCount, count_for
from pillar_cli.privacy.file_guarantee import ReleasedHead, whole_file
from pillar_cli.privacy.relation import ROW_RELATIONS
from pillar_cli.privacy.unit import PrivacyUnit, adjacency


@dataclass(frozen=True)
class NetworkMethod:
    description: str
    family: str  # its row in the result tables


METHODS = {
    "finetune": NetworkMethod("DP-SGD on every weight of a network pre-trained on public data", "fine-tune"),
    "scratch": NetworkMethod("DP-SGD on every weight of a randomly initialised network", "from scratch"),
    "pretrain": NetworkMethod(
        "non-private training on a public labelled split (no private row)", "public pre-training"
    ),
}
SELECTION_NOTE = (
    "one configuration per (method, ε): no run was selected, nothing outside DP training read the "
    "private labels; val accuracy is reported only"
)


@dataclass(frozen=True)
class Pretrained:
    """A pre-trained network to start from, and the `pillar pretrain` artifact it came from."""

    spec: NetworkSpec
    state: dict[str, np.ndarray]
    model: Artifact

    @property
    def rows(self) -> np.ndarray:
        """The public rows it was trained on."""
        return self.model.arrays.get("rows/public_labelled", np.zeros(0, np.int64))

    @property
    def origin(self) -> dict:
        """What a fine-tuned model records of where its training started."""
        return {
            "path": self.model.path,
            "content_hash": self.model.provenance.content_hash,
            "architecture": self.spec.architecture,
            "source": ModelRecord.of(self.model).source,
            "rows": len(self.rows),
        }

    def rows_of_source(self, split: Split) -> np.ndarray | None:
        """Its training rows if they come from `split`'s source (so that no stage tests on them), else
        None."""
        same = ModelRecord.of(self.model).source_fingerprint == split.source_fingerprint
        return self.rows if same else None


def pretrained(model: Artifact) -> Pretrained:
    """The network of a `pillar pretrain` artifact (any other model is refused)."""
    return Pretrained(*pretrained_network(model), model)


def check_disjoint(start: Pretrained, private: Split) -> None:
    """Refuse a pre-trained network that saw rows of the private split (same source, same row ids)."""
    overlap = shared_rows(private, start.model, ("public_labelled",))
    require_public_start(
        f"the pre-trained network {start.model.path}",
        overlap and f"was trained on {overlap} rows of the private split",
    )


def train_networks(
    spec: NetworkSpec,
    start: Pretrained | None,
    train: Split,
    val: Split | None,
    epsilons: list[float],
    seeds: list[int],
    config: FinetuneConfig,
    device: str = "cpu",
    method: str | None = None,
    on_step: Callable[[int], None] | None = None,
) -> tuple[list[RunRecord], list[dict[str, np.ndarray]], RowCount]:
    """One network per (ε, seed), each trained from `start` (or its seeded random init) on `train`; their run
    records (val accuracy NaN without a val split; each event with the row count's release it read), weights,
    and the row count every network read, released once (privacy/count.py)."""
    method = method or ("scratch" if start is None else "finetune")
    if method not in METHODS:
        raise UsageError(f"unknown network method '{method}' (known: {', '.join(METHODS)})")
    images = _images(train, spec)
    if start is not None and start.spec != spec:
        raise DataError(
            f"the pre-trained network reads {start.spec.input_shape} images into "
            f"{start.spec.num_classes} classes ({start.spec.architecture}); this split needs "
            f"{spec.input_shape} into {spec.num_classes} ({spec.architecture})"
        )
    for epsilon in epsilons:
        validate_budget(epsilon, config.delta)
    count = count_for(len(train.labels), epsilons, config.delta, config.noise, config.n_public)
    records, states = [], []
    for epsilon in epsilons:
        for seed in seeds:
            model = build_network(spec, seed)
            if start is not None:
                load_state(model, start.state, f"the pre-trained network {start.model.path}")
            run = dataclasses.replace(config, epsilon=epsilon, seed=seed)
            result = finetune(model, images, train.labels, run, device, on_step, count)
            key = RunKey(
                method=method,
                k=None,
                epsilon=epsilon,
                lr=run.lr,
                steps=run.steps,
                batch_size=run.batch_size,
                seed=seed,
            )
            accuracy = _accuracy(result.model.cpu(), val, spec)
            records.append(
                RunRecord(
                    key=key,
                    event=count.with_count(result.event).to_dict(),
                    epsilon_spent=result.epsilon_spent,
                    val_accuracy=accuracy,
                    steps_run=result.steps_run,
                    **RunRecord.headline_of(result.event),
                )
            )
            states.append(state_arrays(result.model))
    return records, states, count


def network_spec(architecture: str, split: Split) -> NetworkSpec:
    """The network `architecture` on the images of `split` and its classes."""
    shape = stored_image_shape(split.recipe, split.features.shape[1], f"{split.ref.path}:{split.name}")
    return NetworkSpec(architecture, shape, split.num_classes or int(split.labels.max()) + 1)


def networks_artifact(
    records: list[RunRecord],
    states: list[dict[str, np.ndarray]],
    spec: NetworkSpec,
    train: Split,
    config: FinetuneConfig,
    rows: dict[str, np.ndarray],
    start: Pretrained | None,
    count: RowCount,
    private_fraction: float = 1.0,
) -> Artifact:
    """The model artifact: runs, networks, the ledger (what it covers), the row count they read, the rows
    read, where training started."""
    private = records[0].key.method != "pretrain"
    accountant = get_accountant(config.accountant)
    ledger = ModelLedger(
        clip=config.clip,
        accountant_description=accountant.description,
        epsilon_is_upper_bound=accountant.upper_bound,
        mechanism=(
            f"DP-SGD on every weight through opacus ({config.grad_sample_mode} clipping), Poisson sampling, "
            f"Gaussian noise σ·clip; {adjacency(ROW_RELATIONS)}"
        )
        if private
        else "none: non-private training on public labelled rows",
        protected_split="private" if private else None,
        per_run="runs/event (the DP event tree, JSON) and runs/epsilon_spent, the accountant's ε of it; "
        "runs/steps_run: the optimizer steps taken",
    )
    heads = (
        [ReleasedHead(count.without_count(event_from_dict(r.event)), r.epsilon_spent) for r in records]
        if private
        else []
    )  # each network drew its own batches and noise
    record = ModelRecord(
        num_classes=spec.num_classes,
        n_private=len(train.features) if private else 0,
        ledger=ledger,
        guarantee=guarantee_of(
            PrivacyUnit(), config.accountant, config.delta, count=count if private else None
        ),
        feature_space="flattened pixels (HWC, /255); the network reads them as NCHW images",
        max_epsilon_spent=max(r.epsilon_spent for r in records),
        mechanisms={
            method: METHODS[method].description for method in sorted({r.key.method for r in records})
        },
        selection_mode="val",
        selection_note=SELECTION_NOTE,
        trained_on=(train.name,),
        private_fraction=private_fraction,
        source=train.source,
        max_physical_batch=config.max_physical_batch,
        features=train.carried,
        network=spec.to_attrs(),
        source_fingerprint=train.source_fingerprint,
        pretrained_from=None if start is None else start.origin,
        noise=config.noise.describe() if private else {},
        whole_file=whole_file(heads, config.delta, config.noise.reproducible, count=count.segments)
        if private
        else None,
        count_read_by=tuple(sorted({r.key.method for r in records})) if private else (),
    )
    artifact = network_artifact(records, states, train.features.shape[1], record)
    artifact.arrays.update({f"rows/{name}": ids for name, ids in rows.items()})
    return artifact


def _images(split: Split, spec: NetworkSpec) -> torch.Tensor:
    shape = network_spec(spec.architecture, split).input_shape
    if shape != spec.input_shape:
        raise DataError(
            f"{split.ref.path}:{split.name} holds {shape} images; the network reads {spec.input_shape}",
            hint=f"embed the images at the network's size (embed's {param('resize')})",
        )
    return as_images(split.features, spec)


def _accuracy(model: torch.nn.Module, val: Split | None, spec: NetworkSpec) -> float:
    if val is None:
        return math.nan
    return float((network_logits(model, val.features, spec).argmax(axis=1) == val.labels).mean())
