"""pillar audit neighbours: each side's source embedded again as the embeddings file records it (less the records
deleted), the pipeline's commands run in this process, each inside its run's folder, and the report of what the
shipped files hold deterministically."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from pillar_cli import artifacts
from pillar_cli.audit.neighbours import NeighbourPlan, neighbours
from pillar_cli.cli.boundary import ClickError
from pillar_cli.cli.common import print_json, print_table, stderr
from pillar_cli.cli.sources import parse_params
from pillar_cli.errors import PillarError, PrivacyError, UsageError
from pillar_cli.version import PROGRAM


def check_neighbours(embeddings: str, train: str, fit_pca: str, export: str, runs: int,
                     removed_row: int | None, remove_person: bool, workdir: Path | None, as_json: bool) -> None:
    """Run the check of the pipeline embed (as `embeddings` was made, from its source) → fit-pca → train-private
    (options `train`, quoted as on a command line) → release → export (the comma-separated formats `export`) in
    `workdir` (kept) or a temporary folder; print what it found; exit 5 if anything."""
    formats = [name.strip() for name in export.split(",") if name.strip()]
    plan = NeighbourPlan(shlex.split(train), shlex.split(fit_pca), formats, runs, removed_row, remove_person)
    _parsed_ahead(plan)
    embed = _embedding_again(Path(embeddings))
    folder = workdir or Path(tempfile.mkdtemp(prefix="pillar-neighbours-"))
    try:
        found = neighbours(Path(embeddings).resolve(), plan, folder, _run_in_folder, embed)
    finally:
        if workdir is None:
            shutil.rmtree(folder, ignore_errors=True)
    rows, removed = [vars(finding) for finding in found.findings], found.removed
    if as_json:
        print_json({"files": found.files, "runs_per_side": found.runs, "removed": vars(removed), "findings": rows})
    elif rows:
        print_table(f"{len(rows)} stored value(s) follow the private rows deterministically (in {found.runs} runs a "
                    "side)", rows, ["file", "value", "with_row", "without_row"])
    else:
        stderr.print(f"{len(found.files)} shipped files, {found.runs} runs of the source with and without "
                     f"{removed.why} (label {removed.label}): no stored value follows the private rows "
                     "deterministically")
    if rows:
        first = found.findings[0]
        raise PrivacyError(f"{len(rows)} stored value(s) of the shipped files are a deterministic function of the "
                           f"private rows in {found.runs} runs a side (first: {first.file} {first.value})")


def _parsed_ahead(plan: NeighbourPlan) -> None:
    """fit-pca's and train-private's command lines parsed by those commands before anything is embedded: a flag they
    do not take is one line now, not once the source has been embedded again."""
    from pillar_cli.cli import command_of

    for line, option in ((plan.fit_pca_line, "--fit-pca"), (plan.train_line, "--train")):
        command, rest = command_of(line)
        try:
            command.make_context(f"{PROGRAM} {line[0]}", rest)
        except ClickError as err:
            raise UsageError(f"{option}: {err.format_message()}",
                             hint=f"{option} takes `{PROGRAM} {line[0]}`'s options") from err


def _embedding_again(embeddings: Path) -> Callable[[np.ndarray, Path], None]:
    """What embeds the source of `embeddings` again, from scratch, as its recorded options say, less some of its
    rows: the data holder's rerun of the documented pipeline after deleting records."""
    from pillar_cli.embedding.job import EmbeddingJob
    from pillar_cli.embedding.request import EmbedRequest

    provenance = artifacts.read(embeddings, "embeddings").provenance
    options = provenance.config or {}
    if options.get("merge") or "source" not in options:
        raise UsageError(f"{embeddings} records no one embed run to repeat (made by merging shards, or by another "
                         "tool)", hint="embed the source in one run (pillar embed ... -o FILE) and check that file")
    request = EmbedRequest.from_options(options, parse_params(options.get("param") or []))

    def embed(removed: np.ndarray, target: Path) -> None:
        dataset = request.dataset(removed)
        job = EmbeddingJob.of(dataset, request.plan)
        stderr.print(f"[dim]{target.parent.name}: pillar embed (the source less {len(removed)} record(s))[/dim]")
        job.run(request.embedder(job.dataset.inputs.shape[1:]), target, options,
                lambda artifact: artifacts.write(target, artifact, config=options, command=provenance.command,
                                                 force=True))

    return embed


def _run_in_folder(argv: list[str], folder: Path) -> None:
    """One pillar command line, in this process, with `folder` as the working directory (so that the files of every
    run carry the same paths and command lines); its output is kept back unless it fails."""
    import typer

    from pillar_cli.cli import app

    pillar = typer.main.get_command(app)
    previous, captured = Path.cwd(), io.StringIO()
    stderr.print(f"[dim]{folder.parent.name}/{folder.name}: pillar {' '.join(argv)}[/dim]")
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(captured):
            code = pillar.main(argv, prog_name=PROGRAM, standalone_mode=False)
    except ClickError as err:
        code, captured = err.exit_code, io.StringIO(err.format_message())
    finally:
        os.chdir(previous)
    if code:
        last = (captured.getvalue().strip().splitlines() or ["(no message)"])[-1]
        raise PillarError(f"the neighbours check's step `pillar {' '.join(argv)}` failed: {last}")
