"""The neighbouring-datasets check: does anything a user ships depend on the private rows other than through
DP?

Neighbours are made the way a data holder makes them: one record (or one person) deleted from the SOURCE, and
the documented pipeline run again from the start — embed, fit-pca, train-private with the user's options,
release of every cell, export in each format. Each side embeds its source once (embedding draws nothing at
random); the rest runs R times a side as library calls (the very functions the commands call), every run in
the same folder under the same file names, so that the paths the files record agree; each run's files are then
kept under its side. By default the record deleted is the private record of the rarest label, the one a class
set read off the labels would disclose. Every stored value of every shipped file (HDF5 attributes, parsed down
to JSON leaves, and datasets; ONNX metadata and tensors; TorchScript archive members and its extra file;
safetensors metadata and tensors; an hf folder's weights, card and config.json) is compared: a value that is
the same in every run on one side, the same in every run on the other, and differs between the sides is a
deterministic function of the private rows — released without noise. A DP output changes from run to run
(fresh noise), so it never qualifies; a coarse one (a k read off a noisy count) can repeat by chance in R
runs, so whatever the first R runs find is confirmed by CONFIRMING_RUNS more a side, and reported only where
it repeats in all of them (a value that takes either of two values by noise repeats, differently on each side,
in 2 runs a side up to 1 time in 8, in 5 runs 1 time in 512).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pillar_cli import artifacts
from pillar_cli.artifacts.classifier_file import read_classifier
from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.audit.stored_values import stored_values
from pillar_cli.errors import MissingSplitError, UsageError, param
from pillar_cli.methods.inputs import SweepSources, read_sweep_inputs
from pillar_cli.methods.plan import plan_sweep
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.sweep import run_plan
from pillar_cli.privacy.count import independent_counts
from pillar_cli.projection.fitting import ProjectionRecipe, fit_projection
from pillar_cli.release.choice import release_classifier
from pillar_cli.release.exported import EXPORT_FORMATS

# when a file was written (as stored_values addresses it): never a function of the data
CLOCK = {"attrs/created_at"}
CONFIRMING_RUNS = 3  # runs added a side to confirm what the first ones found
RUN_FOLDER = ".pillar-neighbours-run"  # where every run works, beside the sides' folders
Embedder = Callable[[np.ndarray, Path], None]  # embeds the source less the given source rows into a file


@dataclass(frozen=True)
class Finding:
    """A stored value that follows the data deterministically."""

    file: str
    value: str  # where in the file
    with_row: str  # its value on the data
    without_row: str  # its value on the data less one row


@dataclass(frozen=True)
class Comparison:
    """What the check found: the deterministic values, the shipped files compared, the records deleted and the
    runs made a side (the plan's, plus CONFIRMING_RUNS where they found something)."""

    findings: list[Finding]
    files: list[str]
    removed: Removed
    runs: int
    # what the first runs found that more runs did not repeat
    dismissed: list[Finding] = field(default_factory=list)


@dataclass(frozen=True)
class NeighbourPlan:
    """What the check runs: fit-pca's recipe, train-private's request and sources, which exports, how many
    runs a side, which private row's record goes (None: the private record of the rarest label)."""

    projection: ProjectionRecipe = ProjectionRecipe()
    train: SweepRequest = SweepRequest()
    sources: SweepSources = field(default_factory=SweepSources)
    formats: list[str] = field(default_factory=list)
    runs: int = 3
    removed_row: int | None = None
    remove_person: bool = False  # remove every record of removed_row's person, not the record alone

    def __post_init__(self) -> None:
        if unknown := sorted(set(self.formats) - set(EXPORT_FORMATS)):
            raise UsageError(f"unknown export format '{unknown[0]}' (known: {', '.join(EXPORT_FORMATS)})")
        if self.runs < 2:
            raise UsageError(
                f"{param('runs')} must be at least 2: a value is deterministic when it repeats (got "
                f"{self.runs})"
            )


@dataclass(frozen=True)
class Removed:
    """The records deleted from the source on the neighbouring side, and why they were chosen."""

    source_rows: list[int]
    label: str
    why: str


def neighbours(
    embeddings: Path,
    plan: NeighbourPlan,
    workdir: Path,
    embed: Embedder,
    say: Callable[[str], None] = lambda line: None,
) -> Comparison:
    """Run the plan on both sides and compare, confirming any finding with more runs. `embed` embeds the
    source as `embeddings` was, less some of its rows; `say` hears of each run as it starts."""
    removed = records_to_remove(
        artifacts.read(embeddings, "embeddings"), plan.removed_row, plan.remove_person
    )
    sides = {"with": workdir / "with", "without": workdir / "without"}
    for side, directory in sides.items():
        directory.mkdir(parents=True, exist_ok=True)
        embed(
            np.asarray(removed.source_rows if side == "without" else [], dtype=np.int64), directory / "emb.h5"
        )
    shipped: dict[str, list[dict[str, dict[str, str]]]] = {side: [] for side in sides}
    first: list[Finding] = []
    for runs in (plan.runs, plan.runs + CONFIRMING_RUNS):
        for side, directory in sides.items():
            for number in range(len(shipped[side]), runs):
                say(f"{side}/run{number}: fit-pca, train-private, release and export")
                shipped[side].append(_pipeline(directory, plan, number))
        names = sorted(set().union(*(files for made in shipped.values() for files in made)))
        findings = [
            finding
            for name in names
            for finding in deterministic_differences(
                name,
                [files.get(name) for files in shipped["with"]],
                [files.get(name) for files in shipped["without"]],
            )
        ]
        if not findings:
            break
        first = first or findings
    return Comparison(findings, names, removed, runs, [found for found in first if found not in findings])


def records_to_remove(artifact: artifacts.Artifact, private_row: int | None, whole_person: bool) -> Removed:
    """The source rows of one private record (`private_row` of the private split; None: the record of the
    rarest label among the file's labelled rows) — with `whole_person`, of every record of its person."""
    index = np.asarray(artifact.arrays["splits/private/index"])
    labels = np.asarray(artifact.arrays["splits/private/labels"])
    names = list(artifact.attrs["class_names"])
    if private_row is None:
        counts = np.bincount(
            np.concatenate(
                [np.asarray(artifact.arrays[name]) for name in artifact.arrays if name.endswith("/labels")]
            ),
            minlength=len(names),
        )
        private_row = int(
            np.argmin(np.where(np.bincount(labels, minlength=len(names)) > 0, counts, np.inf)[labels])
        )
        why = f"the private record of the rarest label ({counts[labels[private_row]]} rows hold it)"
    elif not 0 <= private_row < len(index):
        raise UsageError(
            f"{param('remove_row')} {private_row} is not a row of the private split (0..{len(index) - 1})"
        )
    else:
        why = f"private row {private_row}"
    rows = [private_row]
    if whole_person:
        if "splits/private/persons" not in artifact.arrays:
            raise UsageError(f"{param('remove_person', True)} needs embeddings that name each row's person")
        persons = np.asarray(artifact.arrays["splits/private/persons"])
        rows = np.flatnonzero(persons == persons[private_row]).tolist()
        why += f", with every record of its person ({len(rows)})"
    return Removed(sorted(int(i) for i in index[rows]), names[int(labels[private_row])], why)


def deterministic_differences(
    name: str, with_row: list[dict | None], without_row: list[dict | None]
) -> list[Finding]:
    """The values (or the file's presence) equal in every run of each side and different between the sides."""
    if any(values is None for values in with_row + without_row):  # a file made on some runs only
        present = [values is not None for values in with_row], [values is not None for values in without_row]
        same = all(present[0]) == any(present[0]) and all(present[1]) == any(present[1])
        return (
            [Finding(name, "(the file itself)", str(present[0][0]), str(present[1][0]))]
            if same and present[0][0] != present[1][0]
            else []
        )
    keys = set().union(*with_row, *without_row) - CLOCK
    found = []
    for key in sorted(keys):
        one, other = [values.get(key) for values in with_row], [values.get(key) for values in without_row]
        if len(set(one)) == 1 and len(set(other)) == 1 and one[0] != other[0]:
            found.append(Finding(name, key, _short(one[0]), _short(other[0])))
    return found


def _pipeline(directory: Path, plan: NeighbourPlan, number: int) -> dict[str, dict[str, str]]:
    """One run of the pipeline on the side's embeddings in `directory`; the shipped files' stored values by
    file name. Every run of both sides works in the one folder beside the sides' (the same paths in every
    file), and its files are then kept as the side's run`number`."""
    from pillar_cli.release.export import export_classifier  # torch: imported to run, not for --help

    here = directory.parent / RUN_FOLDER
    shutil.rmtree(here, ignore_errors=True)
    here.mkdir()
    shutil.copyfile(directory / "emb.h5", here / "emb.h5")
    split = "public" if plan.projection.dp_eps is None else "private"  # a DP-PCA fits on the private rows
    fitted = fit_projection(f"{here / 'emb.h5'}:{split}", plan.projection)
    artifacts.write(here / "pca.h5", fitted.artifact, inputs=fitted.inputs)
    inputs = read_sweep_inputs(plan.train, str(here / "emb.h5"), here / "pca.h5", plan.sources)
    with independent_counts():  # each run its own draw of the count, as another data holder's run would be (a
        # holder's later runs reuse theirs: privacy/count.py)
        planned = plan_sweep(inputs.data, plan.train)
    artifacts.write(here / "model.h5", inputs.model(run_plan(inputs.data, planned)), inputs=inputs.refs)
    model = artifacts.read(here / "model.h5", "model")
    shipped, seen = [], {}
    for cell in ModelRecord.of(model).selection:
        if not np.isfinite(cell.epsilon):
            continue  # a non-private cell cannot be released
        # named by position among the cells of its (method, ε): a k the rule set from the noisy count varies
        # by run
        key = (cell.method, cell.epsilon)
        seen[key] = seen.get(key, -1) + 1
        name = f"{cell.method}-eps{cell.epsilon:g}-{seen[key]}"
        released, _ = release_classifier(
            model, {"method": cell.method, "k": str(cell.k), "eps": cell.epsilon}, None
        )
        artifacts.write(here / f"{name}.h5", released.to_artifact())
        shipped.append(f"{name}.h5")
        for fmt in plan.formats:
            target = f"{name}.{_SUFFIX[fmt]}" if _SUFFIX[fmt] else f"{name}-hf"
            export_classifier(
                read_classifier(str(here / f"{name}.h5")), fmt, here / target, inputs=[here / f"{name}.h5"]
            )
            shipped.append(target)
    shipped += _published(here, model, [name for name in shipped if name.endswith(".h5")])
    values = {name: stored_values(here / name) for name in shipped}
    shutil.rmtree(directory / f"run{number}", ignore_errors=True)
    here.rename(directory / f"run{number}")
    return values


def _published(here: Path, model: artifacts.Artifact, releases: list[str]) -> list[str]:
    """What a user publishes of the model besides its releases, made in `here` as the commands make them: the
    evaluation on the test split, its tables and figure, and the page of the first release with it."""
    from pillar_cli.release.signing import trust_of
    from pillar_cli.reporting.evaluation import evaluate_models
    from pillar_cli.reporting.figures import accuracy_vs_k
    from pillar_cli.reporting.page import release_page
    from pillar_cli.reporting.tables import rows_to_csv, rows_to_markdown

    try:
        split = artifacts.read_split(f"{here / 'emb.h5'}:test", on_disk=True)
    except MissingSplitError:  # embeddings without a test split publish no evaluation
        return []
    evaluation = evaluate_models([model], split)
    artifacts.write(here / "eval.h5", evaluation.artifact(), inputs=[model.ref(), split.ref])
    (here / "table.md").write_text(rows_to_markdown(evaluation.rows, evaluation.title, evaluation.notes))
    (here / "table.csv").write_text(rows_to_csv(evaluation.rows))
    accuracy_vs_k(evaluation.rows, here / "figure.png", evaluation.title, evaluation.feature_dim)
    made = ["eval.h5", "table.md", "table.csv", "figure.png"]
    if releases:
        page = here / f"{Path(releases[0]).stem}.html"
        released = read_classifier(str(here / releases[0]))
        page.write_text(
            release_page(
                released,
                trust_of(here / releases[0], None).line,
                Evaluation.of(artifacts.read(here / "eval.h5", "evaluation")),
                None,
            )[1]
        )
        made.append(page.name)
    return made


_SUFFIX = {"onnx": "onnx", "torchscript": "pt", "safetensors": "safetensors", "hf": ""}  # by export format


def _short(text: str | None, limit: int = 80) -> str:
    text = "(absent)" if text is None else text
    return text if len(text) <= limit else text[: limit - 1] + "…"
