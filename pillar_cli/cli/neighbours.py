"""pillar audit neighbours: fit-pca's and train-private's options parsed by those commands into the plan's
typed recipe and request, each side's source embedded again as the embeddings file records it (less the
records deleted), the pipeline run by library calls (audit/neighbours.py), and the report of what the shipped
files hold deterministically."""

from __future__ import annotations

import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from pillar_cli import artifacts
from pillar_cli.audit.neighbours import NeighbourPlan, neighbours
from pillar_cli.cli.boundary import ClickError
from pillar_cli.cli.common import print_json, print_table, stderr
from pillar_cli.cli.sources import parse_params
from pillar_cli.cli.sweep_options import sweep_request, sweep_sources
from pillar_cli.errors import PrivacyError, UsageError
from pillar_cli.methods.inputs import SweepSources
from pillar_cli.methods.request import SweepRequest
from pillar_cli.projection.fitting import ProjectionRecipe
from pillar_cli.version import PROGRAM

if TYPE_CHECKING:
    from pillar_cli.embedding.features import Embedder


def check_neighbours(
    embeddings: str,
    train: str,
    fit_pca: str,
    export: str,
    runs: int,
    removed_row: int | None,
    remove_person: bool,
    workdir: Path | None,
    as_json: bool,
) -> None:
    """Run the check of the pipeline embed (as `embeddings` was made, from its source) → fit-pca →
    train-private (options `train`, quoted as on a command line) → release → export (the comma-separated
    formats `export`) in `workdir` (kept) or a temporary folder; print what it found; exit 5 if anything."""
    formats = [name.strip() for name in export.split(",") if name.strip()]
    plan = NeighbourPlan(
        _recipe(shlex.split(fit_pca)),
        *_request(shlex.split(train)),
        formats,
        runs,
        removed_row,
        remove_person,
    )
    embed = _embedding_again(Path(embeddings))
    folder = _runs_folder(workdir, Path(embeddings))
    try:
        found = neighbours(
            Path(embeddings).resolve(),
            plan,
            folder.resolve(),
            embed,
            lambda line: stderr.print(f"[dim]{line}[/dim]"),
        )
    finally:
        if workdir is None:
            shutil.rmtree(folder, ignore_errors=True)
    rows, removed = [vars(finding) for finding in found.findings], found.removed
    if as_json:
        print_json(
            {
                "files": found.files,
                **({"runs_kept_in": str(folder)} if workdir is not None else {}),
                "runs_per_side": found.runs,
                "removed": vars(removed),
                "findings": rows,
                "dismissed": [vars(finding) for finding in found.dismissed],
            }
        )
    elif rows:
        print_table(
            f"{len(rows)} stored value(s) follow the private rows deterministically (in {found.runs} runs a "
            "side)",
            rows,
            ["file", "value", "with_row", "without_row"],
        )
    else:
        stderr.print(
            f"{len(found.files)} shipped files, {found.runs} runs of the source with and without "
            f"{removed.why} (label {removed.label}): no stored value follows the private rows "
            "deterministically"
        )
    if rows:
        first = found.findings[0]
        raise PrivacyError(
            f"{len(rows)} stored value(s) of the shipped files are a deterministic function of the "
            f"private rows in {found.runs} runs a side (first: {first.file} {first.value})"
        )


def _runs_folder(workdir: Path | None, embeddings: Path) -> Path:
    """A fresh folder of the check's own, named by mkdtemp so that nothing of the user's can collide with it:
    inside `workdir` (kept) or a temporary one. A workdir that holds the embeddings or their source is
    refused: the runs would write among the inputs."""
    if workdir is None:
        return Path(tempfile.mkdtemp(prefix="pillar-neighbours-"))
    if workdir.exists() and not workdir.is_dir():
        raise UsageError(f"--workdir {workdir} is a file, not a folder")
    source = (artifacts.read(embeddings, "embeddings").provenance.config or {}).get("path")
    for given in (embeddings, *([Path(source)] if isinstance(source, str) else [])):
        if given.resolve().is_relative_to(workdir.resolve()):
            raise UsageError(
                f"--workdir {workdir} holds {given}, an input of the check: its runs would write among "
                "the inputs",
                hint="give a folder that holds none of them, or leave --workdir out",
            )
    workdir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="neighbours-", dir=workdir))
    stderr.print(f"[dim]the runs are kept in {folder}[/dim]")
    return folder


def _recipe(options: list[str]) -> ProjectionRecipe:
    """fit-pca's recipe, as its options `options` set it (parsed by the command itself: one line for a flag it
    does not take, before anything is embedded)."""
    params = _parsed(["fit-pca", "emb.h5:public", *options, "-o", "pca.h5"], "--fit-pca")
    for flag, name in (("--public-from", "public_from"), ("--noise-seed", "noise_seed")):
        if params[name] is not None:
            raise UsageError(
                f"--fit-pca: each run fits its projection on its own embeddings with fresh noise, not "
                f"with {flag}"
            )
    return ProjectionRecipe(
        params["k_max"],
        params["fraction"],
        params["standardize"],
        params["second_moment"],
        params["components"],
        params["dp_eps"],
        params["dp_delta"],
        params["accountant"],
    )


def _request(options: list[str]) -> tuple[SweepRequest, SweepSources]:
    """train-private's request and sources, as its options `options` set them (parsed by the command
    itself)."""
    params = _parsed(["train-private", "emb.h5", "-p", "pca.h5", *options, "-o", "model.h5"], "--train")
    return sweep_request(params), sweep_sources(params)


def _parsed(line: list[str], option: str) -> dict[str, Any]:
    """The parameters a command's parser makes of `line`; a flag it does not take is one line naming
    `option`."""
    from pillar_cli.cli import command_of

    command, rest = command_of(line)
    try:
        return command.make_context(f"{PROGRAM} {line[0]}", rest).params
    except ClickError as err:
        raise UsageError(
            f"{option}: {err.format_message()}", hint=f"{option} takes `{PROGRAM} {line[0]}`'s options"
        ) from err


def _embedding_again(embeddings: Path) -> Callable[[np.ndarray, Path], None]:
    """What embeds the source of `embeddings` again, from scratch, as its recorded options say, less some of
    its rows: the data holder's rerun of the documented pipeline after deleting records."""
    from pillar_cli.embedding.job import EmbeddingJob
    from pillar_cli.embedding.request import EmbedRequest

    provenance = artifacts.read(embeddings, "embeddings").provenance
    options = provenance.config or {}
    if options.get("merge") or "source" not in options:
        raise UsageError(
            f"{embeddings} records no one embed run to repeat (made by merging shards, or by another tool)",
            hint="embed the source in one run (pillar embed ... -o FILE) and check that file",
        )
    request = EmbedRequest.from_options(options, parse_params(options.get("param") or []))
    embedders: dict[tuple[int, ...], Embedder] = {}  # one frozen backbone, built once, embeds both sides

    def embed(removed: np.ndarray, target: Path) -> None:
        dataset = request.dataset(removed)
        job = EmbeddingJob.of(dataset, request.plan)
        stderr.print(
            f"[dim]{target.parent.name}: pillar embed (the source less {len(removed)} record(s))[/dim]"
        )
        shape = tuple(job.dataset.inputs.shape[1:])
        if shape not in embedders:
            embedders[shape] = request.embedder(shape)
        job.run(
            embedders[shape],
            target,
            options,
            lambda artifact: artifacts.write(
                target, artifact, config=options, command=provenance.command, force=True
            ),
        )

    return embed
