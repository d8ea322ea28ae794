"""PILLAR against DP-SGD across evaluations (datasets, or fractions of the private data): per evaluation and ε, the
best of each family as selected on val. Evaluations with different δ or accountants cannot share a figure. And
every cell of several evaluations side by side, with the ε each spent and whether the choice of its run is in it."""

from __future__ import annotations

from pillar_cli.errors import UsageError
from pillar_cli.reporting.figures import best_per_baseline


def compare(evaluations: list[dict]) -> tuple[list[dict], str]:
    """(rows, title) from the attributes of evaluation artifacts."""
    ledgers = {(e["ledger"]["delta"], e["ledger"]["accountant"]) for e in evaluations}
    if len(ledgers) > 1:
        raise UsageError("the evaluations use different δ or accountants; one figure cannot compare them")
    delta, accountant = ledgers.pop()
    title = (f"n_private={','.join(str(e['n_private']) for e in evaluations)}; δ={delta:g}, {accountant}; "
             f"{'; '.join(sorted({n for e in evaluations for n in e['notes'] if n.startswith('seeds')}))}")
    overlapping = [e["dataset"] for e in evaluations if e.get("overlap_rows")]
    if overlapping:
        title += f" [OVERLAP: {', '.join(map(str, overlapping))} evaluated on training or validation rows]"
    rows = [{"dataset": e["dataset"], "private_fraction": e["private_fraction"], "family": family, "epsilon": eps,
             "k": row["k"], "accuracy_mean": row["accuracy_mean"], "accuracy_std": row["accuracy_std"]}
            for e in evaluations for (family, eps), row in sorted(best_per_baseline(e["rows"]).items())]
    return rows, title


def cells(evaluations: list[dict], names: list[str]) -> list[dict]:
    """Every (method, k, ε) cell of every evaluation (named by `names`): its test accuracy over seeds, the ε its
    runs spent, and what chose its run (an accounted selection inside ε, val labels outside it, or nothing)."""
    return [{"evaluation": name, "method": row["method"], "k": row["k"], "epsilon": row["epsilon"],
             "epsilon_spent": row["epsilon_spent"], "selection": row.get("selected", "on val, outside ε"),
             "accuracy_mean": row["accuracy_mean"], "accuracy_std": row["accuracy_std"], "seeds": row["seeds"]}
            for name, evaluation in zip(names, evaluations) for row in evaluation["rows"]]
