"""The privacy statement of a released head: its ε and δ, how they were accounted, the DP event tree they are
recomputed from, and in words what ε covers and what it does not.

The released head's guarantee is its own run's: the other heads of the model are not released. What a user or
the model's selection did with private labels outside any DP mechanism (choosing hyper-parameters on val,
choosing the cell among several after looking at results, a non-private GSD) is not covered, and the statement
says so. The number of training rows is private too: a head that derives anything from it read the model's
released noisy count (privacy/count.py), whose release its event tree holds, or a count the user declared
public, which it says.
"""

from __future__ import annotations

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.model import RunRecord
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.statement import Statement, make_statement
from pillar_cli.privacy import event_from_dict
from pillar_cli.privacy.basis import ChosenBy, StatementBasis


def privacy_statement(
    model: Artifact, run: RunRecord, selected: ChosenBy, cells: int, prior: float | None = None
) -> Statement:
    """What the released head's ε is and covers; `selected`: how the model chose the run (methods.selection);
    `cells`: how many (method, k, ε) cells the model held; `prior`: a prevalence to state the attribute risk
    at. It copies the model's guarantee for this head (the
    count only where the head read it) and makes its words from it (`Guarantee.words`), as every reader makes
    them again."""
    header = ModelRecord.of(model)
    rule, choice = header.default_rule, header.public_choice
    basis = StatementBasis(
        trained_on=header.trained_on,
        mechanism=header.mechanisms.get(run.key.method, ""),
        rule=None if rule is None else (tuple(rule["fields"]), rule["rule"]),
        selected=ChosenBy(selected),
        cells=cells,
        public_choice=None if choice is None or choice.released else choice.note,
        premises=header.premises,
        own_public=_own_public_rows(header.public_data),
    )
    return make_statement(
        guarantee=header.guarantee.for_head(run.key.method in header.count_read_by),
        event=event_from_dict(run.event),
        epsilon=run.epsilon_spent,
        epsilon_target=run.key.epsilon,
        steps=run.key.steps,
        clip=header.ledger.clip,
        basis=basis,
        noise=header.noise,
        risk_target=header.risk_target,
        prior=prior,
    )


def _own_public_rows(public_data: dict | None) -> int | None:
    """How many records of the private rows' own source the projection was fitted on (None: none, or not
    known)."""
    return (
        public_data["rows"]
        if public_data and public_data.get("own_source") and public_data.get("rows")
        else None
    )
