"""A sweep's inputs read from artifacts, arranged for a request: the embeddings' private split (and the val
split, which trains beside it, selects each cell's run or is held out, as the plan's `val_role` decides), the
projection and where its public data came from, a warm start, a labelled public split; and what a model
records of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pillar_cli import artifacts
from pillar_cli.artifacts.model_record import PublicChoice
from pillar_cli.errors import MissingSplitError, UsageError, param
from pillar_cli.methods.arrangement import arrange, configurations_per_cell, val_role
from pillar_cli.methods.base import Reads
from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.data import SweepData
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.rules import rule_record
from pillar_cli.methods.sweep import SweepResult, sweep_artifact
from pillar_cli.methods.warm_start import warm_start_weights
from pillar_cli.privacy import require_disjoint, require_persons_apart
from pillar_cli.privacy.count import RowCount
from pillar_cli.projection.components import read_projection
from pillar_cli.projection.public_choice import labelled_public_split, public_data_of


@dataclass(frozen=True, kw_only=True)
class SweepSources:
    """Which files a sweep reads besides its embeddings and projection, and how much of the private split."""

    private_fraction: float = 1.0  # a seeded fraction of the training rows (Figure 7 of the paper)
    warm_start: Path | None = None  # a model trained on PUBLIC labelled data: the initial head
    public_labelled: str | None = None  # FILE:SPLIT, a labelled public split (adadps' preconditioner)
    # accept a projection fitted on another public dataset (Table 2(a) of the paper)
    other_public: bool = False


@dataclass(frozen=True)
class SweepInputs:
    """The sweep's data; the input references, the rows and persons read, and what a model records of its
    inputs (`recorded`: `ModelRecord` fields); what the request's values override (a method's own step rule,
    as sentences)."""

    data: SweepData
    refs: list[artifacts.InputRef]
    rows: dict[str, np.ndarray]
    persons: dict[str, np.ndarray] | None
    recorded: dict[str, Any]
    overridden: list[str] = field(default_factory=list)

    def model(self, result: SweepResult) -> artifacts.Artifact:
        """The model artifact of the sweep run on these inputs."""
        plan, data = result.plan, self.data
        return sweep_artifact(
            result,
            data.pca,
            plan.privacy,
            data.num_classes,
            len(data.private_x),
            plan.options,
            self.rows,
            self.persons,
            default_rule=rule_record(plan.request.grid()),
            **self.recorded,
        )


def read_sweep_inputs(
    request: SweepRequest, embeddings: str, projection: Path, sources: SweepSources = SweepSources()
) -> SweepInputs:
    """Read and check what the request trains on: the projection fitted on these embeddings' public split, a
    GSD's choice, or another public dataset if allowed; the val rows among the training rows where the plan
    says so."""
    path, _ = artifacts.parse_ref(embeddings)
    private = artifacts.read_split(f"{path}:private", on_disk=True)  # features projected a block at a time
    public = artifacts.read_split(f"{path}:public", on_disk=True)
    require_disjoint(private.index, public.index, path)  # the embeddings' own fault
    require_persons_apart(private.units, public.units, path)
    # first, then the projection's
    projection_artifact = artifacts.read(projection, "projection")
    public_data = public_data_of(projection_artifact, private, sources.other_public)
    pca, choice = read_projection(projection_artifact), PublicChoice.of(projection_artifact)
    val = (
        None
        if val_role(request, len(pca.components_)) == "none"
        else validation_split(
            path,
            configurations_per_cell(request.grid(), len(pca.components_)),
            required=request.val == "train",
            on_disk=True,
        )
    )
    initial = (
        None
        if sources.warm_start is None
        else warm_start_weights(artifacts.read(sources.warm_start, "model"), pca, private.ref)
    )
    uses_public = any(Reads.PUBLIC_ROWS in get_method(m).reads for m in request.method)
    labelled = (
        None if sources.public_labelled is None else labelled_public_split(sources.public_labelled, private)
    )
    data = arrange(
        request,
        pca,
        private,
        val,
        private.num_classes,
        private_fraction=sources.private_fraction,
        rows_named_by=private.source_fingerprint or private.ref.content_hash,
        public_x=public.features if uses_public else None,
        warm_start=initial,
        public_index=public.index,
        source=path,
        public_labelled=None
        if labelled is None or labelled.labels is None
        else (labelled.features, labelled.labels),
        public_choice=None if choice is None else choice.release,
    )
    assert data.private_index is not None  # a file's rows always name their source rows
    rows = {
        "private": data.private_index,
        **({"val": data.val_index} if data.val_index is not None else {}),
        **({"public_labelled": labelled.index} if labelled and labelled.same_source(private) else {}),
    }
    persons = (
        {"private": data.units.ids, **({"val": data.val_units.ids} if data.val_units is not None else {})}
        if data.units.grouped
        else None
    )
    recorded = {
        "persons": private.grouping if persons else None,
        "source_fingerprint": private.source_fingerprint,
        "public_choice": choice,
        "public_data": public_data,
        "features": private.carried,
        "trained_on": data.trained_on,
        "private_fraction": sources.private_fraction,
    }
    refs = [
        private.ref,
        *([val.ref] if val else []),
        projection_artifact.ref(),
        *([labelled.ref] if labelled else []),
    ]
    overridden = request.grid().for_rows(RowCount.exact(len(data.private_x))).overridden_rules()
    return SweepInputs(data, refs, rows, persons, recorded, overridden)


def validation_split(
    path: str, configurations: int, required: bool = False, on_disk: bool = False
) -> artifacts.Split | None:
    """The val split; it may be absent only when there is nothing to select (one configuration per cell) and
    nothing asked it to train. `on_disk`: its features left in the file (artifacts.read_split)."""
    try:
        return artifacts.read_split(f"{path}:val", on_disk=on_disk)
    except MissingSplitError:
        if required:
            raise UsageError(
                f"{path} has no val split to train on",
                hint=f"embed with {param('val_fraction')} > 0, or drop {param('val')} train",
            ) from None
        if configurations > 1:
            raise UsageError(
                f"{path} has no val split, which selecting among {configurations} configurations per "
                "(method, k, ε) needs",
                hint=f"embed with {param('val_fraction')} > 0, or give one configuration",
            ) from None
        return None
