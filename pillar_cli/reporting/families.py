"""Methods as the paper's tables name them, and the row each reports per ε: the one best on val over k and
configurations. PILLAR at k = full is DP-SGD on all features, so it is reported as DP-SGD."""

from __future__ import annotations

# the paper's Table 1 order first; the toolkit's other methods after it
FAMILIES = {"dpsgd": "DP-SGD", "jl": "JL", "adadps": "AdaDPS", "gep": "GEP", "pillar": "PILLAR",
            "public-lda": "public-LDA", "dp-ls": "DP-LS", "noisy-sgd": "noisy-SGD", "finetune": "fine-tune",
            "scratch": "from scratch", "pretrain": "public pre-training"}
ORDER = list(FAMILIES.values())


def family(row: dict) -> str:
    """The name a table gives an evaluation row's method."""
    if row["method"] == "pillar" and row["k"] == "full":
        return "DP-SGD"
    return FAMILIES.get(row["method"], row["method"])


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
