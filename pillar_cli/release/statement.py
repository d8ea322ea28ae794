"""The privacy statement of a released head: its ε and δ, how they were accounted, the DP event tree they are
recomputed from, and in words what ε covers and what it does not.

The released head's guarantee is its own run's: the other heads of the model are not released. What a user or the
model's selection did with private labels outside any DP mechanism (choosing hyper-parameters on val, choosing the
cell among several after looking at results, a non-private GSD) is not covered, and the statement says so.
"""

from __future__ import annotations

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts.model import StoredRun

NEIGHBOURING = "add or remove one training row (its features and label)"


def privacy_statement(model: Artifact, run: StoredRun, selected: str, cells: int) -> dict:
    """What the released head's ε is and covers; `selected`: how the model chose the run (methods.selection);
    `cells`: how many (method, k, ε) cells the model held."""
    ledger, public_choice = model.attrs["ledger"], model.attrs.get("public_choice") or {}
    delta = float(public_choice.get("delta_total", ledger["delta"]))
    mechanism = (model.attrs.get("mechanisms") or {}).get(run.key.method, "")
    rows = " and ".join(model.attrs.get("trained_on", ["private"]))
    trained = f"training this head on the {rows} split{'s' if ' and ' in rows else ''}"
    covers = [f"{trained} ({mechanism})" if mechanism else trained]
    if rule := model.attrs.get("default_rule"):
        covers.append(f"choosing its {', '.join(rule['fields'])}: a rule fixed in advance that reads no label "
                      f"({rule['rule']})")
    not_covered = ["the public data the projection was fitted on (public: not protected)"]
    if selected == "in ε":
        covers.append("choosing its hyper-parameters: an accounted private selection (Papernot & Steinke) on the "
                      "private val split")
    elif selected == "on val, outside ε":
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
    }
    statement["summary"] = (f"(ε = {run.epsilon_spent:.4g}, δ = {delta:g})-DP ({ledger['accountant']}) for "
                            f"{NEIGHBOURING}; covers: {'; '.join(covers)}; does not cover: {'; '.join(not_covered)}")
    return statement
