"""Which head a release holds: the run a model's selection chose for one (method, k, ε) cell, of one
repetition.

The choice is the model's own (on val, or accounted inside ε); the cell and the repetition are named by the
user. A repetition is a seed of train-private's --seed: its noise is independent of the others', and taking
the lowest by default looks at nothing private.
"""

from __future__ import annotations

import math

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.model import RunRecord, run_rows, stored_runs
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.network import is_network, stored_state
from pillar_cli.errors import DataError, PrivacyError, UsageError, param
from pillar_cli.privacy.basis import ChosenBy
from pillar_cli.privacy.risk import checked_prior
from pillar_cli.randomness import NOT_PRIVATE_NOTE, noise_is_reproducible
from pillar_cli.release.statement import privacy_statement

_CELL_KEYS = {"method": str, "k": str, "eps": float}


def parse_cell(text: str | None) -> dict:
    """'method=pillar,k=20,eps=1' → {'method': 'pillar', 'k': '20', 'eps': 1.0}; None → {} (any cell)."""
    wanted = {}
    for part in [p.strip() for p in (text or "").split(",") if p.strip()]:
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in _CELL_KEYS:
            raise UsageError(f"{param('cell')} takes method=NAME,k=K,eps=E (any of them); got '{part}'")
        try:
            wanted[key.strip()] = _CELL_KEYS[key.strip()](value.strip())
        except ValueError:
            raise UsageError(
                f"{param('cell')}: '{value.strip()}' is not a number for {key.strip()}"
            ) from None
    return wanted


def prevalence(prior: float | None) -> float | None:
    """A prevalence to state the attribute risk at (None: none), refused outside (0, 1)."""
    return None if prior is None else checked_prior(prior)


def release_classifier(
    model: Artifact, wanted: dict, seed: int | None, prior: float | None = None
) -> tuple[Classifier, dict]:
    """The classifier of the cell `wanted` names (parse_cell) and the repetition `seed` (None: the lowest),
    and what was chosen (cell, seed, selection); `prior`: a prevalence its statement states the attribute
    risk at."""
    if noise_is_reproducible(model.attrs) or _seeded_by_provenance(model):
        raise PrivacyError(
            f"{model.path} was trained with experiment-only noise ({param('noise_seed')}): anyone "
            "holding the seed can remove it, so it has no guarantee to release",
            hint=f"train again without {param('noise_seed')}",
        )
    cells = _cells(model)
    choice = _one_cell(model, cells, wanted)
    runs = stored_runs([model])
    chosen = sorted((runs[i] for i in choice.run_ids), key=lambda run: run.key.seed)
    if not chosen:
        raise DataError(
            f"cell {choice.name} of {model.path} released no run (its accounted selection ran no trial)"
        )
    seeds = [run.key.seed for run in chosen]
    if seed is not None and seed not in seeds:
        raise UsageError(
            f"cell {choice.name} has repetitions (seeds) {', '.join(map(str, seeds))}; not {seed}"
        )
    run = chosen[seeds.index(seed) if seed is not None else 0]
    statement = privacy_statement(model, run, choice.selected, len(cells), prior)
    chosen_as = {"cell": choice.name, "seed": run.key.seed, "seeds": seeds, "selected": choice.selected}
    return (
        _network(model, run, statement) if is_network(model) else _classifier(model, run, statement)
    ), chosen_as


def _seeded_by_provenance(model: Artifact) -> bool:
    """Whether the model's own record says its noise came from a seed, whatever its `noise` attribute says:
    the command that wrote it, its resolved options, or its whole-file statement (an edit of one attribute
    cannot launder a seeded model)."""
    provenance = model.provenance
    said = (
        []
        if provenance is None
        else [provenance.config.get("noise_seed") is not None, "--noise-seed" in provenance.command]
    )
    whole = ModelRecord.of(model).whole_file or {}
    return any(said) or NOT_PRIVATE_NOTE in str(whole.get("composition", ""))


def _cells(model: Artifact) -> list[SelectedCell]:
    """The model's (method, k, ε) cells with the runs its selection chose; a network model's cells: one
    configuration each (finetune trains one per ε and seed), every run of the cell a repetition."""
    if not is_network(model):
        return ModelRecord.of(model).selection
    runs: dict[tuple, list[int]] = {}
    for run_id, row in enumerate(run_rows(model)):
        runs.setdefault((row.key.method, row.key.epsilon), []).append(run_id)
    return [
        SelectedCell(method=method, k="full", epsilon=epsilon, run_ids=ids, selected=ChosenBy.NOTHING)
        for (method, epsilon), ids in runs.items()
    ]


def _one_cell(model: Artifact, cells: list[SelectedCell], wanted: dict) -> SelectedCell:
    matches = [cell for cell in cells if cell.matches(wanted)]
    if len(matches) != 1:
        listed = "; ".join(cell.name for cell in (matches or cells))
        if not wanted:
            raise UsageError(
                f"{model.path} holds {len(cells)} cells; name one with {param('cell')}: {listed}"
            )
        found = f"{len(matches)} cells match" if matches else "no cell matches"
        raise UsageError(f"{model.path}: {found} {param('cell')} {_cell_text(wanted)}; cells: {listed}")
    cell = matches[0]
    if not math.isfinite(cell.epsilon):
        raise PrivacyError(
            f"cell {cell.name} of {model.path} is not private (ε = inf): a release holds a DP classifier"
        )
    return cell


def _cell_text(wanted: dict) -> str:
    return ",".join(
        f"{key}={value:g}" if isinstance(value, float) else f"{key}={value}" for key, value in wanted.items()
    )


def _classifier(model: Artifact, run: RunRecord, statement: dict) -> Classifier:
    """The run's head as applied by `evaluate`: a linear head's weights mapped back to the standardised
    features; a head on unit-norm projected rows with its basis."""
    key, unit_rows = run.key, run.row_normalised
    weights, bias, basis = run.released_head()
    header = ModelRecord.of(model)
    head = {
        "method": key.method,
        "k": key.k if key.k is not None else "full",
        "unit_rows": unit_rows,
        "row_l2_normalised": header.row_l2_normalised,
    }
    return Classifier(
        model.array("mean"),
        model.array("scale"),
        weights,
        bias,
        basis,
        header.class_names,
        head,
        _recipe(model, header),
        statement,
    )


def _network(model: Artifact, run: RunRecord, statement: dict) -> Classifier:
    """The run's network, which reads the pixel rows its model was trained on (the identity scaler)."""
    header = ModelRecord.of(model)
    head = {
        "method": run.key.method,
        "k": "full",
        "unit_rows": False,
        "row_l2_normalised": False,
        "network": header.network,
    }
    return Classifier(
        model.array("mean"),
        model.array("scale"),
        None,
        None,
        None,
        header.class_names,
        head,
        _recipe(model, header),
        statement,
        stored_state(model, run.local_id),
    )


def _recipe(model: Artifact, header: ModelRecord) -> FeatureRecipe:
    """The feature recipe a model records (a model without one: its feature dimension)."""
    return header.feature_recipe.with_dim(len(model.array("mean")))
