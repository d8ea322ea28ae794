"""pillar audit --neighbours: the pipeline's commands run in this process, each inside its run's folder, and the
report of what the shipped files hold deterministically."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import tempfile
from pathlib import Path

import click

from pillar_cli.audit.neighbours import NeighbourPlan, neighbours
from pillar_cli.cli.common import print_json, print_table, stderr
from pillar_cli.errors import PillarError, PrivacyError, UsageError
from pillar_cli.version import PROGRAM


def check_neighbours(embeddings: str | None, train: str, fit_pca: str, export: str, runs: int, removed_row: int,
                     remove_person: bool, workdir: Path | None, as_json: bool) -> None:
    """Run the check of the pipeline train-private (options `train`, quoted as on a command line) → release →
    export (the comma-separated formats `export`) in `workdir` (kept) or a temporary folder; print what it found;
    exit 5 if anything."""
    if embeddings is None:
        raise UsageError("give the embeddings whose pipeline the neighbours check runs")
    formats = [name.strip() for name in export.split(",") if name.strip()]
    plan = NeighbourPlan(shlex.split(train), shlex.split(fit_pca), formats, runs, removed_row, remove_person)
    folder = workdir or Path(tempfile.mkdtemp(prefix="pillar-neighbours-"))
    try:
        findings, files = neighbours(Path(embeddings).resolve(), plan, folder, _run_in_folder)
    finally:
        if workdir is None:
            shutil.rmtree(folder, ignore_errors=True)
    rows = [vars(finding) for finding in findings]
    if as_json:
        print_json({"files": files, "runs_per_side": plan.runs, "removed_row": plan.removed_row,
                    "removed": "its person" if remove_person else "the row", "findings": rows})
    elif rows:
        print_table(f"{len(rows)} stored value(s) follow the private rows deterministically", rows,
                    ["file", "value", "with_row", "without_row"])
    else:
        removed = f"the person of private row {plan.removed_row}" if remove_person else \
            f"private row {plan.removed_row}"
        stderr.print(f"{len(files)} shipped files, {plan.runs} runs with and without {removed}: no stored value "
                     "follows the private rows deterministically")
    if findings:
        raise PrivacyError(f"{len(findings)} stored value(s) of the shipped files are a deterministic function of the "
                           f"private rows (first: {findings[0].file} {findings[0].value})")


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
    except click.ClickException as err:
        code, captured = err.exit_code, io.StringIO(err.format_message())
    finally:
        os.chdir(previous)
    if code:
        last = (captured.getvalue().strip().splitlines() or ["(no message)"])[-1]
        raise PillarError(f"the neighbours check's step `pillar {' '.join(argv)}` failed: {last}")
