"""Methods against each other across evaluations (datasets, backbones, fractions of the private or public
data): per evaluation and ε, the best of each method as selected on val — one row per method, as the paper's
Table 1. Evaluations with different δ or accountants cannot share a table or figure. And every cell of several
evaluations side by side, with the ε each spent and whether the choice of its run is in it."""

from __future__ import annotations

from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.errors import UsageError
from pillar_cli.privacy.basis import ChosenBy
from pillar_cli.randomness import NOT_PRIVATE_NOTE
from pillar_cli.reporting.families import best_per_method, family_order, table_order
from pillar_cli.reporting.tables import mean_and_std


def compare(evaluations: list[Evaluation], names: list[str]) -> tuple[list[dict], str]:
    """(rows, title) from evaluations named `names`: one row per evaluation, method, ε."""
    ledgers = {(e.ledger.delta, e.ledger.accountant) for e in evaluations}
    if len(ledgers) > 1:
        raise UsageError("the evaluations use different δ or accountants; one figure cannot compare them")
    delta, accountant = ledgers.pop()
    title = (
        f"{'; '.join(e.private_rows for e in evaluations)}; δ={delta:g}, {accountant}; "
        f"{'; '.join(sorted({n for e in evaluations for n in e.notes if n.startswith('seeds')}))}"
    )
    overlapping = [e.dataset for e in evaluations if e.overlap_rows]
    if overlapping:
        title += f" [OVERLAP: {', '.join(map(str, overlapping))} evaluated on training or validation rows]"
    if any(NOT_PRIVATE_NOTE in e.notes for e in evaluations):
        title += f" [{NOT_PRIVATE_NOTE}]"
    rows = [
        {
            "evaluation": name,
            "dataset": e.dataset,
            "private_fraction": e.private_fraction,
            "public_rows": (e.public or {}).get("rows"),
            "method": family,
            "epsilon": eps,
            "k": row["k"],
            "accuracy_mean": row["accuracy_mean"],
            "accuracy_std": row["accuracy_std"],
        }
        for name, e in zip(names, evaluations)
        for (family, eps), row in sorted(
            best_per_method(e.rows).items(), key=lambda item: table_order(item[0])
        )
    ]
    return rows, title


def method_table(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """The rows of `compare` pivoted as the paper's Table 1: one row per method, one column per evaluation and
    ε, each cell the test accuracy (mean ± std over seeds) of the run best on val, with its k."""
    columns = list(dict.fromkeys(f"{r['evaluation']}, ε = {r['epsilon']:g}" for r in rows))
    table: dict[str, dict] = {}
    for row in rows:
        cell = mean_and_std(row, "accuracy") + f" (k {row['k']})"
        table.setdefault(row["method"], {"method": row["method"]})[
            f"{row['evaluation']}, ε = {row['epsilon']:g}"
        ] = cell
    ordered = [table[name] for name in sorted(table, key=family_order)]
    return [{column: line.get(column, "—") for column in ["method", *columns]} for line in ordered], [
        "method",
        *columns,
    ]


def cells(evaluations: list[Evaluation], names: list[str]) -> list[dict]:
    """Every (method, k, ε) cell of every evaluation (named by `names`): its test accuracy over seeds, the ε
    its runs spent, and what chose its run (an accounted selection inside ε, val labels outside it, or
    nothing)."""
    return [
        {
            "evaluation": name,
            "method": row["method"],
            "k": row["k"],
            "epsilon": row["epsilon"],
            "epsilon_spent": row["epsilon_spent"],
            "selection": row.get("selected", ChosenBy.VAL),
            "accuracy_mean": row["accuracy_mean"],
            "accuracy_std": row["accuracy_std"],
            "seeds": row["seeds"],
        }
        for name, evaluation in zip(names, evaluations)
        for row in evaluation.rows
    ]
