"""What a command that uses a release says of who wrote it: signed and verified, signed but not verified, or
not signed (release/signing.py), checked before any work and said in one line on stderr after it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from pillar_cli.cli.common import stderr

KeyOption = typer.Option(
    None,
    "--key",
    help="The signer's PUBLIC key (PEM): check the file's signature before using "
    "it (without it, the file is said to be unsigned or unverified).",
)


def checked_trust(path: Path, key: Path | None) -> Callable[[], None]:
    """Whether the file is signed and its signature verified, checked before any work (a signature that does
    not hold for `key` stops the command); returns what says so in one line on stderr, once the work is
    done."""
    from pillar_cli.release.signing import trust_of

    line = trust_of(path, key).line
    return lambda: stderr.print(line, soft_wrap=True, markup=False, highlight=False)
