"""The `pillar` command line: a thin typer shell over the library, one module per stage.

Commands parse options, call the library, write the artifact and render the result; they may import any
domain, and no library module imports them. Each is imported when it runs, so that `pillar --help` starts at
once.
"""

from __future__ import annotations

import functools
import importlib
import signal

import click
import typer
from typer.core import TyperCommand

from pillar_cli.cli.boundary import OneLineUsageErrors, interrupt
from pillar_cli.cli.help import PanelledCommand
from pillar_cli.version import PROGRAM, __version__

# name → (module of pillar_cli.cli, function, the line `pillar --help` lists it with). A command's module, and
# the libraries it needs (torch, scikit-learn, timm, opacus), are imported only when it runs or shows its own
# help.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "embed": (
        "embed",
        "embed",
        "Embed a dataset with a frozen backbone into private / public / val / test features.",
    ),
    "fit-pca": (
        "fit_pca",
        "fit_pca",
        "Fit the scaler and principal components on PUBLIC unlabelled embeddings.",
    ),
    "check-assumptions": (
        "check",
        "check_assumptions",
        "Measure ξ_k, margins and eigengaps of the top-k public subspace; recommend k.",
    ),
    "train-private": (
        "train",
        "train_private",
        "Train DP linear classifiers for every (method, k, ε) and hyper-parameter; choose one run per cell.",
    ),
    "pretrain": ("finetune", "pretrain", "Train a network WITHOUT privacy on a public labelled split."),
    "finetune": ("finetune", "finetune", "DP-SGD on every weight of a network, for every ε and seed."),
    "gsd": ("gsd", "gsd", "Rank candidate public datasets by GSD to the private data: smaller is closer."),
    "evaluate": (
        "evaluate",
        "evaluate",
        "Metrics of the model selected per (method, k, ε) on a labelled split.",
    ),
    "report": (
        "report",
        "report",
        "Tables and figures across evaluations: one row per method, one column per evaluation and ε.",
    ),
    "release": ("release", "release", "Write ONE classifier of a model with its privacy statement."),
    "predict": ("predict", "predict", "Classify new rows or raw inputs with a released classifier."),
    "export": ("export", "export", "Write a released classifier as ONNX, TorchScript or safetensors."),
    "audit": (
        "audit",
        "audit",
        "Check a guarantee: ledger, canaries, white-box or neighbours (sub-commands).",
    ),
    "inspect": ("inspect", "inspect", "Show an artifact's kind, provenance chain, attributes and datasets."),
    "verify": ("verify", "verify", "Check a release or export: signature, hashes, statement, ε recomputed."),
    "page": (
        "page",
        "page",
        "One self-contained HTML page of a release: its guarantee, what it means, its accuracy.",
    ),
    "run": ("run", "run", "Run a named pipeline of examples.yaml (or another file)."),
}


class LazyCommands(OneLineUsageErrors):
    """The `pillar` group: lists its commands from COMMANDS and imports one only to run it or show its
    help."""

    listing = False

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        return TyperCommand(name, short_help=COMMANDS[name][2]) if self.listing else load_command(name)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.listing = True  # the group's own help names its commands; it does not need to import them
        try:
            super().format_help(ctx, formatter)
        finally:
            self.listing = False


@functools.cache
def load_command(name: str) -> click.Command:
    module, function, summary = COMMANDS[name]
    command = getattr(importlib.import_module(f"pillar_cli.cli.{module}"), function)
    if isinstance(command, typer.Typer):  # a command of sub-commands (audit)
        group = typer.main.get_group(command)
        group.name, group.short_help = name, summary
        return group
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    single.command(name, short_help=summary, cls=PanelledCommand)(command)
    return typer.main.get_command(single)


def command_of(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command the words after `pillar` run (a sub-command's own, under a group) and the words after its
    name."""
    command, rest = load_command(words[0]), list(words[1:])
    while rest and rest[0] in getattr(command, "commands", {}):  # typer's groups are not click's Group class
        command, rest = command.commands[rest[0]], rest[1:]
    return command, rest


def runnable_commands() -> dict[str, click.Command]:
    """Every command a line can run, by the words that name it: `embed`, …, `audit ledger`, `audit
    canaries`."""
    runnable = {}
    for name in COMMANDS:
        command = load_command(name)
        subcommands = getattr(command, "commands", None) or {"": command}
        runnable |= {f"{name} {sub}".strip(): leaf for sub, leaf in subcommands.items()}
    return runnable


app = typer.Typer(
    name=PROGRAM,
    help="Semi-private learning: PILLAR (DP-SGD on public low-rank projections) and Gradient Subspace "
    "Distance.\n\n"
    "Stages exchange HDF5 artifacts: embed → fit-pca → check-assumptions / train-private → evaluate; gsd "
    "ranks "
    "candidate public datasets; pretrain → finetune trains whole networks (the linear probe's comparison); "
    "release "
    "writes one private classifier with its privacy statement, predict applies it to new rows, export writes "
    "it as ONNX, TorchScript or safetensors.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=LazyCommands,
    rich_markup_mode=None,  # plain text, as every command's help (pillar_cli.cli.help)
)


def _print_version(asked: bool) -> None:
    if asked:
        print(f"{PROGRAM} {__version__}")
        raise typer.Exit()


@app.callback()
def _pillar(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
    quiet: bool = typer.Option(
        False,
        "--quiet",
        "-q",
        envvar="PILLAR_QUIET",
        help="Print results, warnings and errors only: no progress, no notes (also PILLAR_QUIET=1).",
    ),
) -> None:
    """The group's own options (--version, --quiet, --help); its commands come from COMMANDS."""
    from pillar_cli.cli.common import stderr

    stderr.quiet = quiet


def main() -> None:
    """SIGINT and SIGTERM unwind alike (cli/boundary.py): temporary files are removed, an interrupted
    embedding keeps its rows for --resume, and the command ends with one line and exit 130."""
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    app()
