"""The neighbouring-datasets check: does anything a user ships depend on the private rows other than through DP?

Neighbours are made the way a data holder makes them: one record (or one person) deleted from the SOURCE, and the
documented pipeline run again from the start — embed, fit-pca, train-private with the user's options, release of
every cell, export in each format. Each side embeds its source once (embedding draws nothing at random); the rest
runs R times a side, each run in a directory of its own under the same file names, so that paths and command lines
agree. By default the record deleted is the private record of the rarest label, the one a class set read off the
labels would disclose. Every stored value of every shipped file (HDF5 attributes, parsed down to JSON leaves, and
datasets; ONNX metadata and tensors; TorchScript archive members and its extra file; safetensors metadata and
tensors; an hf folder's weights, card and config.json) is compared: a value that is the same in every run on one
side, the same in every run on the other, and differs between the sides is a deterministic function of the private
rows — released without noise. A DP output changes from run to run (fresh noise), so it never qualifies; a coarse
one (a k read off a noisy count) can repeat by chance in R runs, so whatever the first R runs find is confirmed by
CONFIRMING_RUNS more a side, and reported only where it repeats in all of them (a value that takes either of two
values by noise repeats, differently on each side, in 2 runs a side up to 1 time in 8, in 5 runs 1 time in 512).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import h5py
import numpy as np

from pillar_cli import artifacts
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.errors import UsageError, param
from pillar_cli.release.exported import EXPORT_FORMATS, HF_WEIGHTS

CLOCK = {"created_at"}  # when a file was written: never a function of the data
CONFIRMING_RUNS = 3  # runs added a side to confirm what the first ones found
Runner = Callable[[list[str], Path], None]  # runs one pillar command line in a directory
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
    """What the check found: the deterministic values, the shipped files compared, the records deleted and the runs
    made a side (the plan's, plus CONFIRMING_RUNS where they found something)."""

    findings: list[Finding]
    files: list[str]
    removed: Removed
    runs: int


@dataclass(frozen=True)
class NeighbourPlan:
    """What the check runs: train-private's options, which exports, how many runs a side, which private row's record
    goes (None: the private record of the rarest label)."""

    train: list[str]
    fit_pca: list[str]
    formats: list[str]
    runs: int = 3
    removed_row: int | None = None
    remove_person: bool = False  # remove every record of removed_row's person, not the record alone

    @property
    def fit_pca_line(self) -> list[str]:
        """The fit-pca command line of every run (in the run's folder)."""
        return ["fit-pca", "emb.h5:public", *self.fit_pca, "-o", "pca.h5", "--force"]

    @property
    def train_line(self) -> list[str]:
        """The train-private command line of every run."""
        return ["train-private", "emb.h5", "-p", "pca.h5", *self.train, "-o", "model.h5", "--force"]

    def __post_init__(self) -> None:
        if unknown := sorted(set(self.formats) - set(EXPORT_FORMATS)):
            raise UsageError(f"unknown export format '{unknown[0]}' (known: {', '.join(EXPORT_FORMATS)})")
        if self.runs < 2:
            raise UsageError(f"{param('runs')} must be at least 2: a value is deterministic when it repeats (got "
                             f"{self.runs})")


@dataclass(frozen=True)
class Removed:
    """The records deleted from the source on the neighbouring side, and why they were chosen."""

    source_rows: list[int]
    label: str
    why: str


def neighbours(embeddings: Path, plan: NeighbourPlan, workdir: Path, run: Runner, embed: Embedder) -> Comparison:
    """Run the plan on both sides and compare, confirming any finding with more runs. `embed` embeds the source as
    `embeddings` was, less some of its rows."""
    removed = records_to_remove(artifacts.read(embeddings, "embeddings"), plan.removed_row, plan.remove_person)
    sides = {"with": workdir / "with", "without": workdir / "without"}
    for side, directory in sides.items():
        directory.mkdir(parents=True, exist_ok=True)
        embed(np.asarray(removed.source_rows if side == "without" else [], dtype=np.int64), directory / "emb.h5")
    shipped: dict[str, list[dict[str, dict[str, str]]]] = {side: [] for side in sides}
    for runs in (plan.runs, plan.runs + CONFIRMING_RUNS):
        for side, directory in sides.items():
            shipped[side] += [_pipeline(directory, plan, run, number) for number in range(len(shipped[side]), runs)]
        names = sorted(set().union(*(files for made in shipped.values() for files in made)))
        findings = [finding for name in names for finding in deterministic_differences(
            name, [files.get(name) for files in shipped["with"]], [files.get(name) for files in shipped["without"]])]
        if not findings:
            break
    return Comparison(findings, names, removed, runs)


def records_to_remove(artifact: artifacts.Artifact, private_row: int | None, whole_person: bool) -> Removed:
    """The source rows of one private record (`private_row` of the private split; None: the record of the rarest
    label among the file's labelled rows) — with `whole_person`, of every record of its person."""
    index = np.asarray(artifact.arrays["splits/private/index"])
    labels = np.asarray(artifact.arrays["splits/private/labels"])
    names = list(artifact.attrs["class_names"])
    if private_row is None:
        counts = np.bincount(np.concatenate([np.asarray(artifact.arrays[name]) for name in artifact.arrays
                                             if name.endswith("/labels")]), minlength=len(names))
        private_row = int(np.argmin(np.where(np.bincount(labels, minlength=len(names)) > 0, counts, np.inf)[labels]))
        why = f"the private record of the rarest label ({counts[labels[private_row]]} rows hold it)"
    elif not 0 <= private_row < len(index):
        raise UsageError(f"{param('remove_row')} {private_row} is not a row of the private split (0..{len(index) - 1})")
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


def deterministic_differences(name: str, with_row: list[dict | None], without_row: list[dict | None]
                              ) -> list[Finding]:
    """The values (or the file's presence) equal in every run of each side and different between the sides."""
    if any(values is None for values in with_row + without_row):  # a file made on some runs only
        present = [values is not None for values in with_row], [values is not None for values in without_row]
        same = all(present[0]) == any(present[0]) and all(present[1]) == any(present[1])
        return [Finding(name, "(the file itself)", str(present[0][0]), str(present[1][0]))] \
            if same and present[0][0] != present[1][0] else []
    keys = set().union(*with_row, *without_row) - CLOCK
    found = []
    for key in sorted(keys):
        one, other = [values.get(key) for values in with_row], [values.get(key) for values in without_row]
        if len(set(one)) == 1 and len(set(other)) == 1 and one[0] != other[0]:
            found.append(Finding(name, key, _short(one[0]), _short(other[0])))
    return found


def stored_values(path: Path) -> dict[str, str]:
    """Every value a shipped file stores, by address: leaves of its metadata as text, arrays as digests."""
    if path.is_dir():
        return _hf_values(path)
    suffix = path.suffix.lower()
    if suffix == ".h5":
        return _hdf5_values(path)
    if suffix == ".onnx":
        return _onnx_values(path)
    if suffix == ".safetensors":
        return _safetensors_values(path)
    if zipfile.is_zipfile(path):
        return _zip_values(path)
    raise UsageError(f"{path}: not a file the neighbours check can read")


def _pipeline(directory: Path, plan: NeighbourPlan, run: Runner, number: int) -> dict[str, dict[str, str]]:
    """One run of the pipeline in its own directory; the shipped files' stored values by file name."""
    here = directory / f"run{number}"
    here.mkdir(exist_ok=True)
    shutil.copyfile(directory / "emb.h5", here / "emb.h5")  # the side's embeddings, under the same name each run
    run(plan.fit_pca_line, here)
    run(plan.train_line, here)
    shipped, seen = [], {}
    for cell in ModelRecord.of(artifacts.read(here / "model.h5", "model")).selection:
        if not np.isfinite(cell.epsilon):
            continue  # a non-private cell cannot be released
        # named by position among the cells of its (method, ε): a k the rule set from the noisy count varies by run
        key = (cell.method, cell.epsilon)
        seen[key] = seen.get(key, -1) + 1
        name = f"{cell.method}-eps{cell.epsilon:g}-{seen[key]}"
        run(["release", "model.h5", "--cell", f"method={cell.method},k={cell.k},eps={cell.epsilon!r}",
             "-o", f"{name}.h5", "--force"], here)
        shipped.append(f"{name}.h5")
        for fmt in plan.formats:
            target = f"{name}.{_SUFFIX[fmt]}" if _SUFFIX[fmt] else f"{name}-hf"
            run(["export", f"{name}.h5", "--format", fmt, "-o", target, "--force"], here)
            shipped.append(target)
    return {name: stored_values(here / name) for name in shipped}


_SUFFIX = {"onnx": "onnx", "torchscript": "pt", "safetensors": "safetensors", "hf": ""}  # by export format


def _leaves(prefix: str, value: object) -> dict[str, str]:
    """A JSON value as its leaves: dicts and lists by key and position, strings that hold JSON parsed too."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            value = json.loads(value)
        except ValueError:
            pass
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(f"{prefix}/{key}", item).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _leaves(f"{prefix}/{i}", item).items()}
    return {prefix: repr(value)}


def _digest(array: np.ndarray) -> str:
    array = np.ascontiguousarray(array)
    return f"{array.dtype}{list(array.shape)} sha256:{hashlib.sha256(array.tobytes()).hexdigest()[:16]}"


def _hdf5_values(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    with h5py.File(path, "r") as h5:
        for key, value in h5.attrs.items():
            values |= _leaves(f"attrs/{key}", value.decode() if isinstance(value, bytes) else
                              value.item() if isinstance(value, np.generic) else value)

        def visit(name: str, node: object) -> None:
            if isinstance(node, h5py.Dataset):
                values[f"datasets/{name}"] = _digest(node[()])

        h5.visititems(visit)
    return values


def _onnx_values(path: Path) -> dict[str, str]:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    values: dict[str, str] = {}
    for prop in model.metadata_props:
        values |= _leaves(f"metadata/{prop.key}", prop.value)
    for tensor in model.graph.initializer:
        values[f"initializers/{tensor.name}"] = _digest(numpy_helper.to_array(tensor))
    for node in model.graph.node:
        for attribute in node.attribute:
            serialized = attribute.SerializeToString()
            values[f"nodes/{node.name}/{attribute.name}"] = hashlib.sha256(serialized).hexdigest()[:16]
    return values


def _safetensors_values(path: Path) -> dict[str, str]:
    from safetensors import safe_open

    values: dict[str, str] = {}
    with safe_open(str(path), "np") as handle:
        for key, value in (handle.metadata() or {}).items():
            values |= _leaves(f"metadata/{key}", value)
        for name in handle.keys():
            values[f"tensors/{name}"] = _digest(handle.get_tensor(name))
    return values


def _hf_values(folder: Path) -> dict[str, str]:
    """An hf folder: its weights as a safetensors file, its config.json's leaves, its card's front matter leaves and
    the digest of its text."""
    from pillar_cli.release.card import front_matter_of

    values = {f"{HF_WEIGHTS}/{key}": value for key, value in _safetensors_values(folder / HF_WEIGHTS).items()}
    values |= _leaves("config.json", (folder / "config.json").read_text())
    card = (folder / "README.md").read_text()
    values |= _leaves("README.md/front", front_matter_of(card) or {})
    values["README.md/text"] = hashlib.sha256(card.encode()).hexdigest()[:16]
    return values


def _zip_values(path: Path) -> dict[str, str]:
    """A TorchScript archive: its extra files parsed, every other member by digest."""
    values: dict[str, str] = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            data = archive.read(member)
            short = member.split("/", 1)[-1]  # the archive's own top folder is named after the file
            if "/extra/" in f"/{short}":
                values |= _leaves(f"members/{short}", data.decode())
            else:
                values[f"members/{short}"] = hashlib.sha256(data).hexdigest()[:16]
    return values


def _short(text: str | None, limit: int = 80) -> str:
    text = "(absent)" if text is None else text
    return text if len(text) <= limit else text[:limit - 1] + "…"
