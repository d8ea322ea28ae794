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
from pillar_cli.artifacts.model import ChosenBy, StoredRun
from pillar_cli.artifacts.schema import statement_summary
from pillar_cli.errors import PrivacyError
from pillar_cli.privacy import event_from_dict, spent_epsilon
from pillar_cli.privacy.count import NOISY, PUBLIC, RowCount

NEIGHBOURING = "add or remove one training row (its features and label)"
EXACT_SLACK = 1e-6  # an honest claim is the accountant's own number, written as is


def privacy_statement(model: Artifact, run: StoredRun, selected: str, cells: int) -> dict:
    """What the released head's ε is and covers; `selected`: how the model chose the run (methods.selection);
    `cells`: how many (method, k, ε) cells the model held."""
    ledger, public_choice = model.attrs["ledger"], model.attrs.get("public_choice") or {}
    delta = float(public_choice.get("delta_total", ledger["delta"]))
    mechanism = (model.attrs.get("mechanisms") or {}).get(run.key.method, "")
    rows = " and ".join(model.attrs.get("trained_on", ["private"]))
    trained = f"training this head on the {rows} split{'s' if ' and ' in rows else ''}"
    covers = [f"{trained} ({mechanism})" if mechanism else trained]
    count = _count_read(model, run)
    not_covered = ["the public data the projection was fitted on (public: not protected)"]
    if count is not None and count.noisy:
        covers.append(count.describe())
    elif count is not None:
        not_covered.append(count.describe())
    if rule := model.attrs.get("default_rule"):
        reads = "the released count ñ and ε" if count is not None and count.noisy else "the declared-public n and ε"
        covers.append(f"choosing its {', '.join(rule['fields'])}: a rule fixed in advance that reads no label, only "
                      f"{reads} ({rule['rule']})")
    if selected == ChosenBy.ACCOUNTED:
        covers.append("choosing its hyper-parameters: an accounted private selection (Papernot & Steinke) on the "
                      "private val split")
    elif selected == ChosenBy.VAL:
        not_covered.append("choosing its hyper-parameters on the private val split's labels (the paper's protocol)")
    if cells > 1:
        not_covered.append(f"choosing this cell among the model's {cells} (method, k, ε) cells, where that choice "
                           "looked at val or test accuracies")
    if public_choice.get("release"):
        covers.append(f"choosing the public data: {public_choice['note']}")
    elif public_choice:
        not_covered.append(public_choice["note"])
    statement = {
        "epsilon": run.epsilon_spent, "delta": delta, "epsilon_target": run.key.epsilon,
        "accountant": ledger["accountant"], "accountant_description": ledger.get("accountant_description", ""),
        "epsilon_is_upper_bound": bool(ledger.get("epsilon_is_upper_bound", True)), "clip": ledger["clip"],
        "neighbouring": NEIGHBOURING, "event": run.row.event, "steps": run.key.steps, "mechanism": mechanism,
        "covers": covers, "not_covered": not_covered, "noise": model.attrs.get("noise", {}),
        **({} if count is None else {"count": count.to_dict()}),
    }
    statement["summary"] = statement_summary(statement)
    return statement


def _count_read(model: Artifact, run: StoredRun) -> RowCount | None:
    """The row count the run's mechanisms and rule read (noisy, or declared public); None when it read none. A model
    that records no count read the exact n wherever it derived something from it: it cannot be released."""
    record = model.attrs.get("count")
    if not record:
        raise PrivacyError(f"{model.path} records no released count of its training rows: its sampling rates and "
                           "rules read the exact number, which a release would disclose",
                           hint="train it again with this version of pillar")
    if run.key.method not in record.get("read_by", ()):
        return None
    count = RowCount.from_dict(record)
    return count if count.kind in (NOISY, PUBLIC) else None


def require_exact_claim(statement: dict, where: str) -> None:
    """The statement's ε, recomputed in full from its event tree by its accountant at its δ (a second or two, paid
    where a file is released or exported rather than on every read, which checks a cheaper floor): a claim below it
    was edited after it was written."""
    event = event_from_dict(statement["event"])
    recomputed = spent_epsilon(statement["accountant"], event, float(statement["delta"]))
    if float(statement["epsilon"]) < recomputed * (1 - EXACT_SLACK):
        raise PrivacyError(f"{where} claims ε = {float(statement['epsilon']):.4g} for a DP event that spends "
                           f"ε = {recomputed:.4g} ({statement['accountant']}, δ = {float(statement['delta']):g}): its "
                           "ε was changed after it was written")
