"""The training configuration `pillar audit canaries` and `white-box` train, given as one quoted option in the
flags train-private spells it with (`--train="--k 10 --eps 1 --lr 0.5"`). It is parsed by a command of its
own, so that a wrong flag is one line naming it and `--train=--help` lists every flag with its default."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any

import typer

from pillar_cli.cli.boundary import ClickError
from pillar_cli.cli.common import float_list, int_list
from pillar_cli.cli.help import PanelledCommand
from pillar_cli.cli.method_flags import method_flags
from pillar_cli.errors import UsageError
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.base import Method
from pillar_cli.methods.catalog import DEFAULT_METHOD, auditable, get_method
from pillar_cli.methods.data import PrivacySettings
from pillar_cli.randomness import NoiseSource

TRAIN_HELP = (
    "The configuration audited, quoted, in train-private's flags: --method, --k (40), --eps (1), --lr (0.1), "
    "--steps (500), --batch-size (512; all: every row in every step), --clip (1), --delta (1e-5), "
    "--accountant (prv), --seed (0), --privacy-unit (row) and the method's own flags; "
    "--train=--help lists them."
)


def show_flags(ctx: typer.Context, value: str) -> str:
    """`--train=--help`: the configuration's flags, before any other argument is asked for."""
    if value.strip() == "--help":
        audited_configuration(value)
    return value


@dataclass(frozen=True)
class AuditedConfiguration:
    """One method's training configuration: one k, and the ε and lr values it trains heads at."""

    method: Method
    options: Any  # the method's own options (None: it has none)
    k: int | None  # None: all features
    epsilons: list[float]
    lrs: list[float]
    steps: int
    batch_size: int | None  # None: every row in every step
    delta: float
    accountant: str
    clip: float
    seed: int
    privacy_unit: str
    flags: dict  # as given: what the audit artifact records

    def configs(self, rows: int) -> list[RunConfig]:
        """A run configuration per lr, its batch every row where none was given."""
        return [RunConfig(lr, self.steps, self.batch_size or rows, self.seed) for lr in self.lrs]

    def privacy(self, noise: NoiseSource) -> PrivacySettings:
        return PrivacySettings(self.delta, self.clip, self.accountant, noise)

    def recorded(self, rows: int) -> dict:
        """What an audit artifact records of the configuration (its batch size resolved)."""
        return {
            "method": self.method.name,
            **({"options": dataclasses.asdict(self.options)} if self.options else {}),
            **self.flags,
            "batch_size": self.batch_size or rows,
        }


@method_flags(auditable())
def _configuration(
    method: str = typer.Option(DEFAULT_METHOD, help=f"The method audited: {', '.join(auditable())}."),
    k: str = typer.Option("40", help="Components ('full': no projection)."),
    eps: str = typer.Option("1", help="Target ε (white-box: a comma list, e.g. 1,4: one head per ε)."),
    delta: float = typer.Option(1e-5, help="Its δ."),
    accountant: str = typer.Option("prv", help="Its accountant."),
    lr: str = typer.Option("0.1", help="Its learning rate (white-box: a comma list: one head per ε and lr)."),
    steps: int = typer.Option(500, min=1, help="Its DP-SGD steps."),
    batch_size: str = typer.Option(
        "512",
        help="Its expected batch size (scaled with the canaries, so that the "
        "sampling rate stays); all = every row in every step.",
    ),
    clip: float = typer.Option(1.0, help="Its clipping norm."),
    seed: int = typer.Option(0, help="Seed of the training run and of the canaries."),
    privacy_unit: str = typer.Option(
        "row",
        help="The unit it protects: row or person (each person's gradient sum "
        "clipped; the canaries are persons).",
    ),
    **method_options: Any,
) -> AuditedConfiguration:
    """The configuration an audit trains."""
    audited = get_method(method)
    (k_value,) = int_list(k, "--k", allow_full=True)
    (batch,) = int_list(batch_size, "--batch-size", allow_full=True, word="all")
    return AuditedConfiguration(
        audited,
        audited.make_options(method_options),
        k_value,
        float_list(eps, "--eps"),
        float_list(lr, "--lr"),
        steps,
        batch,
        delta,
        accountant,
        clip,
        seed,
        privacy_unit,
        {
            "k": k,
            "epsilon": eps,
            "delta": delta,
            "accountant": accountant,
            "lr": lr,
            "steps": steps,
            "clip": clip,
            "seed": seed,
            "privacy_unit": privacy_unit,
        },
    )


def audited_configuration(train: str) -> AuditedConfiguration:
    """The configuration `--train` gives (each flag its default where it is not given)."""
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    single.command("--train", cls=PanelledCommand)(_configuration)
    try:
        parsed = typer.main.get_command(single).main(
            shlex.split(train), prog_name="pillar audit … --train", standalone_mode=False
        )
    except ClickError as err:
        raise UsageError(f"--train: {err.format_message()}", hint="--train=--help lists its flags") from err
    except ValueError as err:  # an unbalanced quote
        raise UsageError(f"--train: {err}") from err
    if not isinstance(parsed, AuditedConfiguration):  # --train=--help printed the flags
        raise typer.Exit(0)
    return parsed
