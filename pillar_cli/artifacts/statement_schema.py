"""What a release's privacy statement must hold to be read: its guarantee record, fields of their types that
say what the guarantee says, a δ below 1/ñ of the count it read, an ε no smaller than its DP event spends, a
risk record in [0, 1], and a summary that says what its numbers say. Classifier artifacts and exports
(artifacts/schema.py) both check their statement here.
"""

from __future__ import annotations

import json

from pillar_cli.artifacts.statement import SAID, said_of, statement_summary, words_problem
from pillar_cli.errors import PillarError
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.risk_target import RiskTarget
from pillar_cli.version import __version__

STATEMENT: dict[str, type | tuple[type, ...]] = {
    "epsilon": (int, float),
    "delta": (int, float),
    "epsilon_target": (int, float),
    "accountant": str,
    "clip": (int, float),
    "neighbouring": str,
    "event": dict,
    "steps": int,
    "covers": list,
    "not_covered": list,
    "summary": str,
    "guarantee": dict,
}  # a release's privacy statement


def claims_that_fail(claims: list[tuple[str, float]], accountant: str, delta: float) -> str | None:
    """A claimed ε below what its DP event spends (privacy/claims.py): a file edited after it was written."""
    from pillar_cli.privacy import event_from_dict, get_accountant
    from pillar_cli.privacy.claims import claim_problem

    for text, claimed in sorted(set(claims)):
        try:
            event = event_from_dict(json.loads(text))
            get_accountant(accountant)
        except (ValueError, TypeError, PillarError):
            return "has a malformed DP event or an unknown accountant"
        if problem := claim_problem(accountant, event, delta, claimed):
            return problem
    return None


def statement_problem(statement: dict) -> str | None:
    """A statement whose fields are not of their types, whose δ is not below 1/ñ of the count it read, or
    whose ε is below what its DP event spends (privacy/claims.py)."""
    if "guarantee" not in statement:
        return (
            f"has a privacy statement written before a statement held its guarantee as one record (pillar "
            f"{__version__} reads only those): release it again from a model trained with this version"
        )
    wrong = [
        key
        for key, kind in STATEMENT.items()
        if not isinstance(statement.get(key), kind) or isinstance(statement.get(key), bool)
    ]
    if wrong or not all(
        isinstance(text, str) for key in ("covers", "not_covered") for text in statement[key]
    ):
        return (
            f"has a privacy statement whose {', '.join(wrong) or 'covers'} "
            f"{'is' if len(wrong) < 2 else 'are'} not of its type"
        )
    if (target := statement.get("risk_target")) is not None and not RiskTarget.readable(target):
        return "has a privacy statement whose risk_target is not a TPR above an FPR, both in (0, 1)"
    if "risk" in statement and not risk_record(statement["risk"]):
        return "has a privacy statement whose risk is not a record of TPRs in [0, 1] and an advantage"
    guarantee = guarantee_of(statement["guarantee"])
    if guarantee is None:
        return (
            "has a privacy statement whose guarantee is not one pillar reads (a unit, relation, count or "
            "release)"
        )
    if {key: statement.get(key) for key in SAID if key in statement or key == "count"} != {
        key: said_of(guarantee).get(key) for key in SAID
    }:
        return "has a privacy statement whose δ, accountant, unit or count is not what its guarantee says"
    rows = (statement.get("count") or {}).get("value")
    if not 0 < statement["delta"] < (1 / rows if isinstance(rows, (int, float)) and rows >= 1 else 1):
        return f"states δ = {statement['delta']:g}, not below 1/ñ of the count of training rows it read"
    try:
        claim = [(json.dumps(statement["event"]), float(statement["epsilon"]))]
        if problem := claims_that_fail(claim, statement["accountant"], float(statement["delta"])):
            return problem
    except (KeyError, TypeError, ValueError):
        return "has a privacy statement whose DP event is not one pillar reads"
    if statement["summary"] != statement_summary(statement):
        return "has a privacy summary that does not say what its numbers and lists say"
    return words_problem(statement)


def risk_record(risk: object) -> bool:
    """A statement's risk as privacy/risk.py writes it: the TPR at each quoted FPR and the advantage, in [0,
    1]."""
    if not isinstance(risk, dict) or not isinstance(risk.get("tpr_at_fpr"), dict):
        return False
    attribute = risk.get("attribute", {"prior": 0.5, "accuracy": 0.5})
    if (
        not isinstance(attribute, dict)
        or set(attribute) != {"prior", "accuracy"}
        or attribute["prior"] in (0, 1)
    ):
        return False
    numbers = [*risk["tpr_at_fpr"].values(), risk.get("advantage"), *attribute.values()]
    return all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1 for v in numbers
    ) and set(risk["tpr_at_fpr"]) >= {"0.001", "0.01", "0.1"}


def guarantee_of(record: object) -> Guarantee | None:
    """The guarantee a file records, or None where pillar does not read it."""
    try:
        return Guarantee.from_attrs(record)  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError, AttributeError, PillarError):
        return None
