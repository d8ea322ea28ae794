"""pillar verify: check a release or an export as its recipient: signature, hashes and statement, ε
recomputed."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import ConfigOption, JsonOption, print_json, stdout
from pillar_cli.errors import ArtifactError, PrivacyError


@cli_errors
def verify(
    path: Path = typer.Argument(..., help="A release (pillar release) or an export of one (pillar export)."),
    key: Path | None = typer.Option(
        None, "--key", help="The signer's PUBLIC key (PEM): check the signature."
    ),
    signature: Path | None = typer.Option(
        None, "--signature", help="The signature bundle; default FILE.sig."
    ),
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Check a file you were handed, one line per check: its signature by the key you trust (--key), its
    hashes and privacy statement as every reader checks them, and its ε recomputed from the statement's DP
    event tree by dp-accounting (not the accountant that calibrated it). Exits non-zero if any check fails. A
    file edited and re-hashed passes the hashes, not the signature.

    Example: pillar verify classifier.h5 --key signer.pub.pem

    Example: pillar verify classifier.onnx --key signer.pub.pem --signature classifier.onnx.sig
    """
    from pillar_cli.audit.verify import (
        FAIL,
        verify_file,
    )  # dp-accounting and model-signing: to run, not for --help

    checks = verify_file(path, key, signature)
    if as_json:
        print_json({"file": str(path), "checks": [vars(check) for check in checks]})
    else:
        for check in checks:
            stdout.print(f"{check.status:<4}  {check.name}: {check.detail}", soft_wrap=True, markup=False)
    failed = [check.name for check in checks if check.status == FAIL]
    if failed:
        kind = PrivacyError if failed == ["epsilon"] else ArtifactError
        raise kind(f"{path} failed {len(failed)} of {len(checks)} checks: {', '.join(failed)}")
