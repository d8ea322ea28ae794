"""Evaluating model artifacts on a labelled split: the run selected on val per (method, k, ε), its metrics
over seeds, and the qualifiers every table and figure states (the row count as released, δ, accountant, seeds,
how it was selected)."""

from __future__ import annotations

from pillar_cli.artifacts import Artifact, Split, shared_rows
from pillar_cli.artifacts.evaluation import Accounting, Evaluation, rows_as_released
from pillar_cli.artifacts.model import run_rows
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.errors import DataError, param
from pillar_cli.privacy.count import RowCount
from pillar_cli.randomness import NOT_PRIVATE_NOTE, noise_is_reproducible
from pillar_cli.reporting.metrics import selected_metrics


def evaluate_models(models: list[Artifact], split: Split, allow_overlap: bool = False) -> Evaluation:
    """Several model files are the shards of one sweep: merged before selection. A split sharing rows with
    what a model was trained or selected on (same source) is refused: its accuracy would not be a test
    accuracy."""
    if split.labels is None:
        raise DataError(f"split '{split.name}' of {split.ref.path} has no labels to evaluate against")
    overlap = max(shared_rows(split, model, ("private", "val", "public_labelled")) for model in models)
    if overlap and not allow_overlap:
        raise DataError(
            f"{split.ref.path}:{split.name} shares {overlap} rows with the rows {models[0].path} was "
            "trained or selected on, or read labels of (same source): that would not be a test accuracy",
            hint=f"evaluate on held-out rows, or pass {param('allow_overlap', True)} (recorded and printed)",
        )
    rows = selected_metrics(models, split.features, split.labels)
    first, headers = models[0], [ModelRecord.of(model) for model in models]
    header = headers[0]
    ledger = Accounting(accountant=header.accountant, delta=header.delta_total, clip=header.ledger.clip)
    count = released_count(header)
    said = rows_as_released(count)
    seeds = sorted({row.key.seed for model in models for row in run_rows(model)})
    title = (
        f"{split.source} / {split.backbone}: {split.name} accuracy; {said}, δ={ledger.delta:g}, "
        f"{ledger.accountant}, seeds {','.join(map(str, seeds))}"
    )
    notes = [
        f"{said}, δ = {ledger.delta:g}, accountant {ledger.accountant}, clip {ledger.clip:g}",
        f"seeds {', '.join(map(str, seeds))}",
        header.selection_note,
        f"evaluated on split '{split.name}' ({len(split.features)} rows)",
        *header.notes,
    ]
    notes += [
        f"{model.path}: {other.whole_file['statement']}"
        for model, other in zip(models, headers)
        if other.whole_file is not None
    ]
    if any(noise_is_reproducible(model.attrs) for model in models):
        title, notes = f"{title} [{NOT_PRIVATE_NOTE}]", [*notes, NOT_PRIVATE_NOTE]
    if overlap:
        warning = (
            f"OVERLAP: {overlap} of the {len(split.features)} rows were training or validation rows (allowed)"
        )
        title, notes = f"{title} [{warning}]", [*notes, warning]
    return Evaluation(
        rows=rows,
        split=split.name,
        title=title,
        notes=notes,
        dataset=split.source,
        count=count,
        private_fraction=header.private_fraction,
        ledger=ledger,
        overlap_rows=overlap,
        public=header.public_data,
        feature_dim=int(first.array("mean").size),
    )


def released_count(header: ModelRecord) -> RowCount | None:
    """The row count the models' runs read, as released: a noisy count, or one declared public; None where no
    private mechanism read one (its exact n stays in the model's working file)."""
    count = header.count if header.count_read_by else None
    return count if count is not None and count.released else None
