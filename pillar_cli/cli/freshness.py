"""Whether a pipeline step needs to run.

A step is up to date when every output it names exists as it was last written, the same command line wrote it,
and every input it names on its command line or in its --config file — artifact or not: a source file or
folder, a CSV of persons, a file of class names — is as it was then. `pillar run` records, per step, each
input's and output's size, modification time and sha256 (a folder: the size and modification time of every
file under it) in a lock file (`RunLock`); a file whose size and time are unchanged is taken as unchanged, one
whose size or time moved is hashed again. Outputs of any kind are covered (a predictions CSV, an export, a
plot), so a step whose output is not an artifact reruns when it should and is skipped when it may. A step the
lock knows nothing of falls back on its output's provenance: the same command, the same resolved options, and
each recorded input still holding its content hash.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import click

from pillar_cli.artifacts import read_provenance
from pillar_cli.cli.common import invocation
from pillar_cli.errors import PillarError

RUN, SKIP, RERUN = "run", "skip", "rerun"
OUTPUTS = (
    "out",
    "plot",
    "csv",
    "markdown",
    "plot_xi",
    "plot_spectrum",
    "methods_plot",
    "fraction_plot",
    "public_plot",
    "dimension_plot",
)  # the parameters that name what a command writes


def step_files(command: click.Command, argv: list[str]) -> tuple[list[Path], list[Path]] | None:
    """(the inputs, the outputs) a step names: outputs by the parameters that name them, inputs every other
    word of its command line that is an existing file or folder (after `KEY=`, before `:SPLIT`); None when the
    line does not parse (the step reports its own usage error)."""
    try:
        ctx = command.make_context(argv[0], list(argv[1:]))
    except click.ClickException:
        return None
    outputs = [Path(value) for name in OUTPUTS if (value := ctx.params.get(name)) not in (None, "-")]
    named = {path.resolve() for path in outputs}
    inputs: list[Path] = []
    for word in [*argv[1:], *_set_by_config(ctx)]:
        for candidate in {word, word.partition("=")[2], word.rpartition(":")[0]} - {""}:
            path = Path(candidate)
            if path.exists() and path.resolve() not in named and path not in inputs:
                inputs.append(path)
    return inputs, outputs


def _set_by_config(ctx: click.Context) -> list[str]:
    """The words of the option values the step's --config file set (a source's path, a class list): inputs
    as much as the words of its command line."""
    words: list[str] = []
    for name, value in ctx.params.items():
        source = ctx.get_parameter_source(name)
        if getattr(source, "name", None) != "DEFAULT_MAP":  # by name: typer's click has its own enum
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, (str, Path)):
                words.append(str(item))
    return words


def step_state(command: click.Command, argv: list[str], recorded: dict | None = None) -> tuple[str, str]:
    """(RUN, "") when the step has written nothing yet, or nothing the lock or its provenance vouch for (the
    step itself then refuses to replace it without --force); (SKIP, why) when its outputs are up to date;
    (RERUN, why) when an output is missing or an input or option changed since. `recorded`: what the lock
    holds of this step."""
    files = step_files(command, argv)
    if files is None:
        return RUN, ""
    inputs, outputs = files
    present = [path for path in outputs if path.exists()]
    if not present:
        return RUN, ""
    if missing := [path for path in outputs if not path.exists()]:
        return RERUN, f"its output {missing[0]} is missing"
    if recorded is not None:
        return _against_lock(recorded, inputs, outputs)
    return _against_provenance(command, argv, outputs[0])


def _against_lock(recorded: dict, inputs: list[Path], outputs: list[Path]) -> tuple[str, str]:
    for role, paths, what in (
        ("outputs", outputs, "its output {} was changed since it was written"),
        ("inputs", inputs, "its input {} changed since it last ran"),
    ):
        known = recorded.get(role, {})
        for path in paths:
            if str(path) not in known or not same_file(path, known[str(path)]):
                return RERUN, what.format(path)
        if role == "inputs" and (gone := sorted(set(known) - {str(path) for path in paths})):
            return RERUN, f"it no longer reads {gone[0]}"
    return SKIP, f"{outputs[0]} is up to date (the same command line, its inputs unchanged)"


def _against_provenance(command: click.Command, argv: list[str], out: Path) -> tuple[str, str]:
    try:
        _, provenance = read_provenance(out)
    except PillarError:
        return RUN, ""
    if provenance.command[1:2] != [argv[0]]:
        return RUN, ""
    _, options = invocation(command.make_context(argv[0], list(argv[1:])))
    if json.loads(json.dumps(options, default=str)) != provenance.config:
        return RERUN, f"{out} was written with other options"
    for ref in provenance.inputs:
        if not ref.content_hash:  # named without its hash (a shareable file's private input): cannot vouch
            return RUN, ""
        if _content_hash(ref.path) != ref.content_hash:
            return RERUN, f"its input {ref.path} changed since {out} was written"
    return SKIP, f"{out} is up to date (same options, inputs unchanged)"


def _content_hash(path: str) -> str | None:
    try:
        return read_provenance(path)[1].content_hash
    except PillarError:
        return None


def file_state(path: Path) -> dict:
    """What the lock records of a file (size, modification time, sha256) or a folder (each file's relative
    path, size and modification time, digested)."""
    if path.is_dir():
        digest = hashlib.sha256()
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            stat = file.stat()
            digest.update(f"{file.relative_to(path)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
        return {"folder": digest.hexdigest()}
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": _sha256(path)}


def same_file(path: Path, recorded: dict) -> bool:
    """Whether `path` is as recorded: a folder by its listing; a file by size and time, or else by content."""
    if not path.exists():
        return False
    if "folder" in recorded or path.is_dir():
        return path.is_dir() and file_state(path).get("folder") == recorded.get("folder")
    stat = path.stat()
    if (stat.st_size, stat.st_mtime_ns) == (recorded.get("size"), recorded.get("mtime_ns")):
        return True
    return stat.st_size == recorded.get("size") and _sha256(path) == recorded.get("sha256")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


WORKING_FILE = (
    "working file: the size, modification time and sha256 of every file each step read and wrote, your "
    "data among them; keep it beside your data: do not share or commit it"
)


class RunLock:
    """What each step of a pipeline read and wrote when it last ran, by pipeline and command line: a JSON file
    in the pipeline's working directory (its `workdir` variable), else beside the pipelines file. It is a
    working file (`about` says so in the file): the hashes and sizes of a private source tell its content."""

    def __init__(self, path: Path, pipeline: str):
        self.path, self.pipeline = path, pipeline
        try:
            entries = json.loads(path.read_text()).get(pipeline, {})
        except (OSError, ValueError, AttributeError):
            entries = {}
        self.entries = (
            {argv: entry for argv, entry in entries.items() if _readable(entry)}
            if isinstance(entries, dict)
            else {}
        )  # an entry of another shape (edited by hand) is as if not recorded

    def get(self, argv: list[str]) -> dict | None:
        return self.entries.get(" ".join(argv))

    def record(self, argv: list[str], inputs: list[Path], outputs: list[Path]) -> None:
        """The step's files as they are now, written at once (a later failing step keeps what ran)."""
        self.entries[" ".join(argv)] = {
            "inputs": {str(p): file_state(p) for p in inputs if p.exists()},
            "outputs": {str(p): file_state(p) for p in outputs if p.exists()},
        }
        try:
            document = json.loads(self.path.read_text()) if self.path.exists() else {}
        except (OSError, ValueError):
            document = {}
        document = document if isinstance(document, dict) else {}
        document["about"], document[self.pipeline] = WORKING_FILE, self.entries
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.partial")
        try:
            partial.write_text(json.dumps(document, indent=1))
            os.replace(partial, self.path)
        except OSError:
            partial.unlink(missing_ok=True)  # a lock that cannot be written only costs reruns


def _readable(entry: object) -> bool:
    """A step's record as `record` writes it: inputs and outputs, each a mapping of paths to file states."""
    return isinstance(entry, dict) and all(
        isinstance(entry.get(role), dict) and all(isinstance(state, dict) for state in entry[role].values())
        for role in ("inputs", "outputs")
    )
