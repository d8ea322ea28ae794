"""pillar run: execute a named pipeline from examples.yaml, stage by stage, in this process."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import stderr
from pillar_cli.cli.pipeline import load_pipeline
from pillar_cli.errors import PillarError, UsageError
from pillar_cli.version import PROGRAM


@cli_errors
def run(
    ctx: typer.Context,
    file: Path = typer.Argument(..., help="Pipelines file, e.g. examples.yaml."),
    name: str = typer.Argument(..., help="Pipeline name."),
    var: list[str] = typer.Option([], "--var", help="Override a pipeline variable: NAME=VALUE (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Pass --force to every step that writes outputs."),
) -> None:
    """Run a named pipeline: each step is a pillar command line; the first failing step stops it.

    Example: pillar run examples.yaml cifar10-sl-figure4 --var data=/data/cifar-10-batches-py --var workdir=runs/c10
    """
    pillar = ctx.find_root().command  # the `pillar` group this command belongs to
    pipeline = load_pipeline(file, name, dict(_parse_var(item) for item in var))
    if pipeline.workdir is not None:
        pipeline.workdir.mkdir(parents=True, exist_ok=True)
    for number, argv in enumerate(pipeline.steps, start=1):
        stderr.print(f"[bold]\\[{number}/{len(pipeline.steps)}][/bold] pillar {' '.join(argv)}")
        try:
            pillar.main(argv + _force(pillar, argv, force), prog_name=PROGRAM)  # the step reports its own error
        except SystemExit as stop:
            if stop.code:
                raise PillarError(f"pipeline '{name}' stopped at step {number} (exit {stop.code})") from None


def _parse_var(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--var takes NAME=VALUE; got '{item}'")
    return key.strip(), value


def _force(pillar, argv: list[str], force: bool) -> list[str]:
    """['--force'] for a step whose command takes it, when the pipeline runs with --force."""
    command = pillar.get_command(None, argv[0]) if argv else None
    takes_force = command is not None and any(param.name == "force" for param in command.params)
    return ["--force"] if force and takes_force and "--force" not in argv else []
