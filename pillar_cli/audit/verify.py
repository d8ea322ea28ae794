"""`pillar verify`: what a recipient checks of a file they were handed (a release, or an export of one), one
check at a time: its signature by the key they trust, its hashes and statement as every reader checks them (an
export's hashes cover its weights; an hf folder's card and config.json are made again from its statement and
compared), and its ε recomputed from the statement's own DP event tree by dp-accounting, an accountant
independent of the one that calibrated the noise.

Hashes prove a file intact against accidents; anyone who edits it can recompute them. So verify says in words
whether the file is signed: without a signature nothing proves who wrote it, and a signature lying beside the
file that no key was given to check fails, as a signature nobody checked proves nothing."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from pillar_cli.artifacts.classifier_file import read_classifier
from pillar_cli.artifacts.statement import Statement
from pillar_cli.audit.ledger import TOLERANCE, recomputed_epsilon
from pillar_cli.errors import ArtifactError, PillarError
from pillar_cli.privacy.risk import attribute_accuracy, risk_of, risk_words
from pillar_cli.release.card import hf_folder_problem
from pillar_cli.release.exported import exported_format, read_export_metadata
from pillar_cli.release.signing import signature_path, signature_problem

OK, FAIL, SKIP = "ok", "FAIL", "skip"
RISK_TOLERANCE = 1e-4  # a recorded TPR or advantage below the one made again by more than this was edited


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK, FAIL or SKIP
    detail: str


def verify_file(path: Path, public_key: Path | None = None, signature: Path | None = None) -> list[Check]:
    """The signature (with `public_key`), the hashes and statement, and the statement's ε recomputed."""
    checks = [_signature(path, public_key, signature)]
    try:
        statement, what = _statement(path)
    except PillarError as err:
        return [
            *checks,
            Check("hashes and statement", FAIL, str(err)),
            Check("epsilon", SKIP, "not recomputed from a file that does not read"),
            Check("risk", SKIP, "not made again from a file that does not read"),
        ]
    return [*checks, Check("hashes and statement", OK, what), _epsilon(statement), _risk(statement)]


def _signature(path: Path, public_key: Path | None, signature: Path | None) -> Check:
    bundle = signature or signature_path(path)
    if public_key is None:
        if bundle.exists():
            return Check(
                "signature",
                FAIL,
                f"signed ({bundle}) but not checked: pass --key with the signer's public "
                "key (a signature nobody checks proves nothing)",
            )
        return Check(
            "signature",
            SKIP,
            "not signed: nothing proves who wrote this file (its hashes can be "
            "recomputed by anyone who edits it)",
        )
    problem = signature_problem(path, public_key, signature)
    return (
        Check("signature", FAIL, problem)
        if problem
        else Check("signature", OK, f"{bundle} holds for {public_key}")
    )


def _statement(path: Path) -> tuple[Statement, str]:
    """The privacy statement of a release or an export, read with every check its readers make."""
    fmt = exported_format(path)
    if fmt is None:
        return read_classifier(str(path)).privacy, "content and record hashes match; its statement reads"
    carried = read_export_metadata(path)
    if fmt == "hf" and (problem := hf_folder_problem(path, carried)) is not None:
        raise ArtifactError(f"{path}: {problem}")
    covered = "its weights, card and config.json" if fmt == "hf" else "its weights and graph"
    return Statement.from_attrs(
        carried["privacy"]
    ), f"the export's hashes match ({covered}); its statement reads"


def _risk(statement: Statement) -> Check:
    """The statement's risk (TPR at each quoted FPR, the advantage, and the attribute risk at the prevalence
    it states one for) made again from its event tree."""
    recomputed = risk_of(statement.event).to_attrs()
    if attribute := (statement.risk or {}).get("attribute"):
        recomputed["attribute"] = {
            "prior": attribute["prior"],
            "accuracy": attribute_accuracy(statement.event, attribute["prior"]),
        }
    sentence = risk_words(recomputed["tpr_at_fpr"], recomputed["advantage"], statement.unit.noun)
    if statement.risk is None:
        return Check("risk", SKIP, f"the statement records none; from its event tree: {sentence}")
    stated = [
        statement.risk["advantage"],
        *(statement.risk["tpr_at_fpr"].get(f) for f in recomputed["tpr_at_fpr"]),
        *([statement.risk["attribute"]["accuracy"]] if attribute else []),
    ]
    made = [
        recomputed["advantage"],
        *recomputed["tpr_at_fpr"].values(),
        *([recomputed["attribute"]["accuracy"]] if attribute else []),
    ]
    if any(value is None or value < again - RISK_TOLERANCE for value, again in zip(stated, made)):
        return Check("risk", FAIL, f"the statement claims less risk than its event tree allows: {sentence}")
    if (target := statement.risk_target) is not None:  # ε was calibrated to it: the tree must meet it
        reached = risk_of(statement.event).tpr_at(target.at_fpr)
        met = f"TPR {reached:.4g} at FPR {target.at_fpr:g} against its target {target.max_tpr:g}"
        if reached > target.max_tpr + RISK_TOLERANCE:
            return Check("risk", FAIL, f"its event tree does not meet the risk target it states: {met}")
        sentence += f"; {met}"
    return Check("risk", OK, sentence)


def _epsilon(statement: Statement) -> Check:
    claimed, delta = statement.epsilon, statement.delta
    recomputed, how = recomputed_epsilon(statement.event, delta)
    said = f"claimed ε = {claimed:.4g}; {how} gives ε = {recomputed:.4g} at δ = {delta:g}"
    if math.isinf(recomputed) or recomputed > claimed * (1 + TOLERANCE):
        return Check("epsilon", FAIL, f"{said}: the claim is below what its DP event spends")
    return Check("epsilon", OK, said)
