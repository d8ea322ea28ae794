"""The privacy statement of a released head: its ε and δ, how they were accounted, the DP event tree they are
recomputed from, and in words what ε covers and what it does not.

The released head's guarantee is its own run's: the other heads of the model are not released. What a user or the
model's selection did with private labels outside any DP mechanism (choosing hyper-parameters on val, choosing the
cell among several after looking at results, a non-private GSD) is not covered, and the statement says so. The
number of training rows is private too: a head that derives anything from it read the model's released noisy count
(privacy/count.py), whose release its event tree holds, or a count the user declared public, which it says.
"""

from __future__ import annotations

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.model import RunRecord
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.statement import Statement, statement_summary
from pillar_cli.errors import PrivacyError
from pillar_cli.privacy import event_from_dict
from pillar_cli.privacy.basis import ChosenBy, ProjectionRelease, PublicChoiceNote, StatementBasis
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.risk import risk_of


def privacy_statement(model: Artifact, run: RunRecord, selected: ChosenBy, cells: int) -> Statement:
    """What the released head's ε is and covers; `selected`: how the model chose the run (methods.selection);
    `cells`: how many (method, k, ε) cells the model held. Its guarantee makes its words from its `basis`
    (`Guarantee.words`), as every reader makes them again."""
    header = ModelRecord.of(model)
    ledger, choice, projection = header.ledger, header.public_choice, header.projection_release
    count = _count_read(model, header, run)
    rule = header.default_rule
    basis = StatementBasis(
        trained_on=header.trained_on, mechanism=header.mechanisms.get(run.key.method, ""),
        rule=None if rule is None else (tuple(rule["fields"]), rule["rule"]), selected=ChosenBy(selected),
        cells=cells, public_choice=None if choice is None else PublicChoiceNote(choice.released, choice.note),
        projection=None if projection is None else  # a DP-PCA: the projection read the private rows, inside ε
        ProjectionRelease(projection["mechanism"], projection["epsilon"], projection["delta"]),
        premises=header.premises)
    statement = {
        "epsilon": run.epsilon_spent, "delta": header.delta_total, "epsilon_target": run.key.epsilon,
        "accountant": ledger.accountant, "accountant_description": ledger.accountant_description,
        "epsilon_is_upper_bound": ledger.epsilon_is_upper_bound, "clip": ledger.clip,
        "neighbouring": header.unit.neighbouring, "unit": header.unit.to_attrs(), "event": run.event,
        "steps": run.key.steps, "mechanism": basis.mechanism, "basis": basis.to_attrs(), "noise": header.noise,
        **({} if count is None else {"count": count.to_dict()}),
        **({} if header.risk_target is None else {"risk_target": header.risk_target.to_attrs()}),
    }
    statement["risk"] = risk_of(event_from_dict(run.event)).to_attrs()  # the whole tree's: count and releases in it
    guarantee = Guarantee(header.unit, count, ledger.accountant, header.delta_total)
    statement["covers"], statement["not_covered"], rests_on = guarantee.words(basis)
    if rests_on:
        statement["rests_on"] = rests_on
    statement["summary"] = statement_summary(statement)
    return Statement.from_attrs(statement)


def _count_read(model: Artifact, header: ModelRecord, run: RunRecord) -> RowCount | None:
    """The row count the run's mechanisms and rule read (noisy, or declared public); None when it read none. A model
    that records no count read the exact n wherever it derived something from it: it cannot be released."""
    record = header.count
    if not record:
        raise PrivacyError(f"{model.path} records no released count of its training rows: its sampling rates and "
                           "rules read the exact number, which a release would disclose",
                           hint="train it again with this version of pillar")
    if run.key.method not in record.get("read_by", ()):
        return None
    count = RowCount.from_dict(record)
    return count if count.released else None

