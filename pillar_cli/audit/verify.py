"""`pillar verify`: what a recipient checks of a file they were handed (a release, or an export of one), one check
at a time: its signature by the key they trust, its hashes and statement as every reader checks them, and its ε
recomputed from the statement's own DP event tree by dp-accounting, an accountant independent of the one that
calibrated the noise."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from pillar_cli.audit.ledger import TOLERANCE, recomputed_epsilon
from pillar_cli.artifacts.classifier import read_classifier
from pillar_cli.artifacts.statement import Statement
from pillar_cli.errors import PillarError
from pillar_cli.privacy import event_from_dict
from pillar_cli.release.exported import exported_format, read_export_metadata
from pillar_cli.release.signing import signature_path, signature_problem

OK, FAIL, SKIP = "ok", "FAIL", "skip"


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # OK, FAIL or SKIP
    detail: str


def verify_file(path: Path, public_key: Path | None = None, signature: Path | None = None) -> list[Check]:
    """The signature (with `public_key`), the hashes and statement, and the statement's ε recomputed."""
    if public_key is None:
        checks = [Check("signature", SKIP, f"not checked: no public key given (a signature, if any, is at "
                                          f"{signature or signature_path(path)})")]
    else:
        problem = signature_problem(path, public_key, signature)
        checks = [Check("signature", FAIL, problem) if problem else
                  Check("signature", OK, f"{signature or signature_path(path)} holds for {public_key}")]
    try:
        statement, what = _statement(path)
    except PillarError as err:
        return [*checks, Check("hashes and statement", FAIL, str(err)),
                Check("epsilon", SKIP, "not recomputed from a file that does not read")]
    return [*checks, Check("hashes and statement", OK, what), _epsilon(statement)]


def _statement(path: Path) -> tuple[Statement, str]:
    """The privacy statement of a release or an export, read with every check its readers make."""
    if exported_format(path) is not None:
        return (Statement.from_attrs(read_export_metadata(path)["privacy"]),
                "the export's metadata hash matches; its statement reads")
    return read_classifier(str(path)).privacy, "content and record hashes match; its statement reads"


def _epsilon(statement: Statement) -> Check:
    claimed, delta = statement.epsilon, statement.delta
    recomputed, how = recomputed_epsilon(event_from_dict(statement.event), delta)
    said = f"claimed ε = {claimed:.4g}; {how} gives ε = {recomputed:.4g} at δ = {delta:g}"
    if math.isinf(recomputed) or recomputed > claimed * (1 + TOLERANCE):
        return Check("epsilon", FAIL, f"{said}: the claim is below what its DP event spends")
    return Check("epsilon", OK, said)
