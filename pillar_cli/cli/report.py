"""pillar report: the paper's comparison tables and figures from several evaluation artifacts."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.artifacts.files import STDOUT, replacing_together
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    check_outputs,
    print_json,
    print_table,
)
from pillar_cli.errors import UsageError
from pillar_cli.reporting.comparison import cells, compare, method_table
from pillar_cli.reporting.figures import (
    accuracy_vs_dimension,
    accuracy_vs_private_fraction,
    accuracy_vs_public_share,
    methods_by_dataset,
)
from pillar_cli.reporting.tables import markdown_table


@cli_errors
def report(
    evaluations: list[Path] = typer.Argument(
        ...,
        help="Evaluation artifacts from `pillar evaluate -o`; each is "
        "named by its file name (cifar10-sl.h5 → cifar10-sl).",
    ),
    methods_plot: Path | None = typer.Option(
        None, help="PNG: each method per evaluation and ε (Figure 5, Table 1)."
    ),
    fraction_plot: Path | None = typer.Option(
        None, help="PNG: accuracy vs fraction of private data (Figure 7)."
    ),
    public_plot: Path | None = typer.Option(
        None,
        help="PNG: accuracy vs the public rows the projection was "
        "fitted on, as % of the data set (Table 2(b)).",
    ),
    dimension_plot: Path | None = typer.Option(
        None,
        help="PNG: accuracy vs the feature dimension d (Example 1: "
        "PILLAR at fixed k against DP-SGD on all d).",
    ),
    markdown: Path | None = typer.Option(
        None, "--markdown", help="The method table as a Markdown report ('-': on standard output)."
    ),
    by_cell: bool = typer.Option(
        False,
        "--cells",
        help="Instead: every (method, k, ε) cell of every evaluation, "
        "with the ε it spent and whether the choice of its run is inside that ε.",
    ),
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """One row per method (the run best on val over k and configurations), one column per evaluation and ε.

    Example: pillar report cifar10-sl.h5 cifar100-sl.h5 --markdown table1.md --methods-plot table1.png

    Example: pillar report public-0.5.h5 public-1.h5 public-10.h5 --public-plot table2b.png

    Example: pillar report val.h5 accounted.h5 closed-form.h5 --cells

    Example: pillar report d64.h5 d256.h5 d1024.h5 d4096.h5 --dimension-plot example1.png
    """
    plots = {
        "methods": methods_plot,
        "fraction": fraction_plot,
        "public": public_plot,
        "dimension": dimension_plot,
    }
    to_stdout = _markdown_to_stdout(markdown, as_json)
    check_outputs(
        [*plots.values(), None if to_stdout else markdown], [str(e) for e in evaluations], force=force
    )
    loaded = [Evaluation.of(artifacts.read(e, "evaluation")) for e in evaluations]
    names = [e.stem for e in evaluations]
    if by_cell:
        return _print_cells(cells(loaded, names), as_json)
    rows, title = compare(loaded, names)
    table, columns = method_table(rows)
    _write_outputs(loaded, names, title, (table, columns), plots | {"markdown": markdown}, force)
    if to_stdout:
        return None
    if as_json:
        return print_json({"rows": rows, "table": table, "title": title})
    print_table(title, table, columns)


def _write_outputs(
    loaded: list[Evaluation],
    names: list[str],
    title: str,
    table: tuple[list[dict], list[str]],
    targets: dict[str, Path | None],
    force: bool,
) -> None:
    notes = sorted({note for e in loaded for note in e.notes})
    if targets["public"] is not None:
        _require_recorded(
            [e.public_share for e in loaded],
            names,
            "the share of the source their projection's rows were drawn at",
        )
    if targets["dimension"] is not None:
        _require_recorded(
            [e.feature_dim for e in loaded], names, "the dimension of the features their models read"
        )
    draw = {
        "methods": lambda tmp: methods_by_dataset(loaded, tmp, title, names),
        "fraction": lambda tmp: accuracy_vs_private_fraction(loaded, tmp, title),
        "public": lambda tmp: accuracy_vs_public_share(loaded, tmp, title),
        "dimension": lambda tmp: accuracy_vs_dimension(loaded, tmp, title),
        "markdown": lambda tmp: tmp.write_text(markdown_table(title, notes, *table)),
    }
    if targets["markdown"] == STDOUT:
        print(markdown_table(title, notes, *table), end="")
        targets = {**targets, "markdown": None}
    with replacing_together(list(targets.values()), force) as temps:
        for name, tmp in zip(targets, temps):
            if tmp is not None:
                draw[name](tmp)


def _markdown_to_stdout(markdown: Path | None, as_json: bool) -> bool:
    """Whether `--markdown -` asks for the Markdown table on standard output (in place of the table), which
    --json's document cannot share."""
    if markdown == STDOUT and as_json:
        raise UsageError("--markdown - and --json both write standard output: give --markdown a file")
    return markdown == STDOUT


def _require_recorded(values: list, names: list[str], what: str) -> None:
    """A plot over a recorded quantity needs every evaluation to record it."""
    missing = [name for name, value in zip(names, values) if value is None]
    if missing:
        raise UsageError(
            f"{', '.join(missing)} do not record {what}",
            hint="re-run fit-pca, train-private and evaluate with this version",
        )


def _print_cells(rows: list[dict], as_json: bool) -> None:
    if as_json:
        return print_json({"rows": rows})
    print_table(
        "test accuracy per cell; ε spent covers the choice of the run only where selection is 'in ε'",
        rows,
        [
            "evaluation",
            "method",
            "k",
            "epsilon",
            "epsilon_spent",
            "selection",
            "accuracy_mean",
            "accuracy_std",
            "seeds",
        ],
        {"epsilon_spent": ".3g", "accuracy_mean": ".4f", "accuracy_std": ".4f"},
    )
