"""The `pillar` command line: a thin typer shell over the library, one module per stage.

Commands parse options, call the library, write the artifact and render the result; they may import any domain,
and no library module imports them.
"""

from __future__ import annotations

import signal

import typer

from pillar_cli.cli.audit import audit
from pillar_cli.cli.boundary import OneLineUsageErrors
from pillar_cli.cli.check import check_assumptions
from pillar_cli.cli.embed import embed
from pillar_cli.cli.evaluate import evaluate
from pillar_cli.cli.export import export
from pillar_cli.cli.finetune import finetune, pretrain
from pillar_cli.cli.fit_pca import fit_pca
from pillar_cli.cli.gsd import gsd
from pillar_cli.cli.inspect import inspect
from pillar_cli.cli.predict import predict
from pillar_cli.cli.release import release
from pillar_cli.cli.report import report
from pillar_cli.cli.run import run
from pillar_cli.cli.train import train_private
from pillar_cli.version import PROGRAM

app = typer.Typer(
    name=PROGRAM,
    help="Semi-private learning: PILLAR (DP-SGD on public low-rank projections) and Gradient Subspace Distance.\n\n"
         "Stages exchange HDF5 artifacts: embed → fit-pca → check-assumptions / train-private → evaluate; gsd ranks "
         "candidate public datasets; pretrain → finetune trains whole networks (the linear probe's comparison); release "
         "writes one private classifier with its privacy statement, predict applies it to new rows, export writes it "
         "as ONNX, TorchScript or safetensors.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=OneLineUsageErrors,
)
app.command("embed")(embed)
app.command("fit-pca")(fit_pca)
app.command("check-assumptions")(check_assumptions)
app.command("train-private")(train_private)
app.command("pretrain")(pretrain)
app.command("finetune")(finetune)
app.command("gsd")(gsd)
app.command("evaluate")(evaluate)
app.command("report")(report)
app.command("release")(release)
app.command("predict")(predict)
app.command("export")(export)
app.command("audit")(audit)
app.command("inspect")(inspect)
app.command("run")(run)


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    app()


def _stop(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler's kill, a timeout) unwinds like Ctrl-C: temporary files are removed, an interrupted
    embedding keeps its rows for --resume, and the command ends with one line and exit 130."""
    raise KeyboardInterrupt
