"""Methods as the result tables name them (each method's declared family), in the registry's order (the
paper's Table 1 first, networks after the linear heads), and the row each reports per ε: the one best on val
over k and configurations."""

from __future__ import annotations

from pillar_cli.finetune.runs import METHODS as NETWORK_METHODS
from pillar_cli.methods.catalog import METHODS

ORDER = list(
    dict.fromkeys(
        [
            *(method.family_of(k) for method in METHODS.values() for k in (None, 1)),
            *(network.family for network in NETWORK_METHODS.values()),
        ]
    )
)


def family(row: dict) -> str:
    """The name a table gives an evaluation row's method (a method run at k = full may be another's
    family)."""
    if row["method"] in METHODS:
        return METHODS[row["method"]].family_of(None if row["k"] == "full" else row["k"])
    return NETWORK_METHODS[row["method"]].family if row["method"] in NETWORK_METHODS else row["method"]


def family_order(name: str) -> tuple[int, str]:
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


def table_order(key: tuple[str, float]) -> tuple[tuple[int, str], float]:
    """Sort key of a (method family, ε) pair: the paper's method order, then ε."""
    return family_order(key[0]), key[1]


def best_per_method(rows: list[dict]) -> dict[tuple[str, float], dict]:
    """Per (method family, ε): the row with the highest val accuracy."""
    best: dict[tuple[str, float], dict] = {}
    for row in rows:
        key = (family(row), row["epsilon"])
        if key not in best or row["val_accuracy"] > best[key]["val_accuracy"]:
            best[key] = row
    return best
