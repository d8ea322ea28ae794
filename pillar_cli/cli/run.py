"""pillar run: execute a named pipeline from examples.yaml, stage by stage, in this process."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import stderr
from pillar_cli.cli.freshness import RERUN, RUN, SKIP, RunLock, step_files, step_state
from pillar_cli.cli.pipeline import list_pipelines_in, load_pipeline
from pillar_cli.errors import PillarError, UsageError
from pillar_cli.version import PROGRAM


@cli_errors
def run(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="Pipelines file, e.g. examples.yaml."),
    name: str | None = typer.Argument(None, help="Pipeline name (--list shows them)."),
    var: list[str] = typer.Option([], "--var", help="Override a pipeline variable: NAME=VALUE (repeatable)."),
    list_pipelines: bool = typer.Option(
        False, "--list", help="List the file's pipelines and their steps; run none."
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Run every step, passing --force to those that write outputs "
        "(without it a step whose output is up to date is skipped).",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what each step would do (run, run again, skip) and why; run none."
    ),
) -> None:
    """Run a named pipeline: each step is a pillar command line; the first failing step stops it. A step whose
    outputs the same command line wrote from inputs that have not changed since (source files and folders
    included) is skipped; one whose inputs or options changed, or an output of which is missing, is run again
    over its outputs; each says which. What each step read and wrote is kept in .pillar-run.json of the
    pipeline's workdir (else beside the pipelines file).

    Example: pillar run examples.yaml --list

    Example: pillar run examples.yaml cifar10-sl-figure4 --var data=/data/cifar-10-batches-py --var
    workdir=runs/c10

    Example: pillar run examples.yaml mnist-demo --dry-run
    """
    if list_pipelines or name is None:
        return _list(file, listed=list_pipelines)
    pillar = ctx.find_root().command  # the `pillar` group this command belongs to
    pipeline = load_pipeline(file, name, dict(_parse_var(item) for item in var))
    if pipeline.workdir is not None:
        pipeline.workdir.mkdir(parents=True, exist_ok=True)
    lock = RunLock((pipeline.workdir or file.parent) / ".pillar-run.json", name)
    for number, argv in enumerate(pipeline.steps, start=1):
        stderr.print(
            f"[bold]\\[{number}/{len(pipeline.steps)}][/bold] pillar {' '.join(argv)}", soft_wrap=True
        )
        command = pillar.get_command(ctx, argv[0]) if argv else None
        recorded = lock.get(argv)
        state, why = (RUN, "") if force or command is None else step_state(command, argv, recorded)
        _say(state, why, dry_run)
        if dry_run:
            continue
        if state != SKIP:
            _run_step(
                pillar, argv + _force(command, argv, force or state == RERUN), f"pipeline '{name}'", number
            )
        if (
            command is not None
            and (state != SKIP or recorded is None)
            and (files := step_files(command, argv))
        ):
            lock.record(argv, *files)


def _say(state: str, why: str, dry_run: bool) -> None:
    """What a step does (or, in a dry run, would do) and why, where there is something to say."""
    if dry_run:
        said = {SKIP: "would skip", RERUN: "would run again", RUN: "would run"}[state]
        stderr.print(f"  {said}: {why or 'no output of it is there yet'}", soft_wrap=True)
    elif why:
        stderr.print(f"  {'skipped' if state == SKIP else 'run again'}: {why}", soft_wrap=True)


def _run_step(pillar, argv: list[str], pipeline: str, number: int) -> None:
    """One step, in this process; it reports its own error, and a failure stops the pipeline."""
    try:
        pillar.main(argv, prog_name=PROGRAM)
    except SystemExit as stop:
        if stop.code:
            raise PillarError(f"{pipeline} stopped at step {number} (exit {stop.code})") from None


def _list(file: Path, listed: bool) -> None:
    """With --list, each pipeline of the file (name, steps, the first sentence of its description); without a
    name, a usage error naming them."""
    pipelines = list_pipelines_in(file)
    if not pipelines:
        raise UsageError(f"{file} holds no pipelines")
    if not listed:
        raise UsageError(
            f"name a pipeline of {file} to run (available: {', '.join(p.name for p in pipelines)})",
            hint=f"pillar run {file} --list",
        )
    width = max(len(p.name) for p in pipelines)
    for pipeline in pipelines:
        first = " ".join(pipeline.description.split()).split(". ")[0].split(": ")[0]
        print(f"{pipeline.name:<{width}}  {len(pipeline.steps):>3} steps  {first}".rstrip())


def _parse_var(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--var takes NAME=VALUE; got '{item}'")
    return key.strip(), value


def _force(command, argv: list[str], force: bool) -> list[str]:
    """['--force'] for a step whose command takes it, when the pipeline runs with --force or runs it again."""
    takes_force = command is not None and any(param.name == "force" for param in command.params)
    return ["--force"] if force and takes_force and "--force" not in argv else []
