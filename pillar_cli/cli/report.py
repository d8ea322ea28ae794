"""pillar report: the paper's comparison figures from several evaluation artifacts."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.files import replacing
from pillar_cli.cli.common import ForceOption, JsonOption, check_output, cli_errors, print_json, print_table
from pillar_cli.reporting.comparison import cells, compare
from pillar_cli.reporting.figures import accuracy_vs_private_fraction, methods_by_dataset


@cli_errors
def report(
    evaluations: list[Path] = typer.Argument(..., help="Evaluation artifacts from `pillar evaluate -o`."),
    methods_plot: Optional[Path] = typer.Option(None, help="PNG: PILLAR vs DP-SGD per dataset and ε (Figure 5)."),
    fraction_plot: Optional[Path] = typer.Option(None, help="PNG: accuracy vs fraction of private data (Figure 7)."),
    by_cell: bool = typer.Option(False, "--cells", help="Instead: every (method, k, ε) cell of every evaluation, "
                                 "with the ε it spent and whether the choice of its run is inside that ε."),
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Compare PILLAR (best k, selected on val) with DP-SGD across datasets or private-data fractions.

    Example: pillar report cifar10.h5 cifar100.h5 --methods-plot fig5.png

    Example: pillar report val.h5 accounted.h5 closed-form.h5 --cells
    """
    for output in (methods_plot, fraction_plot):
        if output is not None:
            check_output(output, [str(e) for e in evaluations], force=force)
    loaded = [artifacts.read(e, "evaluation").attrs for e in evaluations]
    if by_cell:
        return _print_cells(cells(loaded, [e.stem for e in evaluations]), as_json)
    rows, title = compare(loaded)
    for target, draw in ((methods_plot, methods_by_dataset), (fraction_plot, accuracy_vs_private_fraction)):
        if target is not None:
            with replacing(target, force) as tmp:
                draw(loaded, tmp, title)
    if as_json:
        return print_json({"rows": rows, "title": title})
    print_table(title, rows, ["dataset", "private_fraction", "family", "epsilon", "k", "accuracy_mean", "accuracy_std"],
                {"accuracy_mean": ".4f", "accuracy_std": ".4f"})


def _print_cells(rows: list[dict], as_json: bool) -> None:
    if as_json:
        return print_json({"rows": rows})
    print_table("test accuracy per cell; ε spent covers the choice of the run only where selection is 'in ε'", rows,
                ["evaluation", "method", "k", "epsilon", "epsilon_spent", "selection", "accuracy_mean", "accuracy_std",
                 "seeds"], {"epsilon_spent": ".3g", "accuracy_mean": ".4f", "accuracy_std": ".4f"})
